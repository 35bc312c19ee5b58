package pgjournal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/arbiterhq/arbiter/store"
)

// queries are the statements of one schema, built once by Open so that
// every connection prepares and caches the same texts.
type queries struct {
	insertTurn, insertLLM, insertTool string
	getTurn, getLLM, getTool          string
	costPerDay, conversationTurns     string
	// ListTurns builds its query from listTurns, the filters and
	// listProvider (which ends before the provider's placeholder and its
	// closing parenthesis); listLLM and listTool read the calls of a page.
	listTurns, listProvider, listLLM, listTool string
	// pruneTurns deletes a batch of the oldest turns past retention.
	pruneTurns string
}

func newQueries(quoted string) queries {
	q := queries{
		insertTurn: `INSERT INTO {schema}.turns
			(turn_id, tenant, chat, user_id, route, status, started_at, duration_ms, trace)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		insertLLM: `INSERT INTO {schema}.llm_calls
			(turn_id, seq, tenant, provider, model, operation, strategy, attempt, input_tokens, cached_tokens,
			 output_tokens, cost_usd, duration_ms, status, error, note, at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)`,
		insertTool: `INSERT INTO {schema}.tool_calls
			(turn_id, seq, tenant, tool, idempotency_key, status, error, duration_ms, at,
			 server, remote_tool, args_hash, risk, scope, confirmation_id)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`,
		getTurn: `SELECT chat, user_id, route, status, started_at, duration_ms, trace
			FROM {schema}.turns WHERE turn_id = $1 AND tenant = $2`,
		getLLM: `SELECT provider, model, operation, strategy, attempt, input_tokens, cached_tokens, output_tokens,
			cost_usd, duration_ms, status, error, note, at
			FROM {schema}.llm_calls WHERE turn_id = $1 AND tenant = $2 ORDER BY seq`,
		getTool: `SELECT ` + toolCallColumns + `
			FROM {schema}.tool_calls WHERE turn_id = $1 AND tenant = $2 ORDER BY seq`,
		costPerDay: `SELECT date_trunc('day', at, 'UTC') AS day, sum(cost_usd), count(*)
			FROM {schema}.llm_calls WHERE tenant = $1 AND at >= $2 AND at < $3
			GROUP BY day ORDER BY day`,
		conversationTurns: `SELECT turn_id, route, status, started_at, duration_ms
			FROM {schema}.turns WHERE tenant = $1 AND chat = $2 AND user_id = $3
			ORDER BY started_at DESC LIMIT $4`,
		listTurns: `SELECT t.turn_id, t.chat, t.user_id, t.route, t.status, t.started_at, t.duration_ms,
				COALESCE(t.trace->'cost_unknown' = 'true'::jsonb, false)
			FROM {schema}.turns t WHERE t.tenant = $1`,
		listProvider: ` AND EXISTS (SELECT 1 FROM {schema}.llm_calls c
			WHERE c.turn_id = t.turn_id AND c.provider = `,
		listLLM: `SELECT turn_id, provider, model, operation, strategy, attempt, input_tokens, cached_tokens,
			output_tokens, cost_usd, duration_ms, status, error, note, at
			FROM {schema}.llm_calls WHERE turn_id = ANY($1) AND tenant = $2 ORDER BY turn_id, seq`,
		listTool: `SELECT turn_id, ` + toolCallColumns + `
			FROM {schema}.tool_calls WHERE turn_id = ANY($1) AND tenant = $2 ORDER BY turn_id, seq`,
		pruneTurns: `DELETE FROM {schema}.turns WHERE turn_id IN
			(SELECT turn_id FROM {schema}.turns WHERE started_at < $1 LIMIT $2)`,
	}
	for _, p := range []*string{&q.insertTurn, &q.insertLLM, &q.insertTool, &q.getTurn, &q.getLLM,
		&q.getTool, &q.costPerDay, &q.conversationTurns, &q.listTurns, &q.listProvider, &q.listLLM, &q.listTool, &q.pruneTurns} {
		*p = withSchema(*p, quoted)
	}
	return q
}

// AppendTurn writes the turn, its model calls and its tool calls (each
// call's position in its slice is kept as seq) and returns once they are
// committed. The rows go in one batch, one round trip on a connection
// that has run AppendTurn before, which the server runs as one implicit
// transaction: when any row fails, none is written. Concurrent appends
// share a batch (see group.go): whatever queued while the previous batch
// was on its way goes in the next, and a batch in which any row fails is
// retried one turn per batch, so one turn's failure is its own. A turn id
// journaled before is refused with ErrDuplicateTurn, leaving the earlier
// record intact. An invalid JSON Trace is refused; an empty one is stored
// as NULL. Safe for concurrent use.
func (j *Journal) AppendTurn(ctx context.Context, rec store.TurnRecord) error {
	if j.closed.Load() {
		return j.fail("append turn "+rec.TurnID, errClosed)
	}
	if err := ctx.Err(); err != nil {
		return j.fail("append turn "+rec.TurnID, err)
	}
	return j.group.append(ctx, j, &rec)
}

// appendAlone writes one turn in a batch of its own.
func (j *Journal) appendAlone(ctx context.Context, rec *store.TurnRecord) error {
	var b pgx.Batch
	j.queueTurn(&b, rec)
	br := j.pool.SendBatch(ctx, &b)
	for i := range b.QueuedQueries {
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			return j.fail("append turn "+rec.TurnID, rowError(*rec, i, err))
		}
	}
	if err := br.Close(); err != nil {
		return j.fail("append turn "+rec.TurnID, err)
	}
	return nil
}

// appendBatch writes several turns in one batch, all or none.
func (j *Journal) appendBatch(ctx context.Context, recs []*store.TurnRecord) error {
	var b pgx.Batch
	for _, rec := range recs {
		j.queueTurn(&b, rec)
	}
	br := j.pool.SendBatch(ctx, &b)
	for range b.QueuedQueries {
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			return err
		}
	}
	return br.Close()
}

// queueTurn adds the statements writing rec to b.
func (j *Journal) queueTurn(b *pgx.Batch, rec *store.TurnRecord) {
	id, tenant := clean(rec.TurnID), clean(rec.Tenant)
	var trace any // untyped nil is NULL
	if len(rec.Trace) > 0 {
		trace = cleanJSON(rec.Trace)
	}
	b.Queue(j.q.insertTurn, id, tenant, clean(rec.Chat), clean(rec.UserID), clean(rec.Route), clean(rec.Status),
		rec.StartedAt, rec.DurationMS, trace)
	for i := range rec.LLMCalls {
		c := &rec.LLMCalls[i]
		b.Queue(j.q.insertLLM, id, i, tenant, clean(c.Provider), clean(c.Model), clean(c.Operation),
			clean(c.Strategy), clean(c.Attempt), c.InputTokens, c.CachedInputTokens, c.OutputTokens, c.CostUSD,
			c.DurationMS, clean(c.Status), clean(c.Error), clean(c.Note), c.At)
	}
	for i := range rec.ToolCalls {
		c := &rec.ToolCalls[i]
		b.Queue(j.q.insertTool, id, i, tenant, clean(c.Tool), clean(c.IdempotencyKey), clean(c.Status),
			clean(c.Error), c.DurationMS, c.At, clean(c.Server), clean(c.RemoteTool), clean(c.ArgsHash),
			clean(c.Risk), clean(c.Scope), clean(c.ConfirmationID))
	}
}

// rowError names the row of rec that the i-th queued statement wrote when
// the server refused that row; other errors (a lost connection, ctx) are
// the batch's, not the row's.
func rowError(rec store.TurnRecord, i int, err error) error {
	var pe *pgconn.PgError
	switch {
	case !errors.As(err, &pe):
		return err
	case i == 0 && pe.Code == "23505": // unique_violation: the turn id is the only unique key
		return fmt.Errorf("%w: %w", ErrDuplicateTurn, err)
	case i == 0:
		return fmt.Errorf("turn row: %w", err)
	case i <= len(rec.LLMCalls):
		return fmt.Errorf("llm call %d: %w", i-1, err)
	default:
		return fmt.Errorf("tool call %d: %w", i-1-len(rec.LLMCalls), err)
	}
}

// GetTurn returns the turn of tenant with id turnID, its calls in the order
// they were appended, or an error wrapping store.ErrNotFound, also when the
// turn belongs to another tenant. The three reads go in one batch, one
// round trip. Times come back in UTC, truncated to microseconds; the trace
// comes back as PostgreSQL re-encodes jsonb (same value, keys reordered,
// whitespace dropped). Safe for concurrent use.
func (j *Journal) GetTurn(ctx context.Context, tenant, turnID string) (store.TurnRecord, error) {
	if j.closed.Load() {
		return store.TurnRecord{}, j.fail("get turn "+turnID, errClosed)
	}
	id, ten := clean(turnID), clean(tenant)
	var b pgx.Batch
	b.Queue(j.q.getTurn, id, ten)
	b.Queue(j.q.getLLM, id, ten)
	b.Queue(j.q.getTool, id, ten)
	br := j.pool.SendBatch(ctx, &b)
	rec, err := readTurn(br)
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return store.TurnRecord{}, fmt.Errorf("pgjournal: get turn %s of tenant %s: %w", turnID, tenant, store.ErrNotFound)
	}
	if err != nil {
		return store.TurnRecord{}, j.fail("get turn "+turnID, err)
	}
	rec.TurnID, rec.Tenant = turnID, tenant
	return rec, nil
}

// readTurn reads the results of GetTurn's batch; pgx.ErrNoRows means there
// is no such turn.
func readTurn(br pgx.BatchResults) (store.TurnRecord, error) {
	var rec store.TurnRecord
	var trace []byte
	if err := br.QueryRow().Scan(&rec.Chat, &rec.UserID, &rec.Route, &rec.Status, &rec.StartedAt,
		&rec.DurationMS, &trace); err != nil {
		return rec, err
	}
	rec.StartedAt = rec.StartedAt.UTC()
	if trace != nil {
		rec.Trace = json.RawMessage(trace)
	}

	rows, err := br.Query()
	if err != nil {
		return rec, fmt.Errorf("llm calls: %w", err)
	}
	for rows.Next() {
		var c store.LLMCall
		if err := rows.Scan(&c.Provider, &c.Model, &c.Operation, &c.Strategy, &c.Attempt, &c.InputTokens,
			&c.CachedInputTokens, &c.OutputTokens, &c.CostUSD, &c.DurationMS, &c.Status, &c.Error, &c.Note,
			&c.At); err != nil {
			rows.Close()
			return rec, fmt.Errorf("llm calls: %w", err)
		}
		c.At = c.At.UTC()
		rec.LLMCalls = append(rec.LLMCalls, c)
	}
	if err := rows.Err(); err != nil {
		return rec, fmt.Errorf("llm calls: %w", err)
	}

	if rows, err = br.Query(); err != nil {
		return rec, fmt.Errorf("tool calls: %w", err)
	}
	for rows.Next() {
		c, err := scanToolCall(rows)
		if err != nil {
			rows.Close()
			return rec, fmt.Errorf("tool calls: %w", err)
		}
		rec.ToolCalls = append(rec.ToolCalls, c)
	}
	if err := rows.Err(); err != nil {
		return rec, fmt.Errorf("tool calls: %w", err)
	}
	return rec, nil
}

// clean returns s as PostgreSQL text can hold it: valid UTF-8 without NUL,
// each offending byte sequence replaced by U+FFFD. Text that needs no change
// is returned as is, without allocating.
func clean(s string) string {
	if strings.IndexByte(s, 0) < 0 && utf8.ValidString(s) {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

var nulEscape = []byte(`\u0000`)

// cleanJSON returns raw as jsonb can hold it: invalid UTF-8 replaced by
// U+FFFD and the escape \u0000 (a NUL inside a string) replaced by \ufffd.
// Anything else, valid JSON or not, is left for the server to judge. JSON
// that needs no change is returned as is, without copying.
func cleanJSON(raw []byte) []byte {
	if !utf8.Valid(raw) {
		raw = bytes.ToValidUTF8(raw, []byte("\uFFFD"))
	}
	if !bytes.Contains(raw, nulEscape) {
		return raw
	}
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); {
		// A backslash only occurs inside strings, where it starts an escape:
		// step over whole escapes so that `\\u0000` (a backslash, then text)
		// stays as it is.
		if raw[i] != '\\' || i+1 == len(raw) {
			out = append(out, raw[i])
			i++
			continue
		}
		if bytes.HasPrefix(raw[i:], nulEscape) {
			out = append(out, `\ufffd`...)
			i += len(nulEscape)
			continue
		}
		out = append(out, raw[i], raw[i+1])
		i += 2
	}
	return out
}

// toolCallColumns are the columns scanToolCall reads, in its order.
const toolCallColumns = `tool, idempotency_key, status, error, duration_ms, at, server, remote_tool,
			args_hash, risk, scope, confirmation_id`

// scanToolCall reads one row of toolCallColumns, after the columns of
// lead.
func scanToolCall(rows pgx.Rows, lead ...any) (store.ToolCall, error) {
	var c store.ToolCall
	dest := append(lead, &c.Tool, &c.IdempotencyKey, &c.Status, &c.Error, &c.DurationMS, &c.At, &c.Server,
		&c.RemoteTool, &c.ArgsHash, &c.Risk, &c.Scope, &c.ConfirmationID)
	if err := rows.Scan(dest...); err != nil {
		return c, err
	}
	c.At = c.At.UTC()
	return c, nil
}

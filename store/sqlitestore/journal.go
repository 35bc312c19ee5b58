package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/arbiterhq/arbiter/store"
)

// AppendTurn writes the turn, its model calls and its tool calls in one
// transaction, shared with concurrent commits and appends (see group.go);
// it returns after the transaction committed. A turn id that was already
// journaled is an error (nothing is overwritten). Safe for concurrent use.
func (s *Store) AppendTurn(ctx context.Context, rec store.TurnRecord) error {
	if err := ctx.Err(); err != nil {
		return s.fail("append turn", rec.TurnID, err)
	}
	mine := newQueued(opCommit)
	mine.c.Turn = &rec
	err := s.groupCommit(ctx, mine)
	mine.free()
	if err != nil {
		return s.fail("append turn", rec.TurnID, err)
	}
	return nil
}

// insertTurn writes a turn's row, with its calls, inside the current
// transaction.
func (s *Store) insertTurn(rec *store.TurnRecord) error {
	// Both arrays in one buffer, reused: the statement copies them.
	s.rows = appendRows(s.rows[:0], rec.LLMCalls, appendLLMRow)
	n := len(s.rows)
	s.rows = appendRows(s.rows, rec.ToolCalls, appendToolRow)
	llm, tools := callRows(s.rows[:n], len(rec.LLMCalls)), callRows(s.rows[n:], len(rec.ToolCalls))
	_, err := s.cq.exec(s.cq.turnInsert, rec.TurnID, rec.Tenant, rec.Chat, rec.UserID, rec.Route,
		rec.Status, unixNano(rec.StartedAt), rec.DurationMS, nullJSON(rec.Trace), llm, tools)
	return err
}

// callRows is the column value of n calls encoded as rows: NULL for none.
func callRows(rows []byte, n int) any {
	if n == 0 {
		return nil
	}
	return rows
}

// GetTurn returns the turn of tenant with id turnID, or ErrNotFound (also
// when the turn belongs to another tenant). Safe for concurrent use.
func (s *Store) GetTurn(ctx context.Context, tenant, turnID string) (store.TurnRecord, error) {
	if err := ctx.Err(); err != nil {
		return store.TurnRecord{}, fmt.Errorf("get turn %s: %w", turnID, err)
	}
	rec := store.TurnRecord{TurnID: turnID, Tenant: tenant}
	var started int64
	var trace []byte
	err := s.pool.getTurn.QueryRowContext(noCancel, turnID, tenant).
		Scan(&rec.Chat, &rec.UserID, &rec.Route, &rec.Status, &started, &rec.DurationMS, &trace)
	if errors.Is(err, sql.ErrNoRows) {
		return store.TurnRecord{}, fmt.Errorf("get turn %s: %w", turnID, store.ErrNotFound)
	}
	if err != nil {
		return store.TurnRecord{}, s.fail("get turn", turnID, err)
	}
	rec.StartedAt, rec.Trace = fromUnixNano(started), trace

	// The calls were committed with the turn, so they are all visible now.
	if rec.LLMCalls, err = s.llmCalls(turnID); err != nil {
		return store.TurnRecord{}, s.fail("get turn", turnID, err)
	}
	if rec.ToolCalls, err = s.toolCalls(turnID); err != nil {
		return store.TurnRecord{}, s.fail("get turn", turnID, err)
	}
	return rec, nil
}

func (s *Store) llmCalls(turnID string) ([]store.LLMCall, error) {
	rows, err := s.pool.getLLMCalls.QueryContext(noCancel, turnID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var calls []store.LLMCall
	for rows.Next() {
		var c store.LLMCall
		var at int64
		if err := rows.Scan(&c.Provider, &c.Model, &c.Operation, &c.Strategy, &c.Attempt, &c.InputTokens,
			&c.CachedInputTokens, &c.OutputTokens, &c.CostUSD, &c.DurationMS, &c.Status, &c.Error, &c.Note, &at); err != nil {
			return nil, err
		}
		c.At = fromUnixNano(at)
		calls = append(calls, c)
	}
	return calls, rows.Err()
}

func (s *Store) toolCalls(turnID string) ([]store.ToolCall, error) {
	rows, err := s.pool.getToolCalls.QueryContext(noCancel, turnID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var calls []store.ToolCall
	for rows.Next() {
		c, err := scanToolCall(rows)
		if err != nil {
			return nil, err
		}
		calls = append(calls, c)
	}
	return calls, rows.Err()
}

// ListTurns returns tenant's turns that match f, newest first (turns that
// started at the same time in the order they were appended, newest first),
// at most f.Limit of them (default 50,
// at most 500), with their model and tool calls but without their Trace.
// Empty filter fields match everything; Provider matches turns with at
// least one model call to it; Before keeps turns that started strictly
// before it. Another tenant's turns never appear.
//
// The turns are read along turns_by_tenant, or turns_by_conversation when
// Chat and UserID are both set, backwards, so the read stops after the
// page; a Provider filter reads each candidate's calls from its row. The
// calls of the page then take one query per kind.
// Reads go through the pool. Safe for concurrent use; a closed store yields
// an error wrapping store.ErrUnavailable.
func (s *Store) ListTurns(ctx context.Context, tenant string, f store.TurnFilter) ([]store.TurnRecord, error) {
	what := "tenant " + tenant
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("list turns of %s: %w", what, err)
	}
	if s.closed.Load() {
		return nil, s.fail("list turns of", what, store.ErrUnavailable)
	}
	query, args := listQuery(tenant, f)
	recs, err := s.listTurns(ctx, query, args)
	if err != nil {
		return nil, s.fail("list turns of", what, err)
	}
	if len(recs) == 0 {
		return nil, nil
	}
	if err := s.listCalls(ctx, recs); err != nil {
		return nil, s.fail("list turns of", what, err)
	}
	return recs, nil
}

// listQuery builds the SQL and arguments of the turns ListTurns returns.
func listQuery(tenant string, f store.TurnFilter) (string, []any) {
	var b strings.Builder
	b.WriteString(`SELECT turn_id, chat, user_id, route, status, started_at, duration_ms,
			coalesce(CASE WHEN json_valid(trace) THEN json_extract(trace, '$.cost_unknown') END, 0)
		FROM turns WHERE tenant = ?`)
	args := []any{tenant}
	where := func(cond string, v any) {
		b.WriteString(cond)
		args = append(args, v)
	}
	if f.Chat != "" {
		where(` AND chat = ?`, f.Chat)
	}
	if f.UserID != "" {
		where(` AND user_id = ?`, f.UserID)
	}
	if f.Status != "" {
		where(` AND status = ?`, f.Status)
	}
	if !f.Before.IsZero() {
		where(` AND started_at < ?`, f.Before.UnixNano())
	}
	if f.Provider != "" {
		where(` AND EXISTS (SELECT 1 FROM llm_calls c WHERE c.turn_id = turns.turn_id AND c.provider = ?)`, f.Provider)
	}
	where(` ORDER BY started_at DESC LIMIT ?`, f.PageSize())
	return b.String(), args
}

func (s *Store) listTurns(ctx context.Context, query string, args []any) ([]store.TurnRecord, error) {
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var recs []store.TurnRecord
	tenant, _ := args[0].(string)
	for rows.Next() {
		rec := store.TurnRecord{Tenant: tenant}
		var started int64
		if err := rows.Scan(&rec.TurnID, &rec.Chat, &rec.UserID, &rec.Route, &rec.Status, &started,
			&rec.DurationMS, &rec.CostUnknown); err != nil {
			return nil, err
		}
		rec.StartedAt = fromUnixNano(started)
		recs = append(recs, rec)
	}
	return recs, rows.Err()
}

// listCalls fills in the model and tool calls of recs, in their order. The
// calls were committed with their turns, so they are all visible now.
func (s *Store) listCalls(ctx context.Context, recs []store.TurnRecord) error {
	byID := make(map[string]*store.TurnRecord, len(recs))
	args := make([]any, len(recs))
	for i := range recs {
		byID[recs[i].TurnID] = &recs[i]
		args[i] = recs[i].TurnID
	}
	in := "(?" + strings.Repeat(", ?", len(recs)-1) + ")"

	rows, err := s.db.QueryContext(ctx, `SELECT turn_id, provider, model, operation, strategy, attempt,
			input_tokens, cached_tokens, output_tokens, cost_usd, duration_ms, status, error, note, at
		FROM llm_calls WHERE turn_id IN `+in+` ORDER BY turn_id, seq`, args...)
	if err != nil {
		return fmt.Errorf("llm calls: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var c store.LLMCall
		var at int64
		if err := rows.Scan(&id, &c.Provider, &c.Model, &c.Operation, &c.Strategy, &c.Attempt, &c.InputTokens,
			&c.CachedInputTokens, &c.OutputTokens, &c.CostUSD, &c.DurationMS, &c.Status, &c.Error, &c.Note, &at); err != nil {
			return fmt.Errorf("llm calls: %w", err)
		}
		c.At = fromUnixNano(at)
		if rec := byID[id]; rec != nil {
			rec.LLMCalls = append(rec.LLMCalls, c)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("llm calls: %w", err)
	}
	rows.Close()

	rows, err = s.db.QueryContext(ctx, `SELECT turn_id, `+toolCallColumns+`
		FROM tool_calls WHERE turn_id IN `+in+` ORDER BY turn_id, seq`, args...)
	if err != nil {
		return fmt.Errorf("tool calls: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		c, err := scanToolCall(rows, &id)
		if err != nil {
			return fmt.Errorf("tool calls: %w", err)
		}
		if rec := byID[id]; rec != nil {
			rec.ToolCalls = append(rec.ToolCalls, c)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("tool calls: %w", err)
	}
	return nil
}

// toolCallColumns are the columns scanToolCall reads, in its order.
const toolCallColumns = `tool, idempotency_key, status, error, duration_ms, at, server, remote_tool,
	args_hash, risk, scope, confirmation_id`

// scanToolCall reads one row of toolCallColumns, after the columns of
// lead.
func scanToolCall(rows *sql.Rows, lead ...any) (store.ToolCall, error) {
	var c store.ToolCall
	var at int64
	dest := append(lead, &c.Tool, &c.IdempotencyKey, &c.Status, &c.Error, &c.DurationMS, &at, &c.Server,
		&c.RemoteTool, &c.ArgsHash, &c.Risk, &c.Scope, &c.ConfirmationID)
	if err := rows.Scan(dest...); err != nil {
		return c, err
	}
	c.At = fromUnixNano(at)
	return c, nil
}

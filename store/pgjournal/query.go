package pgjournal

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/arbiterhq/arbiter/store"
)

// DayCost is the model spend of one tenant on one UTC day.
type DayCost struct {
	Day     time.Time // midnight UTC starting the day
	CostUSD float64   // sum of the calls' CostUSD
	Calls   int64     // model calls (attempts) made that day, failed ones included
}

// CostPerDay returns the model spend of tenant per UTC day, over the calls
// that started in [from, to), oldest day first; days without calls are
// left out. It reads the index llm_calls_cost alone. Safe for concurrent
// use.
func (j *Journal) CostPerDay(ctx context.Context, tenant string, from, to time.Time) ([]DayCost, error) {
	what := func() string { return fmt.Sprintf("cost per day of tenant %s from %s to %s", tenant, from, to) }
	if j.closed.Load() {
		return nil, j.fail(what(), errClosed)
	}
	rows, err := j.pool.Query(ctx, j.q.costPerDay, clean(tenant), from, to)
	if err != nil {
		return nil, j.fail(what(), err)
	}
	defer rows.Close()
	var days []DayCost
	for rows.Next() {
		var d DayCost
		if err := rows.Scan(&d.Day, &d.CostUSD, &d.Calls); err != nil {
			return nil, j.fail(what(), err)
		}
		d.Day = d.Day.UTC()
		days = append(days, d)
	}
	if err := rows.Err(); err != nil {
		return nil, j.fail(what(), err)
	}
	return days, nil
}

// TurnSummary is a turn as TurnsOfConversation lists it: the indexed
// columns, without calls or trace (GetTurn has those).
type TurnSummary struct {
	TurnID     string
	Route      string
	Status     string
	StartedAt  time.Time
	DurationMS int64
}

// TurnsOfConversation returns the newest limit turns of the conversation
// (tenant, chat, user), newest first, read along the index
// turns_by_conversation. limit must be positive. Safe for concurrent use.
func (j *Journal) TurnsOfConversation(ctx context.Context, tenant, chat, user string, limit int) ([]TurnSummary, error) {
	what := func() string { return fmt.Sprintf("turns of conversation %s/%s/%s", tenant, chat, user) }
	if limit <= 0 {
		return nil, fmt.Errorf("pgjournal: %s: limit %d is not positive", what(), limit)
	}
	if j.closed.Load() {
		return nil, j.fail(what(), errClosed)
	}
	rows, err := j.pool.Query(ctx, j.q.conversationTurns, clean(tenant), clean(chat), clean(user), limit)
	if err != nil {
		return nil, j.fail(what(), err)
	}
	defer rows.Close()
	var turns []TurnSummary
	for rows.Next() {
		var t TurnSummary
		if err := rows.Scan(&t.TurnID, &t.Route, &t.Status, &t.StartedAt, &t.DurationMS); err != nil {
			return nil, j.fail(what(), err)
		}
		t.StartedAt = t.StartedAt.UTC()
		turns = append(turns, t)
	}
	if err := rows.Err(); err != nil {
		return nil, j.fail(what(), err)
	}
	return turns, nil
}

// ListTurns returns tenant's turns that match f, newest first (turns that
// started in the same microsecond in no particular order), at most f.Limit
// of them (default 50, at most 500), with their model and tool calls in
// the order they were appended but without their Trace. Empty filter
// fields match everything; Provider matches turns with at least one model
// call to it; Before keeps turns that started strictly before it. Another
// tenant's turns never appear. Filter values are cleaned as AppendTurn
// cleans what it stores.
//
// The turns are read backwards along turns_by_tenant, or along
// turns_by_conversation when Chat and UserID are set, so the read stops
// after the page. For a Provider filter the planner weighs probing each
// candidate turn's calls through the primary key of llm_calls (a provider
// most turns use) against collecting the provider's calls along
// llm_calls_by_provider (a rare one). The calls of the page follow in one
// batch: two round trips in all, one when no turn matches. Safe for
// concurrent use.
func (j *Journal) ListTurns(ctx context.Context, tenant string, f store.TurnFilter) ([]store.TurnRecord, error) {
	what := func() string { return fmt.Sprintf("list turns of tenant %s", tenant) }
	if j.closed.Load() {
		return nil, j.fail(what(), errClosed)
	}
	query, args := j.listQuery(tenant, f)
	recs, err := j.listTurns(ctx, query, args, tenant)
	if err != nil {
		return nil, j.fail(what(), err)
	}
	if len(recs) == 0 {
		return nil, nil
	}
	if err := j.listCalls(ctx, recs, args[0]); err != nil {
		return nil, j.fail(what(), err)
	}
	return recs, nil
}

// listQuery builds the SQL and arguments of the turns ListTurns returns.
// There are 32 shapes at most, each prepared once per connection.
func (j *Journal) listQuery(tenant string, f store.TurnFilter) (string, []any) {
	var b strings.Builder
	b.WriteString(j.q.listTurns)
	args := []any{clean(tenant)}
	// param adds v to args and returns its placeholder. Placeholders are
	// appended, never formatted into the text: the schema name in it may
	// hold any character.
	param := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if f.Chat != "" {
		b.WriteString(` AND t.chat = ` + param(clean(f.Chat)))
	}
	if f.UserID != "" {
		b.WriteString(` AND t.user_id = ` + param(clean(f.UserID)))
	}
	if f.Status != "" {
		b.WriteString(` AND t.status = ` + param(clean(f.Status)))
	}
	if !f.Before.IsZero() {
		b.WriteString(` AND t.started_at < ` + param(f.Before))
	}
	if f.Provider != "" {
		b.WriteString(j.q.listProvider + param(clean(f.Provider)) + `)`)
	}
	b.WriteString(` ORDER BY t.started_at DESC LIMIT ` + param(f.PageSize()))
	return b.String(), args
}

func (j *Journal) listTurns(ctx context.Context, query string, args []any, tenant string) ([]store.TurnRecord, error) {
	rows, err := j.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var recs []store.TurnRecord
	for rows.Next() {
		rec := store.TurnRecord{Tenant: tenant}
		if err := rows.Scan(&rec.TurnID, &rec.Chat, &rec.UserID, &rec.Route, &rec.Status, &rec.StartedAt,
			&rec.DurationMS, &rec.CostUnknown); err != nil {
			return nil, err
		}
		rec.StartedAt = rec.StartedAt.UTC()
		recs = append(recs, rec)
	}
	return recs, rows.Err()
}

// listCalls fills in the model and tool calls of recs, read in one batch.
// The calls were committed with their turns, so they are all visible now.
func (j *Journal) listCalls(ctx context.Context, recs []store.TurnRecord, tenant any) error {
	ids := make([]string, len(recs))
	byID := make(map[string]*store.TurnRecord, len(recs))
	for i := range recs {
		ids[i] = recs[i].TurnID
		byID[recs[i].TurnID] = &recs[i]
	}
	var b pgx.Batch
	b.Queue(j.q.listLLM, ids, tenant)
	b.Queue(j.q.listTool, ids, tenant)
	br := j.pool.SendBatch(ctx, &b)
	err := readCalls(br, byID)
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return err
}

func readCalls(br pgx.BatchResults, byID map[string]*store.TurnRecord) error {
	rows, err := br.Query()
	if err != nil {
		return fmt.Errorf("llm calls: %w", err)
	}
	for rows.Next() {
		var id string
		var c store.LLMCall
		if err := rows.Scan(&id, &c.Provider, &c.Model, &c.Operation, &c.Strategy, &c.Attempt, &c.InputTokens,
			&c.CachedInputTokens, &c.OutputTokens, &c.CostUSD, &c.DurationMS, &c.Status, &c.Error, &c.Note,
			&c.At); err != nil {
			rows.Close()
			return fmt.Errorf("llm calls: %w", err)
		}
		c.At = c.At.UTC()
		if rec := byID[id]; rec != nil {
			rec.LLMCalls = append(rec.LLMCalls, c)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("llm calls: %w", err)
	}

	if rows, err = br.Query(); err != nil {
		return fmt.Errorf("tool calls: %w", err)
	}
	for rows.Next() {
		var id string
		c, err := scanToolCall(rows, &id)
		if err != nil {
			rows.Close()
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

package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/arbiterhq/arbiter/store"
)

// AppendTurn writes the turn, its model calls and its tool calls in one
// transaction; it returns after the transaction committed. A turn id that
// was already journaled is an error (nothing is overwritten). Safe for
// concurrent use.
func (s *Store) AppendTurn(ctx context.Context, rec store.TurnRecord) error {
	if err := s.acquireConn(ctx); err != nil {
		return s.fail("append turn", rec.TurnID, err)
	}
	defer s.releaseConn()
	if err := s.appendTx(&rec); err != nil {
		return s.fail("append turn", rec.TurnID, err)
	}
	return nil
}

func (s *Store) appendTx(rec *store.TurnRecord) (err error) {
	q := &s.q
	if _, err := q.begin.ExecContext(noCancel); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_, _ = q.rollback.ExecContext(noCancel)
		}
	}()
	if err := s.insertTurn(rec); err != nil {
		return err
	}
	_, err = q.commit.ExecContext(noCancel)
	return err
}

// insertTurn writes a turn's rows inside the current transaction.
func (s *Store) insertTurn(rec *store.TurnRecord) error {
	q := &s.q
	if _, err := q.turnInsert.ExecContext(noCancel, rec.TurnID, rec.Tenant, rec.Chat, rec.UserID, rec.Route,
		rec.Status, unixNano(rec.StartedAt), rec.DurationMS, nullJSON(rec.Trace)); err != nil {
		return err
	}
	for i := range rec.LLMCalls {
		c := &rec.LLMCalls[i]
		if _, err := q.llmInsert.ExecContext(noCancel, rec.TurnID, i, rec.Tenant, c.Provider, c.Model,
			c.Operation, c.Strategy, c.Attempt, c.InputTokens, c.CachedInputTokens, c.OutputTokens, c.CostUSD,
			c.DurationMS, c.Status, c.Error, c.Note, unixNano(c.At)); err != nil {
			return fmt.Errorf("llm call %d: %w", i, err)
		}
	}
	for i := range rec.ToolCalls {
		c := &rec.ToolCalls[i]
		if _, err := q.toolInsert.ExecContext(noCancel, rec.TurnID, i, rec.Tenant, c.Tool, c.IdempotencyKey,
			c.Status, c.Error, c.DurationMS, unixNano(c.At)); err != nil {
			return fmt.Errorf("tool call %d: %w", i, err)
		}
	}
	return nil
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
		var c store.ToolCall
		var at int64
		if err := rows.Scan(&c.Tool, &c.IdempotencyKey, &c.Status, &c.Error, &c.DurationMS, &at); err != nil {
			return nil, err
		}
		c.At = fromUnixNano(at)
		calls = append(calls, c)
	}
	return calls, rows.Err()
}

package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/store"
)

// seedJournal writes n turns, one a minute back from now, each with a
// model call, a tool call and a finished execution; the oldest execution
// is still in progress.
func seedJournal(t testing.TB, db *sql.DB, now time.Time, n int) {
	t.Helper()
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		at := now.Add(-time.Duration(i) * time.Minute).UnixNano()
		id := fmt.Sprintf("t%07d", i)
		state := "done"
		if i == n-1 {
			state = "started"
		}
		for _, q := range []struct {
			sql  string
			args []any
		}{
			{`INSERT INTO turns (turn_id, tenant, chat, user_id, route, status, started_at, duration_ms, trace) VALUES (?, 'acme', 'c', 'u', 'model', 'ok', ?, 1, '{}')`, []any{id, at}},
			{`INSERT INTO llm_calls (turn_id, seq, tenant, provider, model, operation, strategy, attempt, input_tokens, cached_tokens, output_tokens, cost_usd, duration_ms, status, error, note, at)
				VALUES (?, 0, 'acme', 'p', 'm', 'decide', 'balanced', 'first', 1, 0, 1, 0, 1, 'ok', '', '', ?)`, []any{id, at}},
			{`INSERT INTO tool_calls (turn_id, seq, tenant, tool, idempotency_key, status, error, duration_ms, at) VALUES (?, 0, 'acme', 'create_task', ?, 'ok', '', 1, ?)`, []any{id, "k" + id, at}},
			{`INSERT INTO executions (tenant, idempotency_key, tool, args_hash, turn_id, state, started_at, finished_at) VALUES ('acme', ?, 'create_task', 'h', ?, ?, ?, ?)`, []any{"k" + id, id, state, at, at}},
		} {
			if _, err := tx.Exec(q.sql, q.args...); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

func count(t *testing.T, db *sql.DB, query string) int {
	t.Helper()
	var n int
	if err := db.QueryRow(query).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestPruneDeletesWhatIsPastRetention(t *testing.T) {
	s := openTest(t, Options{})
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	seedJournal(t, s.DB(), now, 1000) // 1000 minutes of turns

	// Turns older than 10 h (rows 601..999) go, in batches of 50; the
	// executions keep 12 h, and the one still in progress stays.
	got, err := s.Prune(context.Background(), now, store.Retention{Turns: 10 * time.Hour, Executions: 12 * time.Hour, Batch: 50})
	if err != nil {
		t.Fatal(err)
	}
	if got.Turns != 399 || got.Executions != 278 {
		t.Errorf("pruned %+v, want 399 turns and 278 executions", got)
	}
	db := s.DB()
	if n := count(t, db, `SELECT count(*) FROM turns`); n != 601 {
		t.Errorf("%d turns kept, want 601", n)
	}
	for _, table := range []string{"llm_calls", "tool_calls"} {
		if n := count(t, db, `SELECT count(*) FROM `+table+` WHERE turn_id NOT IN (SELECT turn_id FROM turns)`); n != 0 {
			t.Errorf("%d %s of deleted turns kept", n, table)
		}
		if n := count(t, db, `SELECT count(*) FROM `+table); n != 601 {
			t.Errorf("%d %s kept, want 601", n, table)
		}
	}
	if n := count(t, db, `SELECT count(*) FROM executions WHERE state = 'started'`); n != 1 {
		t.Errorf("the execution in progress was deleted")
	}
	if n := count(t, db, `SELECT count(*) FROM executions`); n != 722 {
		t.Errorf("%d executions kept, want 722", n)
	}
	// A second run finds nothing; zero periods keep everything.
	if got, _ := s.Prune(context.Background(), now, store.Retention{Turns: 10 * time.Hour, Executions: 12 * time.Hour}); got != (store.Pruned{}) {
		t.Errorf("second prune deleted %+v", got)
	}
	if got, _ := s.Prune(context.Background(), now.Add(1000*time.Hour), store.Retention{}); got != (store.Pruned{}) {
		t.Errorf("zero retention deleted %+v", got)
	}
}

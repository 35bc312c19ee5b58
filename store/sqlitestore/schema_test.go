package sqlitestore

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/store"
)

// TestMigrateKeepsOldToolCalls opens a file as the second schema version
// left it: the audit columns are added, the old rows read with them empty,
// and new rows keep them.
func TestMigrateKeepsOldToolCalls(t *testing.T) {
	s := openAtVersion(t, 2,
		`INSERT INTO turns (turn_id, tenant, chat, user_id, route, status, started_at, duration_ms, trace)
			VALUES ('turn-1', 't1', 'c', 'u', 'model', 'ok', 1, 5, '{}')`,
		`INSERT INTO tool_calls (turn_id, seq, tenant, tool, idempotency_key, status, error, duration_ms, at)
			VALUES ('turn-1', 0, 't1', 'create_card', 'k-1', 'ok', '', 3, 2)`)
	ctx := t.Context()
	got, err := s.GetTurn(ctx, "t1", "turn-1")
	if err != nil {
		t.Fatal(err)
	}
	if want := (store.ToolCall{Tool: "create_card", IdempotencyKey: "k-1", Status: "ok", DurationMS: 3, At: time.Unix(0, 2).UTC()}); len(got.ToolCalls) != 1 ||
		got.ToolCalls[0] != want {
		t.Fatalf("old tool call after the upgrade = %+v, want %+v", got.ToolCalls, want)
	}
	audited := store.ToolCall{Tool: "mcp:everything/echo", Server: "everything", RemoteTool: "echo", ArgsHash: "abc",
		Risk: "write:full", Scope: "write:full", ConfirmationID: "p-1", Status: "ok", DurationMS: 4, At: time.Unix(0, 9).UTC()}
	if err := s.AppendTurn(ctx, store.TurnRecord{TurnID: "turn-2", Tenant: "t1", Chat: "c", UserID: "u", Route: "confirm",
		Status: "ok", StartedAt: time.Unix(0, 8).UTC(), ToolCalls: []store.ToolCall{audited}, Trace: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.GetTurn(ctx, "t1", "turn-2"); err != nil || len(got.ToolCalls) != 1 || got.ToolCalls[0] != audited {
		t.Fatalf("audited tool call = %+v, %v; want %+v", got.ToolCalls, err, audited)
	}
}

// A file whose calls are still in their own tables (schema version 8)
// keeps them through the move into the turns' rows: every column, in the
// order of their seq whatever the order of their insertion, the provider
// filter, and a turn without calls has none.
func TestMigrateFoldsCallsIntoTurns(t *testing.T) {
	s := openAtVersion(t, 8,
		`INSERT INTO turns (turn_id, tenant, chat, user_id, route, status, started_at, duration_ms, trace)
			VALUES ('turn-1', 't1', 'c', 'u', 'model', 'ok', 10, 5, '{}'), ('turn-2', 't1', 'c', 'u', 'command', 'ok', 20, 1, '{}')`,
		`INSERT INTO llm_calls VALUES ('turn-1', 1, 't1', 'backup', 'm2', 'decide', 'fallback', 'first', 7, 1, 2, 0.25, 9, 'ok', '', 'n', 12)`,
		`INSERT INTO llm_calls VALUES ('turn-1', 0, 't1', 'primary', 'm1', 'decide', 'balanced', 'first', 1099511627776, 0, 3, 0.5, 8, 'timeout', 'deadline', '', 11)`,
		`INSERT INTO tool_calls VALUES ('turn-1', 0, 't1', 'mcp:x/echo', 'k-1', 'ok', '', 3, 13, 'x', 'echo', 'h', 'write:full', 'write:full', 'p-1')`)
	ctx := t.Context()
	got, err := s.GetTurn(ctx, "t1", "turn-1")
	if err != nil {
		t.Fatal(err)
	}
	wantLLM := []store.LLMCall{
		{Provider: "primary", Model: "m1", Operation: "decide", Strategy: "balanced", Attempt: "first", InputTokens: 1 << 40,
			OutputTokens: 3, CostUSD: 0.5, DurationMS: 8, Status: "timeout", Error: "deadline", At: time.Unix(0, 11).UTC()},
		{Provider: "backup", Model: "m2", Operation: "decide", Strategy: "fallback", Attempt: "first", InputTokens: 7,
			CachedInputTokens: 1, OutputTokens: 2, CostUSD: 0.25, DurationMS: 9, Status: "ok", Note: "n", At: time.Unix(0, 12).UTC()},
	}
	wantTool := []store.ToolCall{{Tool: "mcp:x/echo", IdempotencyKey: "k-1", Status: "ok", DurationMS: 3, At: time.Unix(0, 13).UTC(),
		Server: "x", RemoteTool: "echo", ArgsHash: "h", Risk: "write:full", Scope: "write:full", ConfirmationID: "p-1"}}
	if !slices.Equal(got.LLMCalls, wantLLM) || !slices.Equal(got.ToolCalls, wantTool) {
		t.Fatalf("calls after the upgrade = %+v / %+v\nwant %+v / %+v", got.LLMCalls, got.ToolCalls, wantLLM, wantTool)
	}
	if got, err := s.GetTurn(ctx, "t1", "turn-2"); err != nil || len(got.LLMCalls)+len(got.ToolCalls) != 0 {
		t.Fatalf("turn without calls = %+v, %v", got, err)
	}
	list, err := s.ListTurns(ctx, "t1", store.TurnFilter{Provider: "backup"})
	if err != nil || len(list) != 1 || list[0].TurnID != "turn-1" || !slices.Equal(list[0].LLMCalls, wantLLM) {
		t.Fatalf("turns calling backup = %+v, %v", list, err)
	}
	if list, err := s.ListTurns(ctx, "t1", store.TurnFilter{Provider: "m1"}); err != nil || len(list) != 0 {
		t.Fatalf("turns calling a provider named like a model = %+v, %v", list, err)
	}
}

// openAtVersion opens a file as the given schema version left it, holding
// rows (statements run after its migrations), so that Open upgrades it.
func openAtVersion(t *testing.T, version int, rows ...string) *Store {
	t.Helper()
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	old := []string{`CREATE TABLE schema_versions (component TEXT PRIMARY KEY, version INTEGER NOT NULL) WITHOUT ROWID`}
	for _, m := range migrations[:version] {
		old = append(old, m...)
	}
	old = append(old, fmt.Sprintf(`INSERT INTO schema_versions VALUES ('store', %d)`, version))
	for _, stmt := range append(old, rows...) {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	db.Close()
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// The journal's tables carry the indexes their queries read and no others:
// every index is written on every turn.
func TestJournalIndexes(t *testing.T) {
	s := openTest(t, Options{})
	rows, err := s.DB().Query(`SELECT name FROM sqlite_master
		WHERE type = 'index' AND tbl_name IN ('turns', 'llm_calls', 'tool_calls') AND sql IS NOT NULL ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		got = append(got, name)
	}
	want := []string{"turns_by_conversation", "turns_by_start", "turns_by_tenant"}
	if !slices.Equal(got, want) {
		t.Errorf("journal indexes = %v, want %v", got, want)
	}
}

package sqlitestore

import (
	"database/sql"
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
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	old := []string{`CREATE TABLE schema_versions (component TEXT PRIMARY KEY, version INTEGER NOT NULL) WITHOUT ROWID`}
	for _, m := range migrations[:2] {
		old = append(old, m...)
	}
	old = append(old,
		`INSERT INTO schema_versions VALUES ('store', 2)`,
		`INSERT INTO turns (turn_id, tenant, chat, user_id, route, status, started_at, duration_ms, trace)
			VALUES ('turn-1', 't1', 'c', 'u', 'model', 'ok', 1, 5, '{}')`,
		`INSERT INTO tool_calls (turn_id, seq, tenant, tool, idempotency_key, status, error, duration_ms, at)
			VALUES ('turn-1', 0, 't1', 'create_card', 'k-1', 'ok', '', 3, 2)`)
	for _, stmt := range old {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	db.Close()

	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
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

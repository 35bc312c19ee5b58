package pgjournal

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/arbiterhq/arbiter/store"
)

// TestListTurnsOddSchema lists turns with every filter in a schema whose
// name holds quotes, a percent sign and a placeholder.
func TestListTurnsOddSchema(t *testing.T) {
	j := openSchema(t, freshSchemaNamed(t, ` "%d $1 %s`))
	ctx := t.Context()
	rec := sampleTurn("t1", "turn-1", testNow)
	mustAppend(t, j, rec)
	f := store.TurnFilter{Chat: rec.Chat, UserID: rec.UserID, Status: rec.Status, Provider: rec.LLMCalls[0].Provider,
		Before: testNow.Add(time.Second), Limit: 5}
	got, err := j.ListTurns(ctx, "t1", f)
	if err != nil || len(got) != 1 || got[0].TurnID != "turn-1" || len(got[0].LLMCalls) != len(rec.LLMCalls) {
		t.Errorf("ListTurns(%+v) = %+v, %v; want turn-1 with its calls", f, got, err)
	}
}

// TestListTurnsCleansFilters: filter values are cleaned as stored text
// is, so a value with a NUL finds the turn stored with U+FFFD.
func TestListTurnsCleansFilters(t *testing.T) {
	j := openTest(t)
	ctx := t.Context()
	rec := sampleTurn("t\x001", "turn-1", testNow)
	rec.Chat = "chat\xff"
	mustAppend(t, j, rec)
	got, err := j.ListTurns(ctx, "t\x001", store.TurnFilter{Chat: "chat\xff"})
	if err != nil || len(got) != 1 || got[0].Tenant != "t\x001" {
		t.Errorf("ListTurns with unstorable text = %+v, %v; want turn-1 of the tenant asked for", got, err)
	}
}

// TestMigrateFromFirstRelease opens a schema as the first release left
// it: the later migrations add turns_by_tenant and the tool call audit
// columns, and keep the turns.
func TestMigrateFromFirstRelease(t *testing.T) {
	schema := freshSchema(t)
	j := openSchema(t, schema)
	ctx := t.Context()
	mustAppend(t, j, sampleTurn("t1", "turn-1", testNow))
	quoted := pgx.Identifier{schema}.Sanitize()
	for _, stmt := range []string{`DROP INDEX {schema}.turns_by_tenant`, `DROP INDEX {schema}.tool_calls_by_server`,
		`DROP INDEX {schema}.turns_by_start`,
		`ALTER TABLE {schema}.tool_calls DROP COLUMN server, DROP COLUMN remote_tool, DROP COLUMN args_hash,
			DROP COLUMN risk, DROP COLUMN scope, DROP COLUMN confirmation_id`,
		`DELETE FROM {schema}.schema_versions WHERE version > 1`} {
		if _, err := j.pool.Exec(ctx, withSchema(stmt, quoted)); err != nil {
			t.Fatal(err)
		}
	}
	j.Close()

	j = openSchema(t, schema)
	if n, _ := versions(t, j); n != len(migrations) {
		t.Errorf("%d versions after the upgrade, want %d", n, len(migrations))
	}
	var exists bool
	if err := j.pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, quoted+".turns_by_tenant").Scan(&exists); err != nil || !exists {
		t.Errorf("turns_by_tenant after the upgrade: exists=%v, %v", exists, err)
	}
	if got, err := j.ListTurns(ctx, "t1", store.TurnFilter{}); err != nil || len(got) != 1 {
		t.Errorf("ListTurns after the upgrade = %d turns, %v; want 1", len(got), err)
	}
	audited := sampleTurn("t1", "turn-2", testNow)
	audited.ToolCalls = []store.ToolCall{{Tool: "mcp:everything/echo", Server: "everything", RemoteTool: "echo",
		ArgsHash: "abc", Risk: "read", Scope: "read", ConfirmationID: "p-1", Status: "ok", At: testNow}}
	mustAppend(t, j, audited)
	if got, err := j.GetTurn(ctx, "t1", "turn-2"); err != nil || len(got.ToolCalls) != 1 || got.ToolCalls[0].ConfirmationID != "p-1" ||
		got.ToolCalls[0].Server != "everything" {
		t.Errorf("audited tool call after the upgrade = %+v, %v", got.ToolCalls, err)
	}
}

package pgjournal

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/arbiterhq/arbiter/store"
)

func TestCostPerDay(t *testing.T) {
	j := openTest(t)
	ctx := t.Context()
	day := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	call := func(at time.Time, cost float64) store.LLMCall {
		return store.LLMCall{Provider: "p", Model: "m", Status: "ok", CostUSD: cost, At: at}
	}
	turns := []store.TurnRecord{
		// Day 1: three calls, one of them exactly at midnight.
		{TurnID: "a", Tenant: "t1", StartedAt: day, LLMCalls: []store.LLMCall{call(day, 0.25), call(day.Add(time.Hour), 0.5)}},
		{TurnID: "b", Tenant: "t1", StartedAt: day.Add(23 * time.Hour), LLMCalls: []store.LLMCall{call(day.Add(24*time.Hour-time.Microsecond), 1)}},
		// Day 2 has no calls; day 3 has one, in another time zone's notation.
		{TurnID: "c", Tenant: "t1", StartedAt: day.Add(50 * time.Hour), LLMCalls: []store.LLMCall{
			call(day.Add(50*time.Hour).In(time.FixedZone("UTC+5", 5*3600)), 2)}},
		// Day 4 is outside [from, to); another tenant's calls do not count.
		{TurnID: "d", Tenant: "t1", StartedAt: day.Add(72 * time.Hour), LLMCalls: []store.LLMCall{call(day.Add(72*time.Hour), 4)}},
		{TurnID: "e", Tenant: "t2", StartedAt: day, LLMCalls: []store.LLMCall{call(day.Add(time.Hour), 8)}},
	}
	for _, rec := range turns {
		mustAppend(t, j, rec)
	}
	got, err := j.CostPerDay(ctx, "t1", day, day.Add(72*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	want := []DayCost{{Day: day, CostUSD: 1.75, Calls: 3}, {Day: day.Add(48 * time.Hour), CostUSD: 2, Calls: 1}}
	if len(got) != len(want) {
		t.Fatalf("CostPerDay = %+v, want %+v", got, want)
	}
	for i := range want {
		if !got[i].Day.Equal(want[i].Day) || got[i].Day.Location() != time.UTC ||
			math.Abs(got[i].CostUSD-want[i].CostUSD) > 1e-12 || got[i].Calls != want[i].Calls {
			t.Errorf("day %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if got, err := j.CostPerDay(ctx, "t3", day, day.Add(72*time.Hour)); err != nil || len(got) != 0 {
		t.Errorf("CostPerDay of a tenant without calls = %+v, %v", got, err)
	}
}

func TestTurnsOfConversation(t *testing.T) {
	j := openTest(t)
	ctx := t.Context()
	for i := range 5 {
		rec := sampleTurn("t1", fmt.Sprintf("turn-%d", i), testNow.Add(time.Duration(i)*time.Minute))
		rec.Status = fmt.Sprintf("status-%d", i)
		mustAppend(t, j, rec)
	}
	other := sampleTurn("t1", "other-user", testNow.Add(time.Hour))
	other.UserID = "u-2"
	otherTenant := sampleTurn("t2", "other-tenant", testNow.Add(time.Hour))
	for _, rec := range []store.TurnRecord{other, otherTenant} {
		mustAppend(t, j, rec)
	}

	got, err := j.TurnsOfConversation(ctx, "t1", "chat-1", "u-1", 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("TurnsOfConversation = %+v, want 3 turns", got)
	}
	for k, s := range got {
		i := 4 - k
		want := TurnSummary{TurnID: fmt.Sprintf("turn-%d", i), Route: "model", Status: fmt.Sprintf("status-%d", i),
			StartedAt: testNow.Add(time.Duration(i) * time.Minute), DurationMS: 1834}
		if s != want {
			t.Errorf("turn %d = %+v, want %+v", k, s, want)
		}
	}
	if all, err := j.TurnsOfConversation(ctx, "t1", "chat-1", "u-1", 100); err != nil || len(all) != 5 {
		t.Errorf("TurnsOfConversation with a large limit = %d turns, %v; want 5", len(all), err)
	}
	if none, err := j.TurnsOfConversation(ctx, "t3", "chat-1", "u-1", 10); err != nil || len(none) != 0 {
		t.Errorf("TurnsOfConversation of an unknown conversation = %+v, %v", none, err)
	}
	if _, err := j.TurnsOfConversation(ctx, "t1", "chat-1", "u-1", 0); err == nil {
		t.Error("TurnsOfConversation with limit 0 succeeded")
	}
}

// TestExplainUsesIndexes fills the tables with enough rows that a
// sequential scan would be the wrong plan, and checks that the planner
// picks the indexes for the questions they exist for.
func TestExplainUsesIndexes(t *testing.T) {
	j := openTest(t)
	ctx := t.Context()
	s := pgx.Identifier{j.schema}.Sanitize()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	// 20 000 turns a minute apart (about 14 days) over 20 tenants and 1 000
	// chats, two model calls each over 25 providers, 2% of them errors.
	fill := []string{
		`INSERT INTO {schema}.turns (turn_id, tenant, chat, user_id, route, status, started_at, duration_ms, trace)
			SELECT 'turn-' || g, 'tenant-' || (g % 20), 'chat-' || (g % 1000), 'u-1', 'model', 'ok',
				$1::timestamptz + g * interval '1 minute', 100, '{}'::jsonb
			FROM generate_series(1, 20000) g`,
		`INSERT INTO {schema}.llm_calls (turn_id, seq, tenant, provider, model, operation, strategy, attempt,
				input_tokens, cached_tokens, output_tokens, cost_usd, duration_ms, status, error, note, at)
			SELECT t.turn_id, s, t.tenant, 'provider-' || (n % 25), 'm', 'decide', 'json', 'first', 1000, 0, 50, 0.001,
				100, CASE WHEN n % 50 = 0 THEN 'error' ELSE 'ok' END, '', '', t.started_at
			FROM {schema}.turns t
			CROSS JOIN generate_series(0, 1) s
			CROSS JOIN LATERAL (SELECT substr(t.turn_id, 6)::int * 2 + s AS n) x`,
	}
	if _, err := j.pool.Exec(ctx, withSchema(fill[0], s), base); err != nil {
		t.Fatal(err)
	}
	if _, err := j.pool.Exec(ctx, withSchema(fill[1], s)); err != nil {
		t.Fatal(err)
	}
	// VACUUM sets the visibility map, which lets the cost query read the
	// index alone; ANALYZE gives the planner the row counts.
	for _, table := range []string{"turns", "llm_calls"} {
		if _, err := j.pool.Exec(ctx, `VACUUM ANALYZE `+s+`.`+table); err != nil {
			t.Fatal(err)
		}
	}

	day := base.Add(5 * 24 * time.Hour)
	tests := []struct {
		name, index, query string
		args               []any
	}{
		{"turns of a conversation", "turns_by_conversation", j.q.conversationTurns,
			[]any{"tenant-3", "chat-3", "u-1", 20}},
		{"calls by provider and status", "llm_calls_by_provider",
			withSchema(`SELECT count(*), avg(duration_ms) FROM {schema}.llm_calls
				WHERE provider = $1 AND status = $2 AND at >= $3 AND at < $4`, s),
			[]any{"provider-0", "error", day, day.Add(48 * time.Hour)}},
		{"cost per tenant per day", "llm_calls_cost", j.q.costPerDay,
			[]any{"tenant-3", day, day.Add(48 * time.Hour)}},
	}
	for _, f := range []store.TurnFilter{
		{}, {Before: day}, {Status: "ok", Provider: "provider-3"},
		{Chat: "chat-3", UserID: "u-1"}, {Chat: "chat-3", UserID: "u-1", Before: day},
	} {
		query, args := j.listQuery("tenant-3", f)
		index := "turns_by_tenant"
		switch {
		case f.Chat != "":
			index = "turns_by_conversation"
		case f.Provider != "":
			// The planner weighs probing each turn's calls by the primary
			// key against reading the provider's calls along
			// llm_calls_by_provider; either way, no table is scanned.
			index = "llm_calls_"
		}
		tests = append(tests, struct {
			name, index, query string
			args               []any
		}{fmt.Sprintf("list turns %+v", f), index, query, args})
	}
	for _, tt := range tests {
		rows, err := j.pool.Query(ctx, `EXPLAIN `+tt.query, tt.args...)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		plan := strings.Join(lines, "\n")
		if !strings.Contains(plan, tt.index) || strings.Contains(plan, "Seq Scan") {
			t.Errorf("%s: the plan does not use %s:\n%s", tt.name, tt.index, plan)
		} else {
			t.Logf("%s:\n%s", tt.name, plan)
		}
	}
}

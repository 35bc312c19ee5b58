package storetest

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/store"
)

var journalTests = []subtest{
	{name: "RoundTrip", run: testJournalRoundTrip},
	{name: "NotFound", run: testJournalNotFound},
	{name: "ConcurrentAppends", run: testJournalConcurrent},
	{name: "InCommit", run: testJournalInCommit},
	{name: "ListTurnsFilters", run: testListTurnsFilters},
	{name: "ListTurnsOrderAndLimit", run: testListTurnsLimit},
	{name: "ListTurnsCostUnknown", run: testListTurnsCostUnknown},
	{name: "ListTurnsTenantIsolation", run: testListTurnsTenants},
}

// needJournal skips a subtest of a backend that keeps no journal.
func needJournal(t *testing.T, e env) {
	t.Helper()
	if e.j == nil {
		t.Skip("the backend keeps no journal")
	}
}

// testJournalInCommit: a turn record carried by a Commit is journaled with
// it, and a refused commit journals nothing. A backend without a journal
// must refuse a commit carrying a turn record, writing nothing of it.
func testJournalInCommit(t *testing.T, e env) {
	if e.s == nil || e.l == nil {
		t.Skip("needs State and Locker; the backend is a journal only")
	}
	ctx, now := t.Context(), e.clock.Now()
	ck := testKey("t1", "c1")
	lease := MustLock(t, e.l, ck.String())
	conv := conversation(now, 2)
	rec := turnRecord("t1", "turn-c1", now)
	if e.j == nil {
		defer lease.Release()
		mustClaim(t, e.s, ck, "m1", "turn-c1", now)
		p := pending(ck, "p1", now)
		err := e.s.Commit(ctx, store.Commit{Key: ck, Fence: lease.Fence(), Conversation: &conv, PutPending: &p,
			MessageID: "m1", Reply: json.RawMessage(`"r"`), Turn: &rec})
		if err == nil {
			t.Fatal("a backend without a journal accepted a commit carrying a turn record")
		}
		_, err = e.s.LoadConversation(ctx, ck)
		wantNotFound(t, "memory of a commit refused for its turn record", err)
		_, err = e.s.GetPending(ctx, ck)
		wantNotFound(t, "pending action of a commit refused for its turn record", err)
		if got, _ := mustClaim(t, e.s, ck, "m1", "turn-c2", now); got.Done {
			t.Errorf("inbox record completed by a commit refused for its turn record: %+v", got)
		}
		return
	}
	mustCommit(t, e.s, store.Commit{Key: ck, Fence: lease.Fence(), Conversation: &conv, Turn: &rec})
	got, err := e.j.GetTurn(ctx, "t1", "turn-c1")
	if err != nil {
		t.Fatalf("GetTurn after a commit carrying it: %v", err)
	}
	checkTurn(t, "turn committed with state", got, rec)

	stale := turnRecord("t1", "turn-stale", now)
	lease.Release()
	newer := MustLock(t, e.l, ck.String())
	defer newer.Release()
	err = e.s.Commit(ctx, store.Commit{Key: ck, Fence: lease.Fence(), Conversation: &conv, Turn: &stale})
	if err == nil {
		t.Fatal("a commit with an old fence succeeded")
	}
	_, err = e.j.GetTurn(ctx, "t1", "turn-stale")
	wantNotFound(t, "turn record of a refused commit", err)
}

func turnRecord(tenant, id string, now time.Time) store.TurnRecord {
	return store.TurnRecord{
		TurnID: id, Tenant: tenant, Chat: "chat-1", UserID: "u-1",
		Route: "model", Status: "ok", StartedAt: now, DurationMS: 1834,
		LLMCalls: []store.LLMCall{
			{Provider: "primary", Model: "model-a-2026-01", Operation: "decide", Strategy: "json_schema", Attempt: "first",
				InputTokens: 1520, CachedInputTokens: 1024, OutputTokens: 88, CostUSD: 0.001234, DurationMS: 901,
				Status: "error", Error: "rate limited", Note: "blocked provider primary for 5m0s", At: now.Add(10 * time.Millisecond)},
			{Provider: "fallback", Model: "model-b", Operation: "decide", Strategy: "json_object",
				InputTokens: 1490, OutputTokens: 91, CostUSD: 0.0005, DurationMS: 700,
				Status: "ok", At: now.Add(time.Second)},
		},
		ToolCalls: []store.ToolCall{
			{Tool: "create_card", IdempotencyKey: "idem-1", Status: "ok", DurationMS: 120, At: now.Add(1700 * time.Millisecond)},
			{Tool: "mcp:everything/echo", Server: "everything", RemoteTool: "echo", IdempotencyKey: "pending:p-7",
				ArgsHash: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", Risk: "write:full",
				Scope: "write:full", ConfirmationID: "p-7", Status: "ok", DurationMS: 42, At: now.Add(1750 * time.Millisecond)},
			{Tool: "search", Status: "error", Error: "timeout", DurationMS: 15000, At: now.Add(1800 * time.Millisecond)},
		},
		Trace: json.RawMessage(`{"steps":[{"step":"route","route":"model"},{"step":"decide","attempts":2}],"veto":null,"text":"Привет"}`),
	}
}

func testJournalRoundTrip(t *testing.T, e env) {
	needJournal(t, e)
	ctx, now := t.Context(), e.clock.Now()
	full := turnRecord("t1", "turn-1", now)
	bare := store.TurnRecord{TurnID: "turn-2", Tenant: "t1", Chat: "chat-1", UserID: "u-1",
		Route: "intercept", Status: "ok", StartedAt: now, Trace: json.RawMessage(`{}`)}
	mustAppend(t, e, full, bare)
	for _, want := range []store.TurnRecord{full, bare} {
		got, err := e.j.GetTurn(ctx, want.Tenant, want.TurnID)
		if err != nil {
			t.Fatalf("GetTurn(%s): %v", want.TurnID, err)
		}
		checkTurn(t, "GetTurn("+want.TurnID+")", got, want)
	}
}

func testJournalNotFound(t *testing.T, e env) {
	needJournal(t, e)
	ctx := t.Context()
	mustAppend(t, e, turnRecord("t1", "turn-1", e.clock.Now()))
	tests := []struct{ tenant, id, why string }{
		{"t2", "turn-1", "another tenant"},
		{"", "turn-1", "empty tenant"},
		{"t1", "turn-404", "unknown id"},
		{"t1", "", "empty id"},
	}
	for _, tt := range tests {
		_, err := e.j.GetTurn(ctx, tt.tenant, tt.id)
		wantNotFound(t, "GetTurn of "+tt.why, err)
	}
}

func testJournalConcurrent(t *testing.T, e env) {
	needJournal(t, e)
	const n = 16
	now := e.clock.Now()
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if err := e.j.AppendTurn(t.Context(), turnRecord("t1", fmt.Sprintf("turn-%d", i), now)); err != nil {
				t.Errorf("AppendTurn %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	for i := range n {
		want := turnRecord("t1", fmt.Sprintf("turn-%d", i), now)
		got, err := e.j.GetTurn(t.Context(), "t1", want.TurnID)
		if err != nil {
			t.Fatalf("GetTurn(%s): %v", want.TurnID, err)
		}
		checkTurn(t, "GetTurn("+want.TurnID+")", got, want)
	}
}

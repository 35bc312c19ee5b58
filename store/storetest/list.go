package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/store"
)

// needLister skips a subtest of a journal that cannot list turns, and
// returns the lister of one that can.
func needLister(t *testing.T, e env) store.TurnLister {
	t.Helper()
	needJournal(t, e)
	l, ok := e.j.(store.TurnLister)
	if !ok {
		t.Skip("the journal does not list turns")
	}
	return l
}

func mustAppend(t *testing.T, e env, recs ...store.TurnRecord) {
	t.Helper()
	for _, rec := range recs {
		if err := e.j.AppendTurn(t.Context(), rec); err != nil {
			t.Fatalf("AppendTurn(%s): %v", rec.TurnID, err)
		}
	}
}

func mustList(t *testing.T, l store.TurnLister, tenant string, f store.TurnFilter) []store.TurnRecord {
	t.Helper()
	recs, err := l.ListTurns(t.Context(), tenant, f)
	if err != nil {
		t.Fatalf("ListTurns(%s, %+v): %v", tenant, f, err)
	}
	return recs
}

func wantTurns(t *testing.T, what string, got []store.TurnRecord, want ...string) {
	t.Helper()
	wantIDList(t, what+": turns", idsOf(got, func(r store.TurnRecord) string { return r.TurnID }), want)
}

// listed is rec as ListTurns returns it: without its trace.
func listed(rec store.TurnRecord) store.TurnRecord {
	rec.Trace = nil
	return rec
}

// listTurn is a turn of tenant in chat by user with status, started at
// at, with one model call per provider named.
func listTurn(tenant, id, chat, user, status string, at time.Time, providers ...string) store.TurnRecord {
	rec := store.TurnRecord{TurnID: id, Tenant: tenant, Chat: chat, UserID: user, Route: "model",
		Status: status, StartedAt: at, DurationMS: 250, Trace: []byte(`{"steps":[]}`)}
	for i, p := range providers {
		rec.LLMCalls = append(rec.LLMCalls, store.LLMCall{Provider: p, Model: "m-" + p, Operation: "decide",
			Strategy: "json_schema", Attempt: "first", InputTokens: 100 + i, OutputTokens: 10, CostUSD: 0.25,
			DurationMS: 80, Status: "ok", At: at.Add(time.Duration(i+1) * time.Millisecond)})
	}
	if len(providers) > 0 {
		rec.ToolCalls = []store.ToolCall{{Tool: "search", Server: "kb", RemoteTool: "search", IdempotencyKey: "idem-" + id,
			ArgsHash: "h-" + id, Risk: "read", Scope: "read", Status: "ok", DurationMS: 30, At: at.Add(100 * time.Millisecond)}}
	}
	return rec
}

func testListTurnsFilters(t *testing.T, e env) {
	l := needLister(t, e)
	base := e.clock.Now()
	at := func(min int) time.Time { return base.Add(time.Duration(min) * time.Minute) }
	a := turnRecord("t1", "a", at(0)) // chat-1, u-1, ok; providers primary and fallback
	b := listTurn("t1", "b", "chat-1", "u-2", "error", at(1), "primary")
	c := listTurn("t1", "c", "chat-2", "u-1", "ok", at(2))
	d := listTurn("t1", "d", "chat-2", "u-2", "vetoed", at(3), "fallback", "fallback")
	f := listTurn("t1", "f", "chat-1", "u-1", "ok", at(4), "other", "primary")
	f.LLMCalls[1].Attempt, f.LLMCalls[1].Status = "skipped", "blocked"
	// Another tenant's turns, alike and interleaved, never show.
	x := listTurn("t2", "x", "chat-1", "u-1", "ok", at(2).Add(time.Second), "primary")
	y := listTurn("t2", "y", "chat-2", "u-2", "error", at(5), "fallback")
	// Appended out of time order: the list follows StartedAt.
	mustAppend(t, e, c, x, f, a, d, y, b)

	all := mustList(t, l, "t1", store.TurnFilter{})
	wantTurns(t, "no filter", all, "f", "d", "c", "b", "a")
	if len(all) == 5 {
		for i, want := range []store.TurnRecord{f, d, c, b, a} {
			checkTurn(t, "listed turn "+want.TurnID, all[i], listed(want))
			if all[i].Trace != nil {
				t.Errorf("listed turn %s carries its trace %s; want none", want.TurnID, all[i].Trace)
			}
		}
	}

	tests := []struct {
		name string
		f    store.TurnFilter
		want []string
	}{
		{"chat", store.TurnFilter{Chat: "chat-1"}, []string{"f", "b", "a"}},
		{"user", store.TurnFilter{UserID: "u-1"}, []string{"f", "c", "a"}},
		{"conversation", store.TurnFilter{Chat: "chat-1", UserID: "u-1"}, []string{"f", "a"}},
		{"status ok", store.TurnFilter{Status: "ok"}, []string{"f", "c", "a"}},
		{"status error", store.TurnFilter{Status: "error"}, []string{"b"}},
		{"provider of a first call", store.TurnFilter{Provider: "primary"}, []string{"f", "b", "a"}},
		{"provider of a later call", store.TurnFilter{Provider: "fallback"}, []string{"d", "a"}},
		{"provider and chat", store.TurnFilter{Provider: "fallback", Chat: "chat-1"}, []string{"a"}},
		{"provider without calls", store.TurnFilter{Provider: "nobody"}, nil},
		{"before the newest", store.TurnFilter{Before: f.StartedAt}, []string{"d", "c", "b", "a"}},
		{"before is strict", store.TurnFilter{Before: c.StartedAt}, []string{"b", "a"}},
		{"just after a turn", store.TurnFilter{Before: c.StartedAt.Add(time.Microsecond)}, []string{"c", "b", "a"}},
		{"before the oldest", store.TurnFilter{Before: a.StartedAt}, nil},
		{"limit", store.TurnFilter{Limit: 2}, []string{"f", "d"}},
		{"unknown chat", store.TurnFilter{Chat: "chat-3"}, nil},
		{"everything", store.TurnFilter{Chat: "chat-1", UserID: "u-1", Status: "ok", Provider: "primary",
			Before: f.StartedAt, Limit: 1}, []string{"a"}},
	}
	for _, tt := range tests {
		got := mustList(t, l, "t1", tt.f)
		wantTurns(t, tt.name, got, tt.want...)
		for _, r := range got {
			if r.Tenant != "t1" {
				t.Errorf("%s: turn %s of tenant %q", tt.name, r.TurnID, r.Tenant)
			}
		}
	}
}

// testListTurnsLimit lists more turns than the largest page: newest
// first, 50 by default, never more than 500, and paging with Before
// visits every turn once.
func testListTurnsLimit(t *testing.T, e env) {
	l := needLister(t, e)
	const n = 520
	base := e.clock.Now()
	recs := make([]store.TurnRecord, n)
	for i := range n {
		var providers []string
		for k := range i % 3 {
			providers = append(providers, fmt.Sprintf("p-%d", k))
		}
		recs[i] = listTurn("t1", fmt.Sprintf("turn-%03d", i), "chat-1", "u-1", "ok",
			base.Add(time.Duration(i)*time.Second), providers...)
	}
	// Appended concurrently and in a scrambled order.
	var wg sync.WaitGroup
	const workers = 8
	for w := range workers {
		wg.Go(func() {
			for k := w; k < n; k += workers {
				rec := recs[k*7%n]
				if err := e.j.AppendTurn(t.Context(), rec); err != nil {
					t.Errorf("AppendTurn(%s): %v", rec.TurnID, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	newest := func(k int) []string {
		out := make([]string, k)
		for i := range out {
			out[i] = recs[n-1-i].TurnID
		}
		return out
	}
	for _, tt := range []struct{ limit, want int }{{0, 50}, {-3, 50}, {7, 7}, {500, 500}, {501, 500}, {100000, 500}} {
		got := mustList(t, l, "t1", store.TurnFilter{Limit: tt.limit})
		wantTurns(t, fmt.Sprintf("limit %d", tt.limit), got, newest(tt.want)...)
	}

	var seen []store.TurnRecord
	f := store.TurnFilter{Limit: 200}
	for page := 0; ; page++ {
		got := mustList(t, l, "t1", f)
		if len(got) == 0 {
			break
		}
		if page > n/f.Limit {
			t.Fatalf("paging did not end after %d pages", page)
		}
		seen = append(seen, got...)
		f.Before = got[len(got)-1].StartedAt
	}
	wantTurns(t, "every page", seen, newest(n)...)
	if len(seen) == n {
		for i, got := range seen {
			checkTurn(t, "paged turn "+got.TurnID, got, listed(recs[n-1-i]))
		}
	}
}

func testListTurnsTenants(t *testing.T, e env) {
	l := needLister(t, e)
	base := e.clock.Now()
	for i, tenant := range []string{"t1", "t2", "t10", "T1"} {
		for k := range 3 {
			at := base.Add(time.Duration(k*10+i) * time.Second)
			mustAppend(t, e, listTurn(tenant, fmt.Sprintf("%s-%d", tenant, k), "chat-1", "u-1", "ok", at, "primary"))
		}
	}
	for _, tenant := range []string{"t1", "t2", "t10", "T1"} {
		for _, f := range []store.TurnFilter{{}, {Chat: "chat-1", UserID: "u-1", Status: "ok", Provider: "primary"}} {
			wantTurns(t, fmt.Sprintf("turns of %s with %+v", tenant, f), mustList(t, l, tenant, f),
				tenant+"-2", tenant+"-1", tenant+"-0")
		}
	}
	for _, tenant := range []string{"t", "", "t3", "t1%", "%"} {
		wantTurns(t, "turns of tenant "+fmt.Sprintf("%q", tenant), mustList(t, l, tenant, store.TurnFilter{}))
	}
}

// testListTurnsCostUnknown: a turn whose trace says a model call had no
// known price is listed as such (a list of turns cannot show its cost as
// the sum of the calls'); the others, and a turn without a trace, are not.
func testListTurnsCostUnknown(t *testing.T, e env) {
	l := needLister(t, e)
	base := e.clock.Now()
	unpriced := listTurn("t1", "u", "chat-1", "u-1", "ok", base, "local")
	unpriced.Trace = []byte(`{"steps":[],"cost_unknown":true}`)
	unpriced.LLMCalls[0].CostUSD = 0
	priced := listTurn("t1", "p", "chat-1", "u-1", "ok", base.Add(time.Minute), "primary")
	bare := listTurn("t1", "n", "chat-1", "u-1", "ok", base.Add(2*time.Minute))
	bare.Trace = nil
	mustAppend(t, e, unpriced, priced, bare)
	got := mustList(t, l, "t1", store.TurnFilter{})
	wantTurns(t, "cost unknown", got, "n", "p", "u")
	if len(got) == 3 && (got[0].CostUnknown || got[1].CostUnknown || !got[2].CostUnknown) {
		t.Errorf("cost unknown: listed as %v, %v, %v; want false, false, true", got[0].CostUnknown, got[1].CostUnknown, got[2].CostUnknown)
	}
}

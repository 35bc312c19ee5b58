package llm_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/llm/llmtest"
)

// fakeTime is the chain's clock in tests; Sleep advances it and records
// every wait.
type fakeTime struct {
	mu    sync.Mutex
	now   time.Time
	waits []time.Duration
}

func (f *fakeTime) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fakeTime) Sleep(ctx context.Context, d time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.waits = append(f.waits, d)
	f.now = f.now.Add(d)
	return ctx.Err()
}

func (f *fakeTime) Advance(d time.Duration) {
	f.mu.Lock()
	f.now = f.now.Add(d)
	f.mu.Unlock()
}

type model struct {
	*llmtest.Scripted
}

func newModel(provider, name string) model {
	s := llmtest.NewScripted()
	s.ProviderName, s.ModelName = provider, name
	return model{s}
}

func fail(kind llm.ErrorKind) llmtest.Reply { return llmtest.FailKind(kind, "scripted "+string(kind)) }

func newChain(t *testing.T, ft *fakeTime, coolDown time.Duration, entries ...llm.ChainEntry) *llm.Chain {
	t.Helper()
	c, err := llm.NewChain(llm.ChainConfig{Strategy: "balanced", Entries: entries, Now: ft.Now, Sleep: ft.Sleep, CoolDown: coolDown})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func kinds(atts []llm.Attempt) string {
	var parts []string
	for _, a := range atts {
		s := a.Kind + ":" + a.Model
		if a.Err != nil {
			s += ":" + string(llm.KindOf(a.Err))
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

func attemptsOf(resp llm.Response, err error) []llm.Attempt {
	var le *llm.Error
	if errors.As(err, &le) {
		return le.Attempts
	}
	return resp.Attempts
}

func TestChainPolicy(t *testing.T) {
	tests := []struct {
		name      string
		first     []llmtest.Reply // script of the first model
		second    []llmtest.Reply
		wantTrail string
		wantWaits []time.Duration
		wantErr   llm.ErrorKind // "" = success
	}{
		{"success", []llmtest.Reply{llmtest.Text("a")}, nil, "first:m1", nil, ""},
		{"transient retried once after 2s", []llmtest.Reply{fail(llm.ErrTransient), llmtest.Text("a")}, nil,
			"first:m1:transient retry:m1", []time.Duration{2 * time.Second}, ""},
		{"rate limit retried once", []llmtest.Reply{fail(llm.ErrRateLimited), llmtest.Text("a")}, nil,
			"first:m1:rate_limited retry:m1", []time.Duration{2 * time.Second}, ""},
		{"transient twice falls back", []llmtest.Reply{fail(llm.ErrTransient), fail(llm.ErrTransient)}, []llmtest.Reply{llmtest.Text("b")},
			"first:m1:transient retry:m1:transient fallback:m2", []time.Duration{2 * time.Second}, ""},
		{"auth not retried", []llmtest.Reply{fail(llm.ErrAuth)}, []llmtest.Reply{llmtest.Text("b")}, "first:m1:auth fallback:m2", nil, ""},
		{"billing not retried", []llmtest.Reply{fail(llm.ErrBilling)}, []llmtest.Reply{llmtest.Text("b")}, "first:m1:billing fallback:m2", nil, ""},
		{"bad request not retried", []llmtest.Reply{fail(llm.ErrBadRequest)}, []llmtest.Reply{llmtest.Text("b")}, "first:m1:bad_request fallback:m2", nil, ""},
		{"content policy not retried", []llmtest.Reply{fail(llm.ErrContentPolicy)}, []llmtest.Reply{llmtest.Text("b")}, "first:m1:content_policy fallback:m2", nil, ""},
		{"garbage not retried", []llmtest.Reply{fail(llm.ErrBadResponse)}, []llmtest.Reply{llmtest.Text("b")}, "first:m1:bad_response fallback:m2", nil, ""},
		{"second model not retried", []llmtest.Reply{fail(llm.ErrAuth)}, []llmtest.Reply{fail(llm.ErrTransient)},
			"first:m1:auth fallback:m2:transient", nil, llm.ErrTransient},
		{"all down", []llmtest.Reply{fail(llm.ErrTransient), fail(llm.ErrTransient)}, []llmtest.Reply{fail(llm.ErrTransient)},
			"first:m1:transient retry:m1:transient fallback:m2:transient", []time.Duration{2 * time.Second}, llm.ErrTransient},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ft := &fakeTime{now: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)}
			m1, m2 := newModel("p1", "m1"), newModel("p2", "m2")
			m1.Push(tc.first...)
			m2.Push(tc.second...)
			c := newChain(t, ft, 0, llm.ChainEntry{Provider: m1}, llm.ChainEntry{Provider: m2})
			resp, err := c.Complete(context.Background(), llm.Request{})
			if got := kinds(attemptsOf(resp, err)); got != tc.wantTrail {
				t.Errorf("attempts = %s, want %s", got, tc.wantTrail)
			}
			if len(ft.waits) != len(tc.wantWaits) || (len(ft.waits) > 0 && ft.waits[0] != tc.wantWaits[0]) {
				t.Errorf("waits = %v, want %v", ft.waits, tc.wantWaits)
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("error %v", err)
			case tc.wantErr != "" && llm.KindOf(err) != tc.wantErr:
				t.Fatalf("error kind %v (%v), want %s", llm.KindOf(err), err, tc.wantErr)
			}
			if m1.Remaining() != 0 || m2.Remaining() != 0 {
				t.Errorf("unused replies: m1 %d, m2 %d (a call that should have happened did not)", m1.Remaining(), m2.Remaining())
			}
		})
	}
}

func TestChainRetryAfter(t *testing.T) {
	ft := &fakeTime{now: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)}
	m1, m2 := newModel("p1", "m1"), newModel("p2", "m2")
	m1.Push(llmtest.Fail(&llm.Error{Kind: llm.ErrRateLimited, RetryAfter: 7 * time.Second}), llmtest.Text("ok"))
	c := newChain(t, ft, 0, llm.ChainEntry{Provider: m1}, llm.ChainEntry{Provider: m2})
	if _, err := c.Complete(context.Background(), llm.Request{}); err != nil {
		t.Fatal(err)
	}
	if len(ft.waits) != 1 || ft.waits[0] != 7*time.Second {
		t.Errorf("waits = %v, want the provider's 7s", ft.waits)
	}

	// A Retry-After that would pass the deadline is not waited for.
	m1.Push(llmtest.Fail(&llm.Error{Kind: llm.ErrRateLimited, RetryAfter: time.Minute}))
	m2.Push(llmtest.Text("ok"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := c.Complete(ctx, llm.Request{})
	if err != nil {
		t.Fatal(err)
	}
	if got := kinds(resp.Attempts); got != "first:m1:rate_limited fallback:m2" || !strings.Contains(resp.Attempts[0].Note, "deadline") {
		t.Errorf("attempts = %s (note %q)", got, resp.Attempts[0].Note)
	}
}

func TestChainBlocksProviderAcrossTurns(t *testing.T) {
	ft := &fakeTime{now: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)}
	small, large, other := newModel("fireworks", "gpt-oss-20b"), newModel("fireworks", "gpt-oss-120b"), newModel("mistral", "mistral-medium")
	c := newChain(t, ft, 10*time.Minute, llm.ChainEntry{Provider: small}, llm.ChainEntry{Provider: large}, llm.ChainEntry{Provider: other})

	// An auth error on one Fireworks model blocks both.
	small.Push(fail(llm.ErrAuth))
	other.Push(llmtest.Text("ok"))
	resp, err := c.Complete(context.Background(), llm.Request{})
	if err != nil {
		t.Fatal(err)
	}
	if got := kinds(resp.Attempts); got != "first:gpt-oss-20b:auth skipped:gpt-oss-120b:blocked fallback:mistral-medium" {
		t.Errorf("attempts = %s", got)
	}
	if !strings.Contains(resp.Attempts[0].Note, "blocked provider fireworks") {
		t.Errorf("block not noted: %q", resp.Attempts[0].Note)
	}

	// The next turn, during the cool-down, skips Fireworks without calling it.
	ft.Advance(9 * time.Minute)
	other.Push(llmtest.Text("ok"))
	resp, err = c.Complete(context.Background(), llm.Request{})
	if err != nil {
		t.Fatal(err)
	}
	if got := kinds(resp.Attempts); got != "skipped:gpt-oss-20b:blocked skipped:gpt-oss-120b:blocked first:mistral-medium" {
		t.Errorf("during cool-down: %s", got)
	}

	// After the cool-down it is tried again.
	ft.Advance(2 * time.Minute)
	small.Push(llmtest.Text("ok"))
	resp, err = c.Complete(context.Background(), llm.Request{})
	if err != nil || kinds(resp.Attempts) != "first:gpt-oss-20b" {
		t.Errorf("after cool-down: %s, %v", kinds(resp.Attempts), err)
	}
	for _, m := range []model{small, large, other} {
		if m.Remaining() != 0 {
			t.Errorf("%s has %d unused replies", m.Model(), m.Remaining())
		}
	}
}

// A bad request is one request's own: the HTTP 400 of one conversation's
// content, or a local check that refused a transcript before sending it,
// blocks the provider neither for the turn nor for anyone else.
func TestChainBadRequestBlocksNothing(t *testing.T) {
	ft := &fakeTime{now: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)}
	m1, m2 := newModel("p1", "m1"), newModel("p2", "m2")
	c := newChain(t, ft, 10*time.Minute, llm.ChainEntry{Provider: m1}, llm.ChainEntry{Provider: m2})
	for _, tc := range []struct {
		name     string
		err      *llm.Error
		wantNote string
	}{
		{"http 400", &llm.Error{Kind: llm.ErrBadRequest, Status: 400, Message: "messages[3]: content too long"}, "bad request: this request alone"},
		{"local check", &llm.Error{Kind: llm.ErrBadRequest, Message: `tool call ID "call_1" is used twice`}, "refused before sending"},
	} {
		turn := c.ForTurn()
		m1.Push(llmtest.Fail(tc.err), llmtest.Text("same turn"))
		m2.Push(llmtest.Text("fallback"))
		resp, err := turn.Complete(context.Background(), llm.Request{})
		if err != nil || resp.Text != "fallback" || kinds(resp.Attempts) != "first:m1:bad_request fallback:m2" {
			t.Fatalf("%s: %s %q %v", tc.name, kinds(resp.Attempts), resp.Text, err)
		}
		if note := resp.Attempts[0].Note; !strings.HasPrefix(note, tc.wantNote) || strings.Contains(note, "blocked") {
			t.Errorf("%s: note %q, want %q...", tc.name, note, tc.wantNote)
		}
		// The same turn's next request, and another conversation's in the
		// same second, reach the provider.
		if resp, err = turn.Complete(context.Background(), llm.Request{}); err != nil || kinds(resp.Attempts) != "first:m1" {
			t.Errorf("%s: same turn: %s %v", tc.name, kinds(resp.Attempts), err)
		}
		m1.Push(llmtest.Text("other conversation"))
		if resp, err = c.ForTurn().Complete(context.Background(), llm.Request{}); err != nil || kinds(resp.Attempts) != "first:m1" {
			t.Errorf("%s: another turn: %s %v", tc.name, kinds(resp.Attempts), err)
		}
	}
	if m1.Remaining() != 0 || m2.Remaining() != 0 {
		t.Errorf("unused replies: m1 %d, m2 %d", m1.Remaining(), m2.Remaining())
	}
}

func TestChainTurnBlockWithoutCoolDown(t *testing.T) {
	ft := &fakeTime{now: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)}
	m1, m2 := newModel("p1", "m1"), newModel("p2", "m2")
	c := newChain(t, ft, -1, llm.ChainEntry{Provider: m1}, llm.ChainEntry{Provider: m2})
	turn := c.ForTurn()
	m1.Push(fail(llm.ErrBilling))
	m2.Push(llmtest.Text("a"), llmtest.Text("b"))
	if _, err := turn.Complete(context.Background(), llm.Request{}); err != nil {
		t.Fatal(err)
	}
	// Later in the same turn: still blocked.
	resp, err := turn.Complete(context.Background(), llm.Request{})
	if err != nil || kinds(resp.Attempts) != "skipped:m1:blocked first:m2" {
		t.Errorf("same turn: %s %v", kinds(resp.Attempts), err)
	}
	// A new turn tries it again (no cool-down configured).
	m1.Push(llmtest.Text("c"))
	resp, err = c.ForTurn().Complete(context.Background(), llm.Request{})
	if err != nil || kinds(resp.Attempts) != "first:m1" {
		t.Errorf("next turn: %s %v", kinds(resp.Attempts), err)
	}
}

func TestChainStickAndAdvance(t *testing.T) {
	ft := &fakeTime{now: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)}
	m1, m2, m3 := newModel("p1", "m1"), newModel("p2", "m2"), newModel("p3", "m3")
	c := newChain(t, ft, 0, llm.ChainEntry{Provider: m1}, llm.ChainEntry{Provider: m2}, llm.ChainEntry{Provider: m3})
	turn := c.ForTurn()
	m1.Push(fail(llm.ErrContentPolicy))
	m2.Push(llmtest.Text("broken"), llmtest.Text("repaired"))
	if _, err := turn.Complete(context.Background(), llm.Request{}); err != nil {
		t.Fatal(err)
	}
	// The repair goes to the model that answered, not back to the first.
	turn.(llm.Sticky).Stick()
	resp, err := turn.Complete(context.Background(), llm.Request{Operation: "repair"})
	if err != nil || resp.Text != "repaired" || kinds(resp.Attempts) != "first:m2" {
		t.Fatalf("repair: %q %s %v", resp.Text, kinds(resp.Attempts), err)
	}
	if !turn.(llm.Sticky).Advance() {
		t.Fatal("Advance reports no model left after m2")
	}
	m3.Push(llmtest.Text("third"))
	resp, err = turn.Complete(context.Background(), llm.Request{})
	if err != nil || kinds(resp.Attempts) != "first:m3" {
		t.Errorf("advance: %s %v", kinds(resp.Attempts), err)
	}
	if turn.(llm.Sticky).Advance() {
		t.Error("Advance past the last model reports one left")
	}
}

func TestChainCanceled(t *testing.T) {
	ft := &fakeTime{now: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)}
	m1, m2 := newModel("p1", "m1"), newModel("p2", "m2")
	c := newChain(t, ft, 0, llm.ChainEntry{Provider: m1}, llm.ChainEntry{Provider: m2})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	m2.Push(llmtest.Text("should not be used"))
	_, err := c.Complete(ctx, llm.Request{})
	if llm.KindOf(err) != llm.ErrCanceled || m2.Remaining() != 1 {
		t.Errorf("canceled: %v, m2 remaining %d", err, m2.Remaining())
	}
}

func TestChainsShareBreaker(t *testing.T) {
	ft := &fakeTime{now: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)}
	breaker := &llm.Breaker{}
	fw, other := newModel("fireworks", "gpt-oss-20b"), newModel("mistral", "mistral-medium")
	mk := func(name string) *llm.Chain {
		c, err := llm.NewChain(llm.ChainConfig{Strategy: name, Breaker: breaker, Now: ft.Now, Sleep: ft.Sleep,
			Entries: []llm.ChainEntry{{Provider: fw}, {Provider: other}}})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	balanced, strong := mk("balanced"), mk("strong")
	fw.Push(fail(llm.ErrBilling))
	other.Push(llmtest.Text("a"), llmtest.Text("b"))
	if _, err := balanced.Complete(context.Background(), llm.Request{}); err != nil {
		t.Fatal(err)
	}
	resp, err := strong.Complete(context.Background(), llm.Request{})
	if err != nil || kinds(resp.Attempts) != "skipped:gpt-oss-20b:blocked first:mistral-medium" {
		t.Errorf("other strategy: %s %v", kinds(resp.Attempts), err)
	}
}

type protocolProvider struct {
	llm.Provider
	p llm.Protocol
}

func (p protocolProvider) Protocol() llm.Protocol { return p.p }

func TestChainProtocol(t *testing.T) {
	tools := protocolProvider{llmtest.NewScripted(), llm.ProtocolTools}
	chain := func(ps ...llm.Provider) *llm.Chain {
		var entries []llm.ChainEntry
		for _, p := range ps {
			entries = append(entries, llm.ChainEntry{Provider: p})
		}
		c, err := llm.NewChain(llm.ChainConfig{Strategy: "s", Entries: entries})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if got := llm.ProtocolOf(chain(tools, tools).ForTurn()); got != llm.ProtocolTools {
		t.Errorf("all tools: %s", got)
	}
	if got := llm.ProtocolOf(chain(tools, llmtest.NewScripted())); got != llm.ProtocolJSON {
		t.Errorf("mixed: %s, want json (the prompt must fit whichever answers)", got)
	}
}

package turn_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/llm/llmtest"
	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/turn"
	"github.com/arbiterhq/arbiter/turn/turntest"
)

// lookupTool is a read tool that records the queries it ran.
type lookupTool struct {
	mu   sync.Mutex
	runs []string
}

func (l *lookupTool) Spec() tool.Spec {
	return tool.Spec{
		Name:        "lookup",
		Description: "Look a ticket up.",
		InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["q"],"properties":{"q":{"type":"string","pattern":"^turn-[0-9]+$"}}}`),
		Policy:      tool.Policy{Risk: tool.RiskRead},
	}
}

func (l *lookupTool) Call(ctx context.Context, c tool.Call) (tool.Result, error) {
	var a struct{ Q string }
	_ = json.Unmarshal(c.Args, &a)
	l.mu.Lock()
	l.runs = append(l.runs, a.Q)
	l.mu.Unlock()
	return tool.Result{Status: tool.StatusOK, Text: "found " + a.Q}, nil
}

// TestChaosFallback drives 2,000 turns through a primary model that fails
// at random — 30% transient errors, 5% malformed answers, 2% auth errors —
// with a healthy secondary behind it, all on a fake clock. Every turn must
// end with a validated decision or a clear failure reply; no tool may run
// from output that did not validate; a non-recoverable error is never
// retried.
func TestChaosFallback(t *testing.T) {
	const turns = 2000
	clock := turntest.NewClock()
	rng := rand.New(rand.NewPCG(7, 11))
	var mu sync.Mutex
	turnRE := regexp.MustCompile(`turn-[0-9]+`)
	turnOf := func(req llm.Request) string {
		if q := turnRE.FindString(req.Messages[len(req.Messages)-1].Content); q != "" {
			return q
		}
		return "turn-0"
	}
	valid := func(q string) string {
		return fmt.Sprintf(`{"say":"","tool":"lookup","args":{"q":%q},"done":false,"newTopic":false,"buttons":[]}`, q)
	}
	// A malformed answer proposes the tool with arguments that break its
	// schema: if anything ran it, the tool would record a bad query.
	malformed := func(q string) string {
		return fmt.Sprintf(`{"say":"","tool":"lookup","args":{"q":"DROP %s"},"done":false,"newTopic":false,"buttons":[]}`, q)
	}
	primary := llmtest.NewScripted()
	primary.ProviderName, primary.ModelName = "flaky", "primary-model"
	secondary := llmtest.NewScripted()
	secondary.ProviderName, secondary.ModelName = "steady", "secondary-model"
	var outcomes struct{ transient, malformed, auth, ok int }
	answer := func(ctx context.Context, req llm.Request) (llm.Response, error) {
		mu.Lock()
		defer mu.Unlock()
		clock.Advance(200 * time.Millisecond)
		q := turnOf(req)
		switch r := rng.Float64(); {
		case r < 0.30:
			outcomes.transient++
			return llm.Response{}, &llm.Error{Kind: llm.ErrTransient, Provider: "flaky", Model: "primary-model", Message: "503"}
		case r < 0.35:
			outcomes.malformed++
			return llm.Response{Text: malformed(q), Provider: "flaky", Model: "primary-model"}, nil
		case r < 0.37:
			outcomes.auth++
			return llm.Response{}, &llm.Error{Kind: llm.ErrAuth, Provider: "flaky", Model: "primary-model", Message: "401"}
		}
		outcomes.ok++
		return llm.Response{Text: valid(q), Provider: "flaky", Model: "primary-model"}, nil
	}
	steady := func(ctx context.Context, req llm.Request) (llm.Response, error) {
		clock.Advance(400 * time.Millisecond)
		return llm.Response{Text: valid(turnOf(req)), Provider: "steady", Model: "secondary-model"}, nil
	}
	for range 5 * turns {
		primary.Push(llmtest.Func(answer))
		secondary.Push(llmtest.Func(steady))
	}
	chain, err := llm.NewChain(llm.ChainConfig{
		Strategy: "balanced", Entries: []llm.ChainEntry{{Provider: primary}, {Provider: secondary}},
		CoolDown: 30 * time.Second, Now: clock.Now,
		Sleep: func(ctx context.Context, d time.Duration) error { clock.Advance(d); return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	lookup := &lookupTool{}
	reg, err := tool.NewRegistry(lookup)
	if err != nil {
		t.Fatal(err)
	}
	e := turntest.New(t, turn.Config{Tools: reg,
		Tenants: map[string]turn.Tenant{"t": {ID: "t", Language: "en", Roles: map[string]turn.Role{"agent": {Tools: []string{"*"}}}}},
	}, turntest.WithClock(clock), turntest.WithModel(chain))
	eng, st := e.Engine, e.Store
	id := chat.Identity{TenantID: "t", UserID: "u", Role: "agent", Scopes: []chat.Scope{chat.ScopeRead}}

	var added []time.Duration
	validated, failedClearly, retriedNonRecoverable := 0, 0, 0
	for i := range turns {
		q := fmt.Sprintf("turn-%d", i)
		start := clock.Now()
		out, err := eng.HandleTurn(context.Background(), chat.Inbound{Identity: id, Chat: fmt.Sprintf("c%d", i%40), Text: "look up " + q})
		if err != nil {
			t.Fatalf("%s: no reply: %v", q, err)
		}
		// The healthy path takes one 200 ms call; everything above is what
		// retries and fallbacks added.
		added = append(added, clock.Now().Sub(start)-200*time.Millisecond)
		switch {
		case len(out.Executed) == 1 && out.Executed[0].Status == "ok":
			validated++
		case strings.Contains(out.Say, "rephrase") || strings.Contains(out.Say, "unavailable"):
			failedClearly++
		default:
			t.Fatalf("%s: neither a validated decision nor a clear failure: %+v", q, out)
		}
		rec, err := st.GetTurn(context.Background(), "t", out.TurnID)
		if err != nil {
			t.Fatal(err)
		}
		for j, c := range rec.LLMCalls {
			if (c.Status == string(llm.ErrAuth)) && j+1 < len(rec.LLMCalls) && rec.LLMCalls[j+1].Attempt == llm.AttemptRetry && rec.LLMCalls[j+1].Model == c.Model {
				retriedNonRecoverable++
			}
		}
		clock.Advance(time.Second)
	}
	if validated+failedClearly != turns {
		t.Errorf("%d validated + %d clear failures != %d turns", validated, failedClearly, turns)
	}
	if retriedNonRecoverable != 0 {
		t.Errorf("%d retries of non-recoverable errors", retriedNonRecoverable)
	}
	// Every tool run came from a validated decision: only well-formed
	// queries, exactly one per validated turn.
	for _, q := range lookup.runs {
		if !strings.HasPrefix(q, "turn-") {
			t.Fatalf("a tool ran from unvalidated output: %q", q)
		}
	}
	if len(lookup.runs) != validated {
		t.Errorf("%d tool runs for %d validated turns", len(lookup.runs), validated)
	}
	sort.Slice(added, func(i, j int) bool { return added[i] < added[j] })
	p50, p99 := added[len(added)/2], added[len(added)*99/100]
	t.Logf("primary outcomes: %+v; turns validated %d, clear failures %d; added latency from retries and fallback p50 %s, p99 %s",
		outcomes, validated, failedClearly, p50, p99)
	if outcomes.auth == 0 || outcomes.malformed == 0 || outcomes.transient == 0 {
		t.Errorf("the random primary did not produce every failure kind: %+v", outcomes)
	}
}

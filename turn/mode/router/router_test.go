package router_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/llm/llmtest"
	"github.com/arbiterhq/arbiter/store/sqlitestore"
	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/turn"
	"github.com/arbiterhq/arbiter/turn/mode/router"
	"github.com/arbiterhq/arbiter/turn/turntest"
)

// routerBench is a router assistant over recording tools, one of which
// needs Google connected.
type routerBench struct {
	t     *testing.T
	eng   *turn.Engine
	st    *sqlitestore.Store
	model *llmtest.Scripted
	ran   map[string][]string
	// proposed are the router's calls in the record the observer saw
	// last.
	proposed []string
}

type recTool struct {
	spec tool.Spec
	b    *routerBench
}

func (r recTool) Spec() tool.Spec { return r.spec }
func (r recTool) Call(ctx context.Context, c tool.Call) (tool.Result, error) {
	r.b.ran[r.spec.Name] = append(r.b.ran[r.spec.Name], string(c.Args))
	return tool.Result{Status: tool.StatusOK, Text: "done " + r.spec.Name}, nil
}

func newRouterBench(t *testing.T, settings router.Settings) *routerBench {
	return newRouterBenchOver(t, settings, nil)
}

// newRouterBenchOver is newRouterBench with the scripted model behind
// wrap (nil: the model itself).
func newRouterBenchOver(t *testing.T, settings router.Settings, wrap func(llm.Provider) llm.Provider) *routerBench {
	b := &routerBench{t: t, model: llmtest.NewScripted(), ran: map[string][]string{}}
	var model llm.Provider = b.model
	if wrap != nil {
		model = wrap(model)
	}
	schema := json.RawMessage(`{"type":"object","properties":{"prompt":{"type":"string"},"query":{"type":"string"}}}`)
	reg, err := tool.NewRegistry(
		recTool{tool.Spec{Name: "generate_image", Description: "draw", InputSchema: schema, Policy: tool.Policy{Risk: tool.RiskRead}}, b},
		recTool{tool.Spec{Name: "web_search", Description: "search", InputSchema: schema, Policy: tool.Policy{Risk: tool.RiskRead}}, b},
		recTool{tool.Spec{Name: "gmail_search", Description: "mail", InputSchema: schema, Policy: tool.Policy{Risk: tool.RiskRead, Requires: "google"}}, b},
		recTool{tool.Spec{Name: "save_note", Description: "note", InputSchema: schema, Policy: tool.Policy{Risk: tool.RiskWriteSafe, Confirm: tool.ConfirmNever}}, b},
		recTool{tool.Spec{Name: "card_status", Description: "card", InputSchema: schema, Policy: tool.Policy{Risk: tool.RiskRead, Redact: []string{"card"}}}, b},
	)
	if err != nil {
		t.Fatal(err)
	}
	observe := func(tr *turn.Trace) {
		var rt router.Trace
		if tr.Section(router.Name, &rt) {
			b.proposed = slices.Clone(rt.Proposed)
		}
	}
	e := turntest.New(t, turn.Config{Tools: reg, Observe: observe,
		Assistants: map[string]turn.Assistant{"main": {Mode: router.Name, Settings: &settings}},
		Tenants:    map[string]turn.Tenant{"t": {ID: "t", Language: "ru", Assistant: "main", Roles: map[string]turn.Role{"user": {Tools: []string{"*"}}}}}},
		turntest.WithModel(model))
	b.eng, b.st = e.Engine, e.Store
	return b
}

func (b *routerBench) send(id chat.Identity, in chat.Inbound) chat.Outbound {
	b.t.Helper()
	in.Identity, in.Chat = id, "c"
	out, err := b.eng.HandleTurn(context.Background(), in)
	if err != nil {
		b.t.Fatal(err)
	}
	return out
}

func respond(text string) llmtest.Reply {
	args, _ := json.Marshal(map[string]string{"text": text})
	return llmtest.ToolCalls("", llm.ToolCall{ID: "r", Name: "respond", Arguments: args})
}

var user = chat.Identity{TenantID: "t", UserID: "u", Role: "user", Scopes: []chat.Scope{chat.ScopeRead}}

// A tool that needs an integration is shown to the router only for a user
// who connected it, and does not run for anyone else.
func TestConditionalCatalog(t *testing.T) {
	b := newRouterBench(t, router.Settings{})
	search := llm.ToolCall{ID: "g", Name: "gmail_search", Arguments: json.RawMessage(`{"query":"банк"}`)}
	b.model.Push(llmtest.ToolCalls("", search), respond("Писем не нашёл."))
	b.send(user, chat.Inbound{Text: "найди письмо от банка"})
	if names := toolNames(b.model.Requests()[0].Tools); strings.Contains(names, "gmail_search") || len(b.ran["gmail_search"]) != 0 {
		t.Errorf("without Google: offered %s, ran %v", names, b.ran)
	}
	connected := user
	connected.UserID, connected.Connected = "g", []string{"google"}
	b.model.Push(llmtest.ToolCalls("", search), respond("Нашёл два письма."))
	b.send(connected, chat.Inbound{Text: "найди письмо от банка"})
	if names := toolNames(b.model.Requests()[2].Tools); !strings.Contains(names, "gmail_search") || len(b.ran["gmail_search"]) != 1 {
		t.Errorf("with Google: offered %s, ran %v", names, b.ran)
	}
}

func toolNames(defs []llm.ToolDef) string {
	var out []string
	for _, d := range defs {
		out = append(out, d.Name)
	}
	return strings.Join(out, ",")
}

// While a generation mode is on, the text is its prompt: no model call.
func TestGenerationIntercept(t *testing.T) {
	b := newRouterBench(t, router.Settings{Intercepts: []string{"generation"}, Generation: map[string]string{"image": "generate_image"}})
	out := b.send(user, chat.Inbound{Text: "кот в космосе, акварель", Client: &chat.ClientHint{ActiveMode: "image"}})
	if got := b.ran["generate_image"]; len(got) != 1 || got[0] != `{"prompt":"кот в космосе, акварель"}` || b.model.Calls() != 0 || out.Say != "done generate_image" {
		t.Errorf("ran %v, model calls %d, reply %q", b.ran, b.model.Calls(), out.Say)
	}
}

// A call an intercept makes goes through the same guards, and a refusal
// is journaled under the rule that made it ("router:generation"), not as
// one of the engine's own paths.
func TestInterceptCallIsGuardedUnderItsRule(t *testing.T) {
	b := newRouterBench(t, router.Settings{Intercepts: []string{"generation"}, Generation: map[string]string{"image": "gmail_search"}})
	out := b.send(user, chat.Inbound{Text: "кот в космосе", Client: &chat.ClientHint{ActiveMode: "image"}})
	if len(b.ran["gmail_search"]) != 0 || b.model.Calls() != 0 {
		t.Fatalf("ran %v, model calls %d: a tool the user has not connected ran", b.ran, b.model.Calls())
	}
	rec, err := b.st.GetTurn(context.Background(), "t", out.TurnID)
	if err != nil {
		t.Fatal(err)
	}
	var tr turn.Trace
	if err := json.Unmarshal(rec.Trace, &tr); err != nil || len(tr.Vetoes) != 1 || tr.Vetoes[0].Guard != "router:generation" || tr.Vetoes[0].Tool != "gmail_search" {
		t.Errorf("vetoes %+v (%v), want the call refused under router:generation", tr.Vetoes, err)
	}
}

// deadlines records how long each call was given, by operation.
type deadlines struct {
	llm.Provider
	mu   sync.Mutex
	left map[string]time.Duration
}

func (d *deadlines) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	if dl, ok := ctx.Deadline(); ok {
		d.mu.Lock()
		d.left[req.Operation] = time.Until(dl)
		d.mu.Unlock()
	}
	return d.Provider.Complete(ctx, req)
}

// The router's call is given the article's 15 seconds, unless configured
// otherwise, and its request the article's parameters.
func TestRouterCallLimits(t *testing.T) {
	for _, c := range []struct {
		timeout time.Duration
		want    time.Duration
	}{{0, 15 * time.Second}, {3 * time.Second, 3 * time.Second}} {
		d := &deadlines{left: map[string]time.Duration{}}
		b := newRouterBenchOver(t, router.Settings{Timeout: c.timeout}, func(p llm.Provider) llm.Provider { d.Provider = p; return d })
		b.model.Push(llmtest.Text("no tool"), respond("Привет!"))
		b.send(user, chat.Inbound{Text: "привет"})
		left, ok := d.left["route"]
		if !ok || left > c.want || left < c.want-2*time.Second {
			t.Errorf("timeout %v: the router's call was given %v (deadline set: %v), want %v", c.timeout, left, ok, c.want)
		}
		r := b.model.Requests()[0]
		if r.Operation != "route" || r.Temperature != 0 || r.MaxTokens != router.MaxTokens || r.ToolChoice.Mode != llm.ToolAuto || router.MaxTokens != 500 || router.Messages != 6 {
			t.Errorf("router request: operation %q, temperature %v, max tokens %d, tool choice %v", r.Operation, r.Temperature, r.MaxTokens, r.ToolChoice)
		}
	}
}

// A call that succeeded before with the same arguments is not repeated.
func TestRepeatedCallGuard(t *testing.T) {
	b := newRouterBench(t, router.Settings{Guards: []router.GuardRule{{Guard: "repeated_call"}}})
	again := llm.ToolCall{ID: "w", Name: "web_search", Arguments: json.RawMessage(`{"query": "погода"}`)}
	for i := range 2 {
		b.model.Push(llmtest.ToolCalls("", again), respond("ok"))
		b.send(user, chat.Inbound{Text: "ещё раз"})
		if n := len(b.ran["web_search"]); n != 1 {
			t.Errorf("after %d asks web_search ran %d times", i+1, n)
		}
	}
}

func TestRouterConfigErrors(t *testing.T) {
	st := turntest.OpenStore(t, nil)
	for _, tt := range []struct {
		a    map[string]turn.Assistant
		want string
	}{
		{map[string]turn.Assistant{"m": {Mode: router.Name}}, "needs a router section"},
		{map[string]turn.Assistant{"m": {Mode: router.Name, Settings: &router.Settings{Intercepts: []string{"telepathy"}}}}, `unknown intercept "telepathy"`},
		{map[string]turn.Assistant{"m": {Mode: router.Name, Settings: &router.Settings{Guards: []router.GuardRule{{Guard: "vibes"}}}}}, `unknown guard "vibes"`},
		{map[string]turn.Assistant{"m": {Mode: router.Name, Settings: &router.Settings{Skills: []router.Skill{{ID: "health", Assistant: "nobody"}}}}}, `no assistant "nobody"`},
		{map[string]turn.Assistant{"m": {Mode: router.Name, Settings: &router.Settings{WebSearch: "bing"}}}, `router tool "bing" is not registered`},
		{map[string]turn.Assistant{"m": {Mode: router.Name, Settings: &router.Settings{Intercepts: []string{"photo"}}}}, "intercept photo needs generation.image"},
		{map[string]turn.Assistant{"m": {Mode: router.Name, Settings: &router.Settings{Guards: []router.GuardRule{{Guard: "creation"}}}}}, "creation needs the word lists create_verbs, content_nouns"},
		{map[string]turn.Assistant{"m": {Mode: router.Name, Settings: &router.Settings{Skills: []router.Skill{{ID: "health", Assistant: "h"}}}}, "h": {}}, "skills needs the word lists leave_skill"},
	} {
		_, err := turntest.Build(t, turn.Config{Assistants: tt.a}, turntest.WithStore(st), turntest.WithModel(nil))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("err = %v, want %q", err, tt.want)
		}
	}
}

// One write twice in the router's answer is one write: the repeat is
// journaled as dropped.
func TestRouterRepeatedWriteIsOne(t *testing.T) {
	b := newRouterBench(t, router.Settings{})
	writer := user
	writer.Scopes = []chat.Scope{chat.ScopeRead, chat.ScopeWriteSafe}
	b.model.Push(llmtest.ToolCalls("",
		llm.ToolCall{ID: "n1", Name: "save_note", Arguments: json.RawMessage(`{"prompt":"купить хлеб"}`)},
		llm.ToolCall{ID: "n2", Name: "save_note", Arguments: json.RawMessage(`{ "prompt" : "купить хлеб" }`)},
	), respond("Записал."))
	out := b.send(writer, chat.Inbound{Text: "запиши: купить хлеб"})
	if n := len(b.ran["save_note"]); n != 1 {
		t.Errorf("save_note ran %d times, want once", n)
	}
	rec, err := b.st.GetTurn(context.Background(), "t", out.TurnID)
	if err != nil || !strings.Contains(string(rec.Trace), `"guard":"router","tool":"save_note","reason":"repeat_dropped"`) {
		t.Errorf("the repeat is not journaled as dropped (%v): %s", err, rec.Trace)
	}
}

// The router and the answer each read the user's message once, and the
// conversation remembers it once: the engine records it before the mode
// runs, and the mode does not again.
func TestRouterReadsTheMessageOnce(t *testing.T) {
	b := newRouterBench(t, router.Settings{})
	b.model.Push(respond("Привет!"), respond("Привет!"), respond("Снова привет!"), respond("Снова привет!"))
	b.send(user, chat.Inbound{Text: "привет"})
	b.send(user, chat.Inbound{Text: "и снова"})
	reqs := b.model.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d model requests, want the router's and the answer's of each turn", len(reqs))
	}
	for i, want := range map[int]map[string]int{0: {"привет": 1}, 1: {"привет": 1}, 2: {"привет": 1, "и снова": 1}, 3: {"привет": 1, "и снова": 1}} {
		seen := map[string]int{}
		for _, m := range reqs[i].Messages {
			if m.Role == llm.RoleUser {
				seen[m.Content]++
			}
		}
		for text, n := range want {
			if seen[text] != n {
				t.Errorf("request %d holds %q %d times, want %d: %v", i, text, seen[text], n, seen)
			}
		}
	}
}

// A value of a field its tool redacts is never written down as it was:
// not in the journal's record (the user's own words included), and not
// among the router's proposed calls the observer sees.
func TestRouterProposalsAreRedacted(t *testing.T) {
	b := newRouterBench(t, router.Settings{})
	const card = "4111111111111111"
	b.model.Push(llmtest.ToolCalls("", llm.ToolCall{ID: "c", Name: "card_status", Arguments: json.RawMessage(`{"card":"` + card + `"}`)}), respond("Карта активна."))
	out := b.send(user, chat.Inbound{Text: "проверь карту " + card})
	if len(b.ran["card_status"]) != 1 {
		t.Fatalf("card_status ran %v", b.ran)
	}
	rec, err := b.st.GetTurn(context.Background(), "t", out.TurnID)
	if err != nil {
		t.Fatal(err)
	}
	var tr turn.Trace
	var rt router.Trace
	if err := json.Unmarshal(rec.Trace, &tr); err != nil || !tr.Section(router.Name, &rt) || len(rt.Proposed) != 1 || !strings.Contains(rt.Proposed[0], "hmac:") {
		t.Fatalf("router record %+v (%v), want the proposed call with its card hashed", rt, err)
	}
	if strings.Contains(string(rec.Trace), card) {
		t.Errorf("the card is journaled as it was: %s", rec.Trace)
	}
	if len(b.proposed) != 1 || strings.Contains(b.proposed[0], card) {
		t.Errorf("the observer saw the router's calls %q, want the card hashed", b.proposed)
	}
}

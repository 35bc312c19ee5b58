package turn_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/llm/llmtest"
	"github.com/arbiterhq/arbiter/store/sqlitestore"
	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/turn"
)

// routerBench is a router assistant over recording tools, one of which
// needs Google connected.
type routerBench struct {
	t     *testing.T
	eng   *turn.Engine
	st    *sqlitestore.Store
	model *llmtest.Scripted
	ran   map[string][]string
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

func newRouterBench(t *testing.T, router turn.Router) *routerBench {
	b := &routerBench{t: t, model: llmtest.NewScripted(), ran: map[string][]string{}}
	schema := json.RawMessage(`{"type":"object","properties":{"prompt":{"type":"string"},"query":{"type":"string"}}}`)
	reg, err := tool.NewRegistry(
		recTool{tool.Spec{Name: "generate_image", Description: "draw", Risk: tool.RiskRead, InputSchema: schema}, b},
		recTool{tool.Spec{Name: "web_search", Description: "search", Risk: tool.RiskRead, InputSchema: schema}, b},
		recTool{tool.Spec{Name: "gmail_search", Description: "mail", Risk: tool.RiskRead, Requires: "google", InputSchema: schema}, b},
		recTool{tool.Spec{Name: "save_note", Description: "note", Risk: tool.RiskWriteSafe, Confirm: tool.ConfirmNever, InputSchema: schema}, b},
	)
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlitestore.Open(filepath.Join(t.TempDir(), "r.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	b.st = st
	b.eng, err = turn.New(turn.Config{State: st, Locker: st, Journal: st, Tools: reg, Model: b.model,
		Assistants: map[string]turn.Assistant{"main": {Mode: turn.ModeRouter, Router: &router}},
		Tenants:    map[string]turn.Tenant{"t": {ID: "t", Language: "ru", Assistant: "main", Roles: map[string]turn.Role{"user": {Tools: []string{"*"}}}}}})
	if err != nil {
		t.Fatal(err)
	}
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
	b := newRouterBench(t, turn.Router{})
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
	b := newRouterBench(t, turn.Router{Intercepts: []string{"generation"}, Generation: map[string]string{"image": "generate_image"}})
	out := b.send(user, chat.Inbound{Text: "кот в космосе, акварель", Client: &chat.ClientHint{ActiveMode: "image"}})
	if got := b.ran["generate_image"]; len(got) != 1 || got[0] != `{"prompt":"кот в космосе, акварель"}` || b.model.Calls() != 0 || out.Say != "done generate_image" {
		t.Errorf("ran %v, model calls %d, reply %q", b.ran, b.model.Calls(), out.Say)
	}
}

// A call that succeeded before with the same arguments is not repeated.
func TestRepeatedCallGuard(t *testing.T) {
	b := newRouterBench(t, turn.Router{Guards: []turn.GuardRule{{Guard: "repeated_call"}}})
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
	st, err := sqlitestore.Open(filepath.Join(t.TempDir(), "e.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, tt := range []struct {
		a    map[string]turn.Assistant
		want string
	}{
		{map[string]turn.Assistant{"m": {Mode: turn.ModeRouter}}, "needs a router section"},
		{map[string]turn.Assistant{"m": {Mode: turn.ModeRouter, Router: &turn.Router{Intercepts: []string{"telepathy"}}}}, `unknown intercept "telepathy"`},
		{map[string]turn.Assistant{"m": {Mode: turn.ModeRouter, Router: &turn.Router{Guards: []turn.GuardRule{{Guard: "vibes"}}}}}, `unknown guard "vibes"`},
		{map[string]turn.Assistant{"m": {Mode: turn.ModeRouter, Router: &turn.Router{Skills: []turn.Skill{{ID: "health", Assistant: "nobody"}}}}}, `no assistant "nobody"`},
		{map[string]turn.Assistant{"m": {Mode: turn.ModeRouter, Router: &turn.Router{WebSearch: "bing"}}}, `router tool "bing" is not registered`},
	} {
		_, err := turn.New(turn.Config{State: st, Locker: st, Journal: st, Assistants: tt.a})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("err = %v, want %q", err, tt.want)
		}
	}
}

// One write twice in the router's answer is one write: the repeat is
// journaled as dropped.
func TestRouterRepeatedWriteIsOne(t *testing.T) {
	b := newRouterBench(t, turn.Router{})
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

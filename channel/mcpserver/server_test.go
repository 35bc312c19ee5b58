package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arbiterhq/arbiter/channel/mcpserver/mcpservertest"
	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/tool"
)

var me = chat.Identity{TenantID: "t1", UserID: "u1", Name: "Ann", Role: "owner", Language: "en", Scopes: []chat.Scope{chat.ScopeRead, chat.ScopeWriteFull}}

const payConfirmation = "Pay\n• amount: 5\n• to: Bob\nConfirm?"

// fake is an engine that records every inbound and answers by tool name:
// list (read) runs, fail runs with an error, pay (write:full) asks for
// confirmation, boom cannot be processed, anything else is refused.
type fake struct {
	mu      sync.Mutex
	ins     []chat.Inbound
	pending int
}

func (f *fake) Catalog(id chat.Identity) []tool.Spec {
	if !reflect.DeepEqual(id, me) {
		panic("catalog of another identity")
	}
	return []tool.Spec{
		{
			Name:        "list",
			Title:       "Список",
			Titles:      tool.Localized{"ru": "Список", "en": "List"},
			Description: "List things.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}},"additionalProperties":false}`),
			Policy:      tool.Policy{Risk: tool.RiskRead, Confirm: tool.ConfirmNever},
		},
		{
			Name:        "note",
			Title:       "Note",
			Description: "Write a note.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
			Policy:      tool.Policy{Risk: tool.RiskWriteSafe, Idempotent: true},
		},
		{
			Name:        "pay",
			Title:       "Pay",
			Description: "Pay someone.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"amount":{"type":"integer"},"to":{"type":"string"}}}`),
			Policy:      tool.Policy{Risk: tool.RiskWriteFull, Confirm: tool.ConfirmAlways},
		},
		{Name: "fail", InputSchema: json.RawMessage(`{"type":"object"}`), Policy: tool.Policy{Risk: tool.RiskRead}},
		{Name: "boom", InputSchema: json.RawMessage(`{"type":"object"}`), Policy: tool.Policy{Risk: tool.RiskRead}},
		{Name: "odd", InputSchema: json.RawMessage(`{"type":"string"}`), Policy: tool.Policy{Risk: tool.RiskRead}},
		{Name: "ask", InputSchema: json.RawMessage(`{"type":"object"}`), Policy: tool.Policy{Risk: tool.RiskRead}},
	}
}

func (f *fake) HandleTurn(ctx context.Context, in chat.Inbound) (chat.Outbound, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ins = append(f.ins, in)
	switch {
	case strings.HasPrefix(in.Button, "confirm:"):
		return chat.Outbound{Say: "Paid.", Executed: []chat.Execution{{Tool: "pay", Status: "ok", Result: json.RawMessage(`{"paid":true}`)}}}, nil
	case strings.HasPrefix(in.Button, "cancel:"):
		return chat.Outbound{Say: "Cancelled."}, nil
	case in.Call == nil:
		return chat.Outbound{Say: "?"}, nil
	}
	switch in.Call.Tool {
	case "list":
		return chat.Outbound{Say: "2 things", Executed: []chat.Execution{{Tool: "list", Args: in.Call.Args, Status: "ok", Result: json.RawMessage(`{"n":2}`)}}}, nil
	case "fail":
		return chat.Outbound{Say: "It broke.", Executed: []chat.Execution{{Tool: "fail", Status: "error", Error: "backend down"}}}, nil
	case "pay":
		f.pending++
		id := fmt.Sprintf("p%d", f.pending)
		return chat.Outbound{Say: payConfirmation, Pending: &chat.PendingView{Tool: "pay", Args: in.Call.Args},
			Buttons: []chat.Button{{Label: "Yes", Value: "confirm:" + id}, {Label: "No", Value: "cancel:" + id}}}, nil
	case "boom":
		return chat.Outbound{}, errors.New("store unavailable")
	case "ask":
		// A tool that reports progress and asks the user mid-call.
		l := in.Live
		if l == nil {
			return chat.Outbound{Say: "no live"}, nil
		}
		l.Progress(chat.Progress{Step: "Ask", Done: 1, Total: 2, Message: "half way"})
		a, err := l.Ask(ctx, chat.Question{Text: "Which colour?", Choices: []chat.Button{{Label: "Red", Value: "r"}, {Label: "Blue", Value: "b"}}})
		if err != nil {
			return chat.Outbound{Say: "No answer.", Executed: []chat.Execution{{Tool: "ask", Status: "error", Error: err.Error()}}}, nil
		}
		// The turn's own step, then the tool's count again, lower than
		// the progress sent by then.
		l.(chat.Streamer).Step(chat.Step{Kind: chat.StepApproval, Name: "ask", Text: "Waits for approval…"})
		l.Progress(chat.Progress{Step: "Ask", Done: 2, Total: 2, Message: "done"})
		return chat.Outbound{Say: "Got it.", Executed: []chat.Execution{{Tool: "ask", Status: "ok", Result: json.RawMessage(`{"choice":"` + a.Choice + `"}`)}}}, nil
	}
	return chat.Outbound{Say: "This action is not available."}, nil
}

func (f *fake) inbounds() []chat.Inbound {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]chat.Inbound(nil), f.ins...)
}

// buttons returns the buttons pressed, in order.
func (f *fake) buttons() []string {
	var out []string
	for _, in := range f.inbounds() {
		if in.Button != "" {
			out = append(out, in.Button)
		}
	}
	return out
}

type setup struct {
	fake   *fake
	server *Server
	client *mcp.ClientSession
}

// connect serves a Server over in-memory transports to a real client on
// the given protocol version ("" for the latest).
func connect(t *testing.T, copts *mcp.ClientOptions, version string, timeout time.Duration) *setup {
	t.Helper()
	f := &fake{}
	srv, err := New(Config{Handler: f, Identity: me, ConfirmTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.MCP().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	client := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, copts)
	cs, err := client.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return &setup{fake: f, server: srv, client: cs}
}

func (s *setup) call(t *testing.T, name string, args any) *mcp.CallToolResult {
	t.Helper()
	return mcpservertest.Call(t, s.client, name, args)
}

func status(t *testing.T, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	m, ok := res.StructuredContent.(map[string]any)
	if !ok {
		t.Fatalf("structuredContent %T %v", res.StructuredContent, res.StructuredContent)
	}
	return m
}

// versions are the protocol versions a client may speak: the latest asks
// for input by result and retry, the older ones by a request of the server.
var versions = []string{"", "2025-11-25", "2025-06-18"}

func TestToolsListed(t *testing.T) {
	s := connect(t, nil, "", 0)
	tools := mcpservertest.Tools(t, s.client)
	if len(tools) != 6 || tools["odd"] != nil {
		t.Fatalf("tools %v; want the six with object schemas", keys(tools))
	}
	list, note, pay := tools["list"], tools["note"], tools["pay"]
	// The title in the key's user's language (the default title is Russian).
	if list.Title != "List" || list.Annotations.Title != "List" || list.Description != "List things." {
		t.Errorf("list: title %q description %q", list.Title, list.Description)
	}
	var want any
	json.Unmarshal([]byte(`{"type":"object","properties":{"q":{"type":"string"}},"additionalProperties":false}`), &want)
	if !reflect.DeepEqual(list.InputSchema, want) {
		t.Errorf("list schema %v", list.InputSchema)
	}
	check := func(name string, a *mcp.ToolAnnotations, readOnly bool, destructive, openWorld *bool, idempotent bool) {
		t.Helper()
		if a == nil {
			t.Fatalf("%s: no annotations", name)
		}
		if a.ReadOnlyHint != readOnly || !reflect.DeepEqual(a.DestructiveHint, destructive) ||
			!reflect.DeepEqual(a.OpenWorldHint, openWorld) || a.IdempotentHint != idempotent {
			t.Errorf("%s: annotations %+v", name, a)
		}
	}
	f, tr := false, true
	check("list", list.Annotations, true, nil, nil, false)
	check("note", note.Annotations, false, &f, &f, true)
	check("pay", pay.Annotations, false, &tr, &tr, false)
	for name, want := range map[string][2]string{"list": {"read", "never"}, "note": {"write:safe", "never"}, "pay": {"write:full", "always"}} {
		m := tools[name].Meta
		if m[MetaRisk] != want[0] || m[MetaConfirm] != want[1] {
			t.Errorf("%s: _meta %v", name, m)
		}
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestCallRunsAsTurn(t *testing.T) {
	s := connect(t, nil, "", 0)
	res := s.call(t, "list", map[string]any{"q": "x"})
	if res.IsError || mcpservertest.Text(res) != "2 things" {
		t.Fatalf("result %v %q", res.IsError, mcpservertest.Text(res))
	}
	st := status(t, res)
	if st["status"] != "ok" || !reflect.DeepEqual(st["result"], map[string]any{"n": float64(2)}) {
		t.Errorf("structured %v", st)
	}
	ins := s.fake.inbounds()
	if len(ins) != 1 {
		t.Fatalf("inbounds %v", ins)
	}
	in := ins[0]
	if in.Channel != "mcp" || !reflect.DeepEqual(in.Identity, me) || in.Call == nil || in.Call.Tool != "list" ||
		string(in.Call.Args) != `{"q":"x"}` || in.Text != "" || in.Button != "" || !strings.HasPrefix(in.Chat, "mcp:") {
		t.Errorf("inbound %+v call %+v", in, in.Call)
	}
	// No arguments are an empty object, as the schema sees them.
	s.call(t, "list", nil)
	if got := s.fake.inbounds()[1].Call.Args; string(got) != "{}" {
		t.Errorf("args without arguments: %s", got)
	}
}

func TestParallelCallsHaveTheirOwnConversations(t *testing.T) {
	s := connect(t, &mcp.ClientOptions{ElicitationHandler: accept}, "", 0)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() { s.call(t, "list", nil) })
		wg.Go(func() {
			if res := s.call(t, "pay", map[string]any{"amount": 5}); res.IsError {
				t.Errorf("pay: %q", mcpservertest.Text(res))
			}
		})
	}
	wg.Wait()
	calls := map[string]string{} // chat -> tool of its call
	confirmed := map[string]string{}
	for _, in := range s.fake.inbounds() {
		if in.Call != nil {
			if _, dup := calls[in.Chat]; dup {
				t.Errorf("conversation %s reused", in.Chat)
			}
			calls[in.Chat] = in.Call.Tool
		} else {
			confirmed[in.Chat] = in.Button
		}
	}
	if len(calls) != 8 || len(confirmed) != 4 {
		t.Fatalf("calls %v confirmations %v", calls, confirmed)
	}
	for chat, button := range confirmed {
		if calls[chat] != "pay" || !strings.HasPrefix(button, "confirm:") {
			t.Errorf("%s: %s after %s", chat, button, calls[chat])
		}
	}
}

func TestRefusalsAndFailures(t *testing.T) {
	s := connect(t, nil, "", 0)
	for _, c := range []struct{ tool, status, text string }{
		{"fail", "error", "It broke."},
		{"note", StatusRefused, "This action is not available."},
		{"boom", StatusFailed, "arbiter could not process the call: store unavailable"},
	} {
		res := s.call(t, c.tool, nil)
		if !res.IsError || !strings.Contains(mcpservertest.Text(res), c.text) || status(t, res)["status"] != c.status {
			t.Errorf("%s: isError %v %q %v", c.tool, res.IsError, mcpservertest.Text(res), res.StructuredContent)
		}
	}
}

func accept(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}, nil
}

func TestConfirmationAccepted(t *testing.T) {
	for _, v := range versions {
		t.Run("v="+v, func(t *testing.T) {
			var mu sync.Mutex
			var asked []*mcp.ElicitParams
			s := connect(t, &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				mu.Lock()
				asked = append(asked, req.Params)
				mu.Unlock()
				return accept(ctx, req)
			}}, v, 0)
			res := s.call(t, "pay", map[string]any{"amount": 5, "to": "Bob"})
			if res.IsError || mcpservertest.Text(res) != "Paid." || status(t, res)["status"] != "ok" {
				t.Fatalf("isError %v %q %v", res.IsError, mcpservertest.Text(res), res.StructuredContent)
			}
			if len(asked) != 1 || asked[0].Message != payConfirmation {
				t.Fatalf("asked %+v", asked)
			}
			ins := s.fake.inbounds()
			if len(ins) != 2 || ins[1].Button != "confirm:p1" || ins[1].Chat != ins[0].Chat || ins[1].Call != nil || ins[1].Channel != "mcp" {
				t.Fatalf("inbounds %+v", ins)
			}
		})
	}
}

func TestConfirmationRefused(t *testing.T) {
	answers := map[string]func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error){
		"decline": func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
		"cancel": func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "cancel"}, nil
		},
		"accept-false": func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": false}}, nil
		},
	}
	for _, v := range versions {
		for name, h := range answers {
			t.Run(name+"/v="+v, func(t *testing.T) {
				s := connect(t, &mcp.ClientOptions{ElicitationHandler: h}, v, 0)
				res := s.call(t, "pay", map[string]any{"amount": 5})
				if !res.IsError || mcpservertest.Text(res) != txtDeclined || status(t, res)["status"] != StatusDeclined {
					t.Fatalf("isError %v %q", res.IsError, mcpservertest.Text(res))
				}
				if got := s.fake.buttons(); !reflect.DeepEqual(got, []string{"cancel:p1"}) {
					t.Errorf("buttons %v", got)
				}
			})
		}
	}
}

func TestConfirmationAskFails(t *testing.T) {
	for _, v := range versions[1:] {
		t.Run("v="+v, func(t *testing.T) {
			s := connect(t, &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return nil, errors.New("no UI")
			}}, v, 0)
			res := s.call(t, "pay", nil)
			if !res.IsError || !strings.Contains(mcpservertest.Text(res), "could not be asked") {
				t.Fatalf("isError %v %q", res.IsError, mcpservertest.Text(res))
			}
			if got := s.fake.buttons(); !reflect.DeepEqual(got, []string{"cancel:p1"}) {
				t.Errorf("buttons %v", got)
			}
		})
	}
	// A client that asks itself and fails never comes back: the timeout
	// cancels the action.
	// In a bubble: once all in it wait, the timeout has passed and done
	// its work (synctest.Wait).
	t.Run("v=latest", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := connect(t, &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return nil, errors.New("no UI")
			}}, "", 100*time.Millisecond)
			if _, err := s.client.CallTool(context.Background(), &mcp.CallToolParams{Name: "pay"}); err == nil {
				t.Fatal("the client's own failure is not its error")
			}
			time.Sleep(time.Second) // past the 100 ms confirmation timeout
			synctest.Wait()
			if got := s.fake.buttons(); !reflect.DeepEqual(got, []string{"cancel:p1"}) {
				t.Errorf("buttons %v", got)
			}
		})
	})
}

func TestClientWithoutElicitation(t *testing.T) {
	for _, v := range versions {
		t.Run("v="+v, func(t *testing.T) {
			s := connect(t, nil, v, 0)
			res := s.call(t, "pay", map[string]any{"amount": 5})
			if !res.IsError || mcpservertest.Text(res) != txtUnconfirmed || status(t, res)["status"] != StatusUnconfirmed {
				t.Fatalf("isError %v %q", res.IsError, mcpservertest.Text(res))
			}
			if got := s.fake.buttons(); !reflect.DeepEqual(got, []string{"cancel:p1"}) {
				t.Errorf("buttons %v", got)
			}
		})
	}
}

// TestConfirmationTimeout: an older client that never answers is given up
// on within the timeout; an answer that comes back after it runs nothing.
func TestConfirmationTimeout(t *testing.T) {
	t.Run("server asks", func(t *testing.T) {
		s := connect(t, &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(5 * time.Second):
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}, nil
			}
		}}, "2025-11-25", 150*time.Millisecond)
		start := time.Now()
		res := s.call(t, "pay", nil)
		if !res.IsError || mcpservertest.Text(res) != txtNoAnswer || time.Since(start) > 3*time.Second {
			t.Fatalf("isError %v %q after %v", res.IsError, mcpservertest.Text(res), time.Since(start))
		}
		if got := s.fake.buttons(); !reflect.DeepEqual(got, []string{"cancel:p1"}) {
			t.Errorf("buttons %v", got)
		}
	})
	// In a bubble, so the answer's delay passes on the bubble's clock.
	t.Run("client asks", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := connect(t, &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				time.Sleep(500 * time.Millisecond) // past the 100 ms timeout
				return accept(ctx, req)
			}}, "", 100*time.Millisecond)
			res := s.call(t, "pay", nil)
			if !res.IsError || mcpservertest.Text(res) != txtExpired {
				t.Fatalf("isError %v %q", res.IsError, mcpservertest.Text(res))
			}
			if got := s.fake.buttons(); !reflect.DeepEqual(got, []string{"cancel:p1"}) {
				t.Errorf("buttons %v", got)
			}
		})
	})
}

// TestRetryState drives the latest protocol's retry by hand: the request
// state is good for one answer to the call it was given for, and closing
// the server cancels what still waits.
func TestRetryState(t *testing.T) {
	s := connect(t, &mcp.ClientOptions{ElicitationHandler: accept, MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}}, "", 0)
	ctx := context.Background()
	yes := mcp.InputResponseMap{confirmKey: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}}
	ask := func(name string) *mcp.CallToolResult {
		t.Helper()
		res, err := s.client.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{"amount": 5}})
		if err != nil || !res.NeedsInput() || res.RequestState == "" {
			t.Fatalf("first round: %v %+v", err, res)
		}
		ir, ok := res.InputRequests[confirmKey].(*mcp.ElicitParams)
		if !ok || ir.Message != payConfirmation {
			t.Fatalf("input requests %+v", res.InputRequests)
		}
		return res
	}
	retry := func(name, state string, answers mcp.InputResponseMap) *mcp.CallToolResult {
		t.Helper()
		res, err := s.client.CallTool(ctx, &mcp.CallToolParams{Name: name, InputResponses: answers, RequestState: state})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	first := ask("pay")
	if res := retry("pay", "forged", yes); !res.IsError || mcpservertest.Text(res) != txtExpired {
		t.Errorf("forged state: %q", mcpservertest.Text(res))
	}
	if res := retry("pay", first.RequestState, yes); res.IsError || mcpservertest.Text(res) != "Paid." {
		t.Errorf("answer: %q", mcpservertest.Text(res))
	}
	if res := retry("pay", first.RequestState, yes); !res.IsError || mcpservertest.Text(res) != txtExpired {
		t.Errorf("second answer: %q", mcpservertest.Text(res))
	}
	second := ask("pay")
	if res := retry("list", second.RequestState, yes); !res.IsError || mcpservertest.Text(res) != txtExpired {
		t.Errorf("answer on another tool: %q", mcpservertest.Text(res))
	}
	third := ask("pay")
	s.server.Close()
	if res := retry("pay", third.RequestState, yes); !res.IsError || mcpservertest.Text(res) != txtExpired {
		t.Errorf("answer after close: %q", mcpservertest.Text(res))
	}
	if got := s.fake.buttons(); !reflect.DeepEqual(got, []string{"confirm:p1", "cancel:p2", "cancel:p3"}) {
		t.Errorf("buttons %v", got)
	}
}

func TestNewChecksConfig(t *testing.T) {
	if _, err := New(Config{Identity: me}); err == nil {
		t.Error("no handler accepted")
	}
	if _, err := New(Config{Handler: &fake{}}); err == nil {
		t.Error("empty identity accepted")
	}
}

// TestLive: a running tool's progress reaches the client, and its question
// reaches the user when the client can be asked during a call.
func TestLive(t *testing.T) {
	answer := func(choice string) func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			if req.Params.Message != "Which colour?" {
				return nil, fmt.Errorf("asked %q", req.Params.Message)
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"choice": choice}}, nil
		}
	}
	progress := make(chan *mcp.ProgressNotificationParams, 4)
	onProgress := func(_ context.Context, req *mcp.ProgressNotificationClientRequest) { progress <- req.Params }
	call := func(s *setup) *mcp.CallToolResult {
		t.Helper()
		p := &mcp.CallToolParams{Name: "ask"}
		p.SetProgressToken("tok-1")
		res, err := s.client.CallTool(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	s := connect(t, &mcp.ClientOptions{ElicitationHandler: answer("b"), ProgressNotificationHandler: onProgress}, "2025-11-25", 0)
	res := call(s)
	if res.IsError || !reflect.DeepEqual(status(t, res)["result"], map[string]any{"choice": "b"}) {
		t.Errorf("answered: %q %v", mcpservertest.Text(res), res.StructuredContent)
	}
	select {
	case p := <-progress:
		if p.ProgressToken != "tok-1" || p.Progress != 1 || p.Total != 2 || p.Message != "Ask: half way" {
			t.Errorf("progress %+v", p)
		}
	case <-time.After(5 * time.Second):
		t.Error("no progress notification")
	}
	// The turn's own step follows, and every notification's progress is
	// above the one before.
	for _, want := range []mcp.ProgressNotificationParams{{Progress: 2, Message: "Waits for approval…"}, {Progress: 3, Message: "Ask: done"}} {
		select {
		case p := <-progress:
			if p.ProgressToken != "tok-1" || p.Progress != want.Progress || p.Total != 0 || p.Message != want.Message {
				t.Errorf("progress %+v, want %+v", p, want)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("no progress notification %q", want.Message)
		}
	}

	s = connect(t, &mcp.ClientOptions{ElicitationHandler: answer("green")}, "2025-11-25", 0)
	if res := call(s); !res.IsError {
		t.Errorf("a choice not offered: %v", res.StructuredContent)
	}
	s = connect(t, &mcp.ClientOptions{ElicitationHandler: answer("b")}, "", 0)
	if res := call(s); !res.IsError || status(t, res)["error"] != chat.ErrNoLive.Error() {
		t.Errorf("latest protocol: %v", res.StructuredContent)
	}
}

// server/discover (protocol 2026-07-28) is answered before anything else,
// as that version requires: the versions, the tools capability and who we
// are, on a raw JSON-RPC exchange.
func TestServerDiscover(t *testing.T) {
	srv, err := New(Config{Handler: &fake{}, Identity: me})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.MCP().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	conn, err := ct.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req, err := jsonrpc.DecodeMessage([]byte(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{` +
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"probe","version":"1"},` +
		`"io.modelcontextprotocol/clientCapabilities":{}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.Write(ctx, req); err != nil {
		t.Fatal(err)
	}
	msg, err := conn.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := jsonrpc.EncodeMessage(msg)
	var resp struct {
		Result struct {
			SupportedVersions []string       `json:"supportedVersions"`
			Capabilities      map[string]any `json:"capabilities"`
		} `json:"result"`
		Error any `json:"error"`
	}
	if err := json.Unmarshal(raw, &resp); err != nil || resp.Error != nil {
		t.Fatalf("discover answered %s (%v)", raw, err)
	}
	if !slices.Contains(resp.Result.SupportedVersions, "2026-07-28") || resp.Result.Capabilities["tools"] == nil {
		t.Errorf("discover answered %s", raw)
	}
}

package openaicompat

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"testing"

	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/llm/cassette"
	"github.com/arbiterhq/arbiter/llm/llmtest"
	"github.com/arbiterhq/arbiter/llm/llmtest/providertest"
)

// Tests of the native tool transcript: assistant tool calls and tool
// results in the request, tool_choice, and several calls in an answer.

// loopRequest is an agent loop's second model call: the model asked for
// two reads in one answer and both results are back.
func loopRequest() llm.Request {
	req := decisionRequest()
	req.Messages = append(req.Messages,
		llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{
			{ID: "call_1", Name: "search_tasks", Arguments: json.RawMessage(`{ "query": "launch" }`)},
			{ID: "call_2", Name: "list_events", Arguments: nil},
		}},
		llm.Message{Role: llm.RoleTool, ToolCallID: "call_2", Content: "no events"},
		llm.Message{Role: llm.RoleTool, ToolCallID: "call_1", Content: "board unavailable", IsError: true},
	)
	req.ToolChoice = llm.ToolChoice{Mode: llm.ToolNamed, Name: "create_task"}
	req.ParallelToolCalls = true
	return req
}

func TestToolTranscriptWire(t *testing.T) {
	srv, p := newTest(t, Config{Protocol: llm.ProtocolTools})
	srv.Enqueue(llmtest.HTTPReply{ToolCalls: []llmtest.WireToolCall{
		{ID: "call_3", Name: "create_task", Arguments: `{"title":"Launch"}`},
		{ID: "call_4", Name: "search_tasks", Arguments: `{"query":"x"}`},
	}})
	resp, err := p.Complete(context.Background(), loopRequest())
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if len(resp.ToolCalls) != 2 || resp.ToolCalls[0].ID != "call_3" || resp.ToolCalls[1].Name != "search_tasks" {
		t.Errorf("tool calls = %+v, want call_3 create_task then call_4 search_tasks", resp.ToolCalls)
	}
	got := srv.Requests()[0]
	members := topLevel(t, got.Body)
	if string(members["tool_choice"]) != `{"type":"function","function":{"name":"create_task"}}` {
		t.Errorf("tool_choice = %s", members["tool_choice"])
	}
	if _, ok := members["parallel_tool_calls"]; ok {
		t.Errorf("parallel calls allowed, yet parallel_tool_calls sent: %s", members["parallel_tool_calls"])
	}
	var wire struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(got.Body, &wire); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`{"role":"assistant","content":null,"tool_calls":[` +
			`{"id":"call_1","type":"function","function":{"name":"search_tasks","arguments":"{ \"query\": \"launch\" }"}},` +
			`{"id":"call_2","type":"function","function":{"name":"list_events","arguments":"{}"}}]}`,
		`{"role":"tool","tool_call_id":"call_2","content":"no events"}`,
		`{"role":"tool","tool_call_id":"call_1","content":"board unavailable"}`,
	}
	for i, w := range want {
		if g := string(wire.Messages[2+i]); g != w {
			t.Errorf("message %d:\n got %s\nwant %s", 2+i, g, w)
		}
	}
}

func TestToolChoiceModes(t *testing.T) {
	tests := []struct {
		choice llm.ToolChoice
		want   string
	}{
		{llm.ToolChoice{}, `"auto"`},
		{llm.ToolChoice{Mode: llm.ToolAuto}, `"auto"`},
		{llm.ToolChoice{Mode: llm.ToolRequired}, `"required"`},
		{llm.ToolChoice{Mode: llm.ToolNone}, `"none"`},
	}
	for _, tt := range tests {
		srv, p := newTest(t, Config{Protocol: llm.ProtocolTools})
		srv.Enqueue(llmtest.HTTPReply{Content: "ok"})
		req := decisionRequest()
		req.ToolChoice = tt.choice
		if _, err := p.Complete(context.Background(), req); err != nil {
			t.Fatalf("%+v: Complete: %v", tt.choice, err)
		}
		members := topLevel(t, srv.Requests()[0].Body)
		if g := string(members["tool_choice"]); g != tt.want {
			t.Errorf("%+v: tool_choice = %s, want %s", tt.choice, g, tt.want)
		}
		if g := string(members["parallel_tool_calls"]); g != "false" {
			t.Errorf("%+v: parallel_tool_calls = %q, want false", tt.choice, g)
		}
	}
}

// A transcript or choice the API would refuse costs no call.
func TestBadTranscriptNotSent(t *testing.T) {
	call := func(id string) llm.ToolCall {
		return llm.ToolCall{ID: id, Name: "search_tasks", Arguments: json.RawMessage(`{}`)}
	}
	assistant := func(calls ...llm.ToolCall) llm.Message {
		return llm.Message{Role: llm.RoleAssistant, ToolCalls: calls}
	}
	result := func(id string) llm.Message { return llm.Message{Role: llm.RoleTool, ToolCallID: id, Content: "r"} }
	user := llm.Message{Role: llm.RoleUser, Content: "and?"}
	tests := []struct {
		name   string
		extra  []llm.Message
		choice llm.ToolChoice
	}{
		{"result without a call", []llm.Message{result("call_1")}, llm.ToolChoice{}},
		{"call without a result", []llm.Message{assistant(call("call_1")), user}, llm.ToolChoice{}},
		{"call left open at the end", []llm.Message{assistant(call("call_1"), call("call_2")), result("call_1")}, llm.ToolChoice{}},
		{"result answering another message's call", []llm.Message{assistant(call("call_1")), result("call_1"), user, result("call_1")}, llm.ToolChoice{}},
		{"ID used twice", []llm.Message{assistant(call("call_1"), call("call_1")), result("call_1"), result("call_1")}, llm.ToolChoice{}},
		{"call without an ID", []llm.Message{assistant(call(""))}, llm.ToolChoice{}},
		{"arguments not an object", []llm.Message{assistant(llm.ToolCall{ID: "c", Name: "x", Arguments: json.RawMessage(`"x"`)}), result("c")}, llm.ToolChoice{}},
		{"calls on a user message", []llm.Message{{Role: llm.RoleUser, Content: "x", ToolCalls: []llm.ToolCall{call("c")}}}, llm.ToolChoice{}},
		{"named tool not offered", nil, llm.ToolChoice{Mode: llm.ToolNamed, Name: "delete_board"}},
		{"unknown choice", nil, llm.ToolChoice{Mode: "sometimes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, p := newTest(t, Config{Protocol: llm.ProtocolTools})
			req := decisionRequest()
			req.Messages = append(req.Messages, tt.extra...)
			req.ToolChoice = tt.choice
			_, err := p.Complete(context.Background(), req)
			if e := asLLMError(t, err, p); e.Kind != llm.ErrBadRequest {
				t.Errorf("kind = %s, want bad_request (%v)", e.Kind, err)
			}
			if n := srv.Count(); n != 0 {
				t.Errorf("server saw %d requests, want 0", n)
			}
		})
	}
}

// A tool loop recorded once replays without the server: the request
// carrying the transcript finds its exchange and the calls come back.
func TestToolTranscriptCassette(t *testing.T) {
	srv := llmtest.NewServer(llmtest.ServerConfig{})
	srv.Enqueue(
		llmtest.HTTPReply{ToolCalls: []llmtest.WireToolCall{{ID: "call_1", Name: "search_tasks", Arguments: `{"query":"launch"}`}}},
		llmtest.HTTPReply{Content: "One launch task: Ship it."},
	)
	dir := t.TempDir()
	rec, err := cassette.NewRecorder(dir, srv.Client().Transport)
	if err != nil {
		t.Fatal(err)
	}
	loop := func(client *http.Client) []llm.Response {
		p := providertest.MustNew(t, New, Config{BaseURL: srv.URL, Model: "test-model", Protocol: llm.ProtocolTools, HTTPClient: client})
		req := decisionRequest()
		req.Schema = nil
		first, err := p.Complete(context.Background(), req)
		if err != nil || len(first.ToolCalls) != 1 {
			t.Fatalf("first call: %+v %v", first, err)
		}
		c := first.ToolCalls[0]
		req.Messages = append(req.Messages,
			llm.Message{Role: llm.RoleAssistant, ToolCalls: first.ToolCalls},
			llm.Message{Role: llm.RoleTool, ToolCallID: c.ID, Content: `[{"title":"Ship it"}]`})
		second, err := p.Complete(context.Background(), req)
		if err != nil {
			t.Fatalf("second call: %v", err)
		}
		return []llm.Response{first, second}
	}
	live := loop(&http.Client{Transport: rec})
	srv.Close()
	rp, err := cassette.NewReplayer(dir)
	if err != nil {
		t.Fatal(err)
	}
	replayed := loop(&http.Client{Transport: rp})
	for i := range live {
		if !reflect.DeepEqual(live[i].ToolCalls, replayed[i].ToolCalls) || live[i].Text != replayed[i].Text {
			t.Errorf("call %d: live %+v, replayed %+v", i, live[i], replayed[i])
		}
	}
	if n := rp.Remaining(); n != 0 {
		t.Errorf("%d recorded exchanges not replayed", n)
	}
}

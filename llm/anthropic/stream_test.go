package anthropic

import (
	"bytes"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/llm/llmtest"
	"github.com/arbiterhq/arbiter/llm/llmtest/providertest"
)

// Streaming specifics of the Messages API; what every provider must do is
// in the conformance suite.

// streamBoth is providertest.StreamBoth with reply, streamed cut two ways.
func streamBoth(t *testing.T, srv *llmtest.AnthropicServer, p *Provider, reply llmtest.AnthropicReply, req llm.Request) (llm.Response, []string) {
	t.Helper()
	queue := func(c *llmtest.Chunking) {
		r := reply
		r.Chunking = c
		srv.Enqueue(r)
	}
	return providertest.StreamBoth(t, p, queue, req, llmtest.Chunking{Piece: 1, WriteSize: 1}, llmtest.Chunking{Piece: 6, WriteSize: 11})
}

func TestStreamRequestBytes(t *testing.T) {
	srv, p := newTest(t, Config{})
	resp, _ := streamBoth(t, srv, p, llmtest.AnthropicReply{ToolUses: []llmtest.AnthropicToolUse{{Name: DecisionTool, Input: json.RawMessage(`{"say":"hi"}`)}}}, decisionRequest())
	if resp.Text != `{"say":"hi"}` {
		t.Fatalf("text %q", resp.Text)
	}
	reqs := srv.Requests()
	plain, streamed := reqs[0], reqs[1]
	want := append(bytes.TrimSuffix(bytes.Clone(plain.Body), []byte("}")), `,"stream":true}`...)
	if !bytes.Equal(streamed.Body, want) {
		t.Errorf("streamed body\n%s\nwant\n%s", streamed.Body, want)
	}
	if plain.Stream || !streamed.Stream || streamed.Header.Get("Accept") != "text/event-stream" {
		t.Errorf("plain stream %v, streamed stream %v, Accept %q", plain.Stream, streamed.Stream, streamed.Header.Get("Accept"))
	}
}

func TestStreamDecisionTool(t *testing.T) {
	srv, p := newTest(t, Config{})
	input := `{ "say": "Привет, \"мир\"\n", "n": 1 }`
	resp, texts := streamBoth(t, srv, p, llmtest.AnthropicReply{
		Text:     "ignored preamble",
		ToolUses: []llmtest.AnthropicToolUse{{Name: DecisionTool, Input: json.RawMessage(input)}},
	}, decisionRequest())
	if resp.Text != `{"say":"Привет, \"мир\"\n","n":1}` {
		t.Errorf("text %q", resp.Text)
	}
	for _, got := range texts {
		if got != input {
			t.Errorf("OnText got %q, want the decision's raw JSON %q and no other text", got, input)
		}
	}
}

func TestStreamToolsProtocol(t *testing.T) {
	srv, p := newTest(t, Config{Protocol: llm.ProtocolTools})
	req := userRequest("find launch tasks")
	req.Tools = []llm.ToolDef{{Name: "search_tasks"}, {Name: "list_events"}}
	resp, texts := streamBoth(t, srv, p, llmtest.AnthropicReply{
		Text: "Ищу задачи…",
		ToolUses: []llmtest.AnthropicToolUse{
			{ID: "toolu_1", Name: "search_tasks", Input: json.RawMessage(`{"query": "launch \"v2\""}`)},
			{ID: "toolu_2", Name: "list_events"},
		},
	}, req)
	if len(resp.ToolCalls) != 2 || string(resp.ToolCalls[0].Arguments) != `{"query":"launch \"v2\""}` {
		t.Errorf("tool calls %+v", resp.ToolCalls)
	}
	for _, got := range texts {
		if got != "Ищу задачи…" {
			t.Errorf("OnText got %q, want the text alone, no tool input", got)
		}
	}
}

func TestStreamErrorEvent(t *testing.T) {
	for _, tc := range []struct {
		typ  string
		kind llm.ErrorKind
	}{
		{"overloaded_error", llm.ErrTransient},
		{"api_error", llm.ErrTransient},
		{"rate_limit_error", llm.ErrRateLimited},
		{"invalid_request_error", llm.ErrBadRequest},
		{"billing_error", llm.ErrBilling},
	} {
		srv, p := newTest(t, Config{})
		srv.Enqueue(llmtest.AnthropicReply{Text: "partial answer", ErrorType: tc.typ, ErrorMessage: "stream failed: " + testKey,
			Chunking: &llmtest.Chunking{ErrorAfter: 4}})
		_, got, err := providertest.CompleteStreamed(p, userRequest("hi"))
		e := asLLMError(t, err, p)
		if e.Kind != tc.kind || !strings.Contains(e.Message, "stream failed") {
			t.Errorf("%s: error %v, want %s", tc.typ, err, tc.kind)
		}
		if len(got) == 0 {
			t.Errorf("%s: the text before the error event did not reach OnText", tc.typ)
		}
	}
}

func TestStreamIgnoredByServer(t *testing.T) {
	srv, p := newTest(t, Config{})
	srv.Enqueue(llmtest.AnthropicReply{Body: []byte(`{"type":"message","model":"m","content":[{"type":"text","text":"whole"}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":1}}`),
		Header: http.Header{"Content-Type": {"application/json"}}})
	resp, got, err := providertest.CompleteStreamed(p, userRequest("hi"))
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if resp.Text != "whole" || !reflect.DeepEqual(got, []string{"whole"}) {
		t.Errorf("response %+v, OnText %q", resp, got)
	}
}

package openaicompat

import (
	"bytes"
	"context"
	"net/http"
	"reflect"
	"testing"

	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/llm/llmtest"
	"github.com/arbiterhq/arbiter/llm/llmtest/providertest"
)

// Streaming specifics of the Chat Completions wire format; what every
// provider must do is in the conformance suite.

func TestStreamRequestBytes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cfg    Config
		stream bool
	}{
		{"json", Config{}, true},
		{"tools", Config{Protocol: llm.ProtocolTools}, true},
		{"endpoint that cannot stream", Config{NoStream: true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, p := newTest(t, tc.cfg)
			srv.Enqueue(llmtest.HTTPReply{Content: `{"say":"hi"}`}, llmtest.HTTPReply{Content: `{"say":"hi"}`})
			req := decisionRequest()
			if _, err := p.Complete(context.Background(), req); err != nil {
				t.Fatalf("plain Complete: %v", err)
			}
			_, got, err := providertest.CompleteStreamed(p, req)
			if err != nil {
				t.Fatalf("streamed Complete: %v", err)
			}
			plain, streamed := srv.Requests()[0], srv.Requests()[1]
			want := plain.Body
			if tc.stream {
				want = append(bytes.TrimSuffix(bytes.Clone(plain.Body), []byte("}")), `,"stream":true,"stream_options":{"include_usage":true}}`...)
			}
			if !bytes.Equal(streamed.Body, want) {
				t.Errorf("streamed body\n%s\nwant\n%s", streamed.Body, want)
			}
			if plain.Stream || plain.Header.Get("Accept") != "application/json" {
				t.Errorf("plain request asks for a stream: stream %v, Accept %q", plain.Stream, plain.Header.Get("Accept"))
			}
			if accept := streamed.Header.Get("Accept"); tc.stream != (accept == "text/event-stream") {
				t.Errorf("streamed request Accept %q", accept)
			}
			if !tc.stream && got != nil {
				t.Errorf("provider that cannot stream called OnText itself: %q (the chain does)", got)
			}
		})
	}
}

func TestStreamToolCalls(t *testing.T) {
	srv, p := newTest(t, Config{Protocol: llm.ProtocolTools})
	reply := llmtest.HTTPReply{Content: "Смотрю доску…",
		ToolCalls: []llmtest.WireToolCall{
			{ID: "call_1", Name: "search_tasks", Arguments: `{"query":"запуск \"v2\"\n"}`},
			{ID: "call_2", Name: "create_task", Arguments: `{"title":"cut off`},
			{ID: "call_3", Name: "list_events", Arguments: ``},
		}}
	queue := func(c *llmtest.Chunking) {
		r := reply
		r.Chunking = c
		srv.Enqueue(r)
	}
	_, texts := providertest.StreamBoth(t, p, queue, decisionRequest(), llmtest.Chunking{Piece: 1, WriteSize: 1}, llmtest.Chunking{Piece: 4, WriteSize: 9})
	for _, s := range texts {
		if s != reply.Content {
			t.Errorf("OnText got %q, want the content alone, no arguments", s)
		}
	}
}

func TestStreamErrorObject(t *testing.T) {
	for _, tc := range []struct {
		body string
		kind llm.ErrorKind
	}{
		{`{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}`, llm.ErrBilling},
		{`{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`, llm.ErrRateLimited},
		{`{"error":{"message":"The server had an error","type":"server_error","code":null}}`, llm.ErrTransient},
		{`{"error":{"message":"flagged","type":"invalid_request_error","code":"content_filter"}}`, llm.ErrContentPolicy},
	} {
		srv, p := newTest(t, Config{})
		srv.Enqueue(llmtest.HTTPReply{Body: []byte("data: " + tc.body + "\n\n"), Header: http.Header{"Content-Type": {"text/event-stream"}}})
		req := userRequest("hi")
		req.OnText = func(string) {}
		_, err := p.Complete(context.Background(), req)
		if e := asLLMError(t, err, p); e.Kind != tc.kind {
			t.Errorf("%s: kind %s, want %s (%v)", tc.body, e.Kind, tc.kind, err)
		}
	}
}

func TestStreamIgnoredByServer(t *testing.T) {
	// A server that ignores "stream" answers with one JSON body: the
	// answer is decoded as usual and OnText gets its content at once.
	srv, p := newTest(t, Config{})
	srv.Enqueue(llmtest.HTTPReply{Body: []byte(`{"model":"m","choices":[{"message":{"content":"whole"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1}}`),
		Header: http.Header{"Content-Type": {"application/json"}}})
	resp, got, err := providertest.CompleteStreamed(p, userRequest("hi"))
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if resp.Text != "whole" || !reflect.DeepEqual(got, []string{"whole"}) || resp.Usage.InputTokens != 3 {
		t.Errorf("response %+v, OnText %q", resp, got)
	}
}

package llmtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

const body = `{"model":"m1","messages":[{"role":"system","content":"sys"},{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}],` +
	`"response_format":{"type":"json_schema","json_schema":{"name":"d","schema":{"type":"object"},"strict":true}},"temperature":0,"max_completion_tokens":100}`

func post(t *testing.T, s *Server, key, payload string) (*http.Response, []byte, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.URL+"/chat/completions", strings.NewReader(payload))
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := s.Client().Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

func TestServerSuccessShapeAndRecording(t *testing.T) {
	s := NewServer(ServerConfig{APIKey: "k"})
	defer s.Close()
	s.Enqueue(HTTPReply{Content: `{"x":1}`, Model: "m1-2025", Usage: &WireUsage{PromptTokens: 3, CompletionTokens: 4, TotalTokens: 7}})
	resp, b, err := post(t, s, "k", body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("post: %v %v %s", resp, err, b)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got["object"] != "chat.completion" || got["model"] != "m1-2025" || !strings.HasPrefix(got["id"].(string), "chatcmpl-") {
		t.Errorf("envelope: %s", b)
	}
	if _, ok := got["created"].(float64); !ok {
		t.Errorf("no created: %s", b)
	}
	ch := got["choices"].([]any)[0].(map[string]any)
	msg := ch["message"].(map[string]any)
	if ch["index"] != 0.0 || ch["finish_reason"] != "stop" || msg["role"] != "assistant" || msg["content"] != `{"x":1}` {
		t.Errorf("choice: %s", b)
	}
	u := got["usage"].(map[string]any)
	if u["prompt_tokens"] != 3.0 || u["completion_tokens"] != 4.0 || u["total_tokens"] != 7.0 {
		t.Errorf("usage: %s", b)
	}

	reqs := s.Requests()
	if len(reqs) != 1 {
		t.Fatalf("recorded %d", len(reqs))
	}
	r := reqs[0]
	if r.Model != "m1" || len(r.Messages) != 2 || r.Messages[1].Content != "ab" || r.Messages[0].Role != "system" {
		t.Errorf("decoded %+v", r)
	}
	rf := r.ResponseFormat
	if rf == nil || rf.Type != "json_schema" || rf.JSONSchema.Name != "d" || rf.JSONSchema.Strict == nil || !*rf.JSONSchema.Strict ||
		string(rf.JSONSchema.Schema) != `{"type":"object"}` {
		t.Errorf("response_format %+v", rf)
	}
	if r.Temperature == nil || *r.Temperature != 0 || r.MaxCompletionTokens == nil || *r.MaxCompletionTokens != 100 || r.MaxTokens != nil {
		t.Errorf("sampling fields %+v", r)
	}
	if !bytes.Equal(r.Body, []byte(body)) || r.Header.Get("Authorization") != "Bearer k" {
		t.Errorf("raw body or header not recorded")
	}
}

func TestServerErrors(t *testing.T) {
	s := NewServer(ServerConfig{APIKey: "k"})
	defer s.Close()

	resp, b, _ := post(t, s, "wrong", body)
	if resp.StatusCode != 401 || !strings.Contains(string(b), `"invalid_api_key"`) {
		t.Errorf("wrong key: %d %s", resp.StatusCode, b)
	}

	s.Enqueue(HTTPReply{Status: 429, ErrorMessage: "slow", ErrorType: "requests", ErrorCode: "rate_limit_exceeded", RetryAfter: "5"})
	resp, b, _ = post(t, s, "k", body)
	var e struct {
		Error struct {
			Message string  `json:"message"`
			Type    string  `json:"type"`
			Code    *string `json:"code"`
			Param   *string `json:"param"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatalf("error body %s: %v", b, err)
	}
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "5" || e.Error.Message != "slow" ||
		e.Error.Type != "requests" || e.Error.Code == nil || *e.Error.Code != "rate_limit_exceeded" || e.Error.Param != nil {
		t.Errorf("429: %d %v %s", resp.StatusCode, resp.Header, b)
	}

	s.Enqueue(HTTPReply{Body: []byte("garbage")})
	if _, b, _ = post(t, s, "k", body); string(b) != "garbage" {
		t.Errorf("raw body = %q", b)
	}

	s.Enqueue(HTTPReply{Content: strings.Repeat("x", 100), Truncate: true})
	if _, _, err := post(t, s, "k", body); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("truncated: err = %v, want unexpected EOF", err)
	}

	s.Enqueue(HTTPReply{Hangup: true})
	if _, _, err := post(t, s, "k", body); err == nil {
		t.Errorf("hangup: no error")
	}

	// The script is empty now.
	if resp, b, _ = post(t, s, "k", body); resp.StatusCode != 500 || !strings.Contains(string(b), "llmtest_script_exhausted") {
		t.Errorf("exhausted: %d %s", resp.StatusCode, b)
	}
	if resp, _, _ = post(t, s, "k", "{"); resp.StatusCode != 400 {
		t.Errorf("bad body: %d", resp.StatusCode)
	}
	if n := s.Count(); n != 7 {
		t.Errorf("Count = %d, want 7", n)
	}
}

func TestServerDelayAndRespond(t *testing.T) {
	s := NewServer(ServerConfig{SkipRecording: true, Respond: func(r *ChatRequest) HTTPReply {
		return HTTPReply{Content: "hi " + r.Model}
	}})
	defer s.Close()
	s.Enqueue(HTTPReply{Content: "late", Delay: 5 * time.Second})

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/chat/completions", strings.NewReader(body))
	start := time.Now()
	if _, err := s.Client().Do(req); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("delayed: err = %v", err)
	}
	if time.Since(start) > 2*time.Second {
		t.Errorf("delay did not end with the client")
	}

	_, b, err := post(t, s, "", body)
	if err != nil || !strings.Contains(string(b), `"content":"hi m1"`) {
		t.Errorf("Respond: %s %v", b, err)
	}
	if len(s.Requests()) != 0 || s.Count() != 2 {
		t.Errorf("SkipRecording: %d recorded, Count %d", len(s.Requests()), s.Count())
	}
}

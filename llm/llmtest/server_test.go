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
	h := http.Header{}
	if key != "" {
		h.Set("Authorization", "Bearer "+key)
	}
	return postTo(t, s.Client(), s.URL+"/chat/completions", h, payload)
}

// postTo sends payload to url with header, and reads the whole answer.
func postTo(t *testing.T, client *http.Client, url string, header http.Header, payload string) (*http.Response, []byte, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(payload))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = header
	resp, err := client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

// wantDelayCut sends req, whose reply waits 5 s, with a client that gives
// up after 30 ms, and checks the call ends then.
func wantDelayCut(t *testing.T, client *http.Client, req *http.Request) {
	t.Helper()
	ctx, cancel := context.WithTimeout(req.Context(), 30*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := client.Do(req.WithContext(ctx)); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("delayed: err = %v", err)
	}
	if time.Since(start) > 2*time.Second {
		t.Errorf("delay did not end with the client")
	}
}

// wantRejected checks the answer to a request the fake must refuse as
// the API does: a 400 whose body holds each of want, the request recorded
// all the same.
func wantRejected(t *testing.T, resp *http.Response, body []byte, err error, recorded int, want ...string) {
	t.Helper()
	if err != nil || resp.StatusCode != 400 || !containsAll(string(body), want) {
		t.Errorf("got %v %s, want a 400 mentioning %q", err, body, want)
	}
	if recorded != 1 {
		t.Errorf("invalid request not recorded")
	}
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
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

	req, _ := http.NewRequest(http.MethodPost, s.URL+"/chat/completions", strings.NewReader(body))
	wantDelayCut(t, s.Client(), req)

	_, b, err := post(t, s, "", body)
	if err != nil || !strings.Contains(string(b), `"content":"hi m1"`) {
		t.Errorf("Respond: %s %v", b, err)
	}
	if len(s.Requests()) != 0 || s.Count() != 2 {
		t.Errorf("SkipRecording: %d recorded, Count %d", len(s.Requests()), s.Count())
	}
}

func TestServerToolCallsAndCachedTokens(t *testing.T) {
	s := NewServer(ServerConfig{})
	defer s.Close()
	const toolBody = `{"model":"m1","messages":[{"role":"user","content":"hi"}],` +
		`"tools":[{"type":"function","function":{"name":"search","description":"Find.","parameters":{"type":"object"}}}],` +
		`"tool_choice":"auto","parallel_tool_calls":false}`
	s.Enqueue(
		HTTPReply{ToolCalls: []WireToolCall{{ID: "call_1", Name: "search", Arguments: `{"q":"x"}`}, {Name: "other", Arguments: "not json"}},
			Usage: &WireUsage{PromptTokens: 10, CompletionTokens: 2, TotalTokens: 12}, CachedTokens: 8},
		HTTPReply{Content: "Looking.", ToolCalls: []WireToolCall{{Name: "search", Arguments: "{}"}}, FinishReason: "stop"},
		HTTPReply{Content: "plain"},
	)

	_, b, err := post(t, s, "", toolBody)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"role":"assistant","content":null,"refusal":null,"tool_calls":[` +
		`{"id":"call_1","type":"function","function":{"name":"search","arguments":"{\"q\":\"x\"}"}},` +
		`{"id":"call_llmtest_N","type":"function","function":{"name":"other","arguments":"not json"}}]}`
	var got struct {
		Choices []struct {
			Message      json.RawMessage `json:"message"`
			FinishReason string          `json:"finish_reason"`
		} `json:"choices"`
		Usage json.RawMessage `json:"usage"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	msg := string(got.Choices[0].Message)
	if i := strings.Index(msg, "call_llmtest_"); i > 0 {
		j := i + len("call_llmtest_")
		for j < len(msg) && msg[j] >= '0' && msg[j] <= '9' {
			j++
		}
		msg = msg[:i] + "call_llmtest_N" + msg[j:]
	}
	if msg != want || got.Choices[0].FinishReason != "tool_calls" {
		t.Errorf("message = %s (finish %q)\nwant %s", msg, got.Choices[0].FinishReason, want)
	}
	if u := string(got.Usage); u != `{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12,"prompt_tokens_details":{"cached_tokens":8}}` {
		t.Errorf("usage = %s", u)
	}

	_, b, _ = post(t, s, "", toolBody)
	if !strings.Contains(string(b), `"content":"Looking.","refusal":null,"tool_calls":[{"id":"call_llmtest_`) ||
		!strings.Contains(string(b), `"finish_reason":"stop"`) {
		t.Errorf("text plus call: %s", b)
	}
	_, b, _ = post(t, s, "", toolBody)
	if strings.Contains(string(b), "tool_calls") || strings.Contains(string(b), "prompt_tokens_details") {
		t.Errorf("plain answer mentions tool calls or cached tokens: %s", b)
	}

	r := s.Requests()[0]
	if len(r.Tools) != 1 || r.Tools[0].Type != "function" || r.Tools[0].Function.Name != "search" ||
		r.Tools[0].Function.Description != "Find." || string(r.Tools[0].Function.Parameters) != `{"type":"object"}` {
		t.Errorf("tools = %+v", r.Tools)
	}
	if string(r.ToolChoice) != `"auto"` || r.ParallelToolCalls == nil || *r.ParallelToolCalls {
		t.Errorf("tool_choice %s parallel_tool_calls %v", r.ToolChoice, r.ParallelToolCalls)
	}

	_, _, _ = post(t, s, "", body)
	if r := s.Requests()[3]; r.Tools != nil || r.ToolChoice != nil || r.ParallelToolCalls != nil {
		t.Errorf("request without tools recorded %+v %s %v", r.Tools, r.ToolChoice, r.ParallelToolCalls)
	}
}

func TestServerAuthHeader(t *testing.T) {
	tests := []struct {
		name, configured, sent, value string
		ok                            bool
	}{
		{"default bearer", "", "Authorization", "Bearer k", true},
		{"default raw key", "", "Authorization", "k", false},
		{"explicit authorization", "authorization", "Authorization", "Bearer k", true},
		{"api-key", "api-key", "Api-Key", "k", true},
		{"api-key with bearer", "api-key", "Api-Key", "Bearer k", false},
		{"api-key sent as authorization", "api-key", "Authorization", "Bearer k", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewServer(ServerConfig{APIKey: "k", AuthHeader: tt.configured, Respond: func(*ChatRequest) HTTPReply {
				return HTTPReply{Content: "ok"}
			}})
			defer s.Close()
			req, _ := http.NewRequest(http.MethodPost, s.URL+"/chat/completions", strings.NewReader(body))
			req.Header.Set(tt.sent, tt.value)
			resp, err := s.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if (resp.StatusCode == 200) != tt.ok {
				t.Errorf("status %d, want ok=%v", resp.StatusCode, tt.ok)
			}
		})
	}
}

func TestServerReset(t *testing.T) {
	s := NewServer(ServerConfig{})
	defer s.Close()
	s.Enqueue(HTTPReply{Reset: true})
	if _, _, err := post(t, s, "", body); err == nil {
		t.Errorf("reset: no error")
	}
	if s.Count() != 1 {
		t.Errorf("Count = %d", s.Count())
	}
}

func TestServerToolTranscriptValidation(t *testing.T) {
	const tools = `"tools":[{"type":"function","function":{"name":"a","parameters":{"type":"object"}}}]`
	call := `{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"a","arguments":"{}"}}]}`
	tests := []struct {
		name, body, want string
	}{
		{"tool message without a call", `{"model":"m","messages":[{"role":"user","content":"x"},{"role":"tool","tool_call_id":"c1","content":"r"}]}`,
			"must be a response to a preceeding message"},
		{"call unanswered", `{"model":"m","messages":[{"role":"user","content":"x"},` + call + `,{"role":"user","content":"y"}]}`,
			"did not have response messages: c1"},
		{"call unanswered at the end", `{"model":"m","messages":[{"role":"user","content":"x"},` + call + `]}`,
			"did not have response messages: c1"},
		{"tool_choice without tools", `{"model":"m","messages":[{"role":"user","content":"x"}],"tool_choice":"auto"}`,
			"only allowed when 'tools' are specified"},
		{"named tool not offered", `{"model":"m","messages":[{"role":"user","content":"x"}],` + tools +
			`,"tool_choice":{"type":"function","function":{"name":"b"}}}`, "function 'b' not found"},
		{"image part on an assistant message", `{"model":"m","messages":[{"role":"user","content":"x"},` +
			`{"role":"assistant","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,aGk="}}]}]}`, "only allowed in messages with role 'user'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewServer(ServerConfig{})
			defer s.Close()
			s.Enqueue(HTTPReply{Content: "unused"})
			resp, b, err := post(t, s, "", tt.body)
			wantRejected(t, resp, b, err, len(s.Requests()), tt.want)
		})
	}
	s := NewServer(ServerConfig{})
	defer s.Close()
	s.Enqueue(HTTPReply{Content: "done"})
	resp, b, _ := post(t, s, "", `{"model":"m","messages":[{"role":"user","content":"x"},`+call+
		`,{"role":"tool","tool_call_id":"c1","content":"r"}],`+tools+`,"tool_choice":{"type":"function","function":{"name":"a"}}}`)
	if resp.StatusCode != 200 {
		t.Fatalf("valid round trip: %d %s", resp.StatusCode, b)
	}
	if m := s.Requests()[0].Messages; m[1].ToolCalls[0].ID != "c1" || m[2].ToolCallID != "c1" {
		t.Errorf("transcript decoded as %+v", m)
	}
}

func TestServerImageParts(t *testing.T) {
	s := NewServer(ServerConfig{})
	defer s.Close()
	s.Enqueue(HTTPReply{Content: "a square"})
	resp, b, _ := post(t, s, "", `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"what is it?"},`+
		`{"type":"image_url","image_url":{"url":"data:image/png;base64,aGk="}}]}]}`)
	if resp.StatusCode != 200 {
		t.Fatalf("image part: %d %s", resp.StatusCode, b)
	}
	if m := s.Requests()[0].Messages[0]; m.Content != "what is it?" || len(m.Images) != 1 || m.Images[0].MediaType != "image/png" || string(m.Images[0].Data) != "hi" {
		t.Errorf("message decoded as %+v", m)
	}
	for name, url := range map[string]string{"a web link": "https://example.com/a.png", "bad base64": "data:image/png;base64,%%%", "not an image": "data:text/plain;base64,aGk="} {
		s.Enqueue(HTTPReply{Content: "unused"})
		resp, b, _ := post(t, s, "", `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"`+url+`"}}]}]}`)
		if resp.StatusCode != 400 || !strings.Contains(string(b), "image") {
			t.Errorf("%s: %d %s, want a 400 about the image", name, resp.StatusCode, b)
		}
	}
}

func TestAnthropicServerImageBlocks(t *testing.T) {
	s := NewAnthropicServer(AnthropicServerConfig{})
	defer s.Close()
	s.Enqueue(AnthropicReply{Text: "a square"})
	resp, b, _ := anthPost(t, s, "", "2026-10-21", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"text","text":"what?"},`+
		`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"aGk="}}]}]}`)
	if resp.StatusCode != 200 {
		t.Fatalf("image block: %d %s", resp.StatusCode, b)
	}
	if imgs := s.Requests()[0].Messages[0].Images(); len(imgs) != 1 || imgs[0].MediaType != "image/png" || string(imgs[0].Data) != "hi" {
		t.Errorf("images decoded as %+v", imgs)
	}
}

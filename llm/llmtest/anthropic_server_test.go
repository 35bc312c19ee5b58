package llmtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

const anthBody = `{"model":"claude-test","max_tokens":100,` +
	`"system":[{"type":"text","text":"sys1"},{"type":"text","text":"sys2","cache_control":{"type":"ephemeral"}}],` +
	`"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},{"role":"user","content":"go"}],` +
	`"tools":[{"name":"decision","description":"d","input_schema":{"type":"object"}}],` +
	`"tool_choice":{"type":"tool","name":"decision","disable_parallel_tool_use":true}}`

// anthPost sends payload to s with the given key and version headers
// (empty = not sent).
func anthPost(t *testing.T, s *AnthropicServer, key, version, payload string) (*http.Response, []byte, error) {
	t.Helper()
	h := http.Header{}
	if key != "" {
		h.Set("X-Api-Key", key)
	}
	if version != "" {
		h.Set("Anthropic-Version", version)
	}
	return postTo(t, s.Client(), s.URL+AnthropicMessagesPath, h, payload)
}

type anthErrorEnvelope struct {
	Type  string `json:"type"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
		Details *struct {
			ErrorCode string `json:"error_code"`
		} `json:"details"`
	} `json:"error"`
	RequestID string `json:"request_id"`
}

func TestAnthropicServerSuccessShapeAndRecording(t *testing.T) {
	s := NewAnthropicServer(AnthropicServerConfig{APIKey: "k", APIVersion: "2026-10-21"})
	defer s.Close()
	s.Enqueue(AnthropicReply{
		Text:     "thinking aloud",
		ToolUses: []AnthropicToolUse{{ID: "toolu_1", Name: "decision", Input: json.RawMessage(`{"x":1}`)}},
		Model:    "claude-test-20260101",
		Usage:    &AnthropicUsage{InputTokens: 3, OutputTokens: 4, CacheCreationInputTokens: 5, CacheReadInputTokens: 6},
	})
	resp, b, err := anthPost(t, s, "k", "2026-10-21", anthBody)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("post: %v %v %s", resp, err, b)
	}
	var got struct {
		ID           string           `json:"id"`
		Type         string           `json:"type"`
		Role         string           `json:"role"`
		Model        string           `json:"model"`
		Content      []AnthropicBlock `json:"content"`
		StopReason   string           `json:"stop_reason"`
		StopSequence *string          `json:"stop_sequence"`
		Usage        AnthropicUsage   `json:"usage"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	if !strings.HasPrefix(got.ID, "msg_") || got.Type != "message" || got.Role != "assistant" || got.Model != "claude-test-20260101" ||
		got.StopReason != "tool_use" || got.StopSequence != nil {
		t.Errorf("envelope: %s", b)
	}
	if len(got.Content) != 2 || got.Content[0].Type != "text" || got.Content[0].Text != "thinking aloud" ||
		got.Content[1].Type != "tool_use" || got.Content[1].ID != "toolu_1" || got.Content[1].Name != "decision" || string(got.Content[1].Input) != `{"x":1}` {
		t.Errorf("content: %s", b)
	}
	if got.Usage != (AnthropicUsage{3, 4, 5, 6}) {
		t.Errorf("usage: %s", b)
	}
	if resp.Header.Get("Request-Id") == "" {
		t.Errorf("no request-id header")
	}

	reqs := s.Requests()
	if len(reqs) != 1 {
		t.Fatalf("recorded %d", len(reqs))
	}
	r := reqs[0]
	if r.Model != "claude-test" || r.MaxTokens == nil || *r.MaxTokens != 100 || r.Temperature != nil {
		t.Errorf("decoded fields %+v", r)
	}
	if len(r.System) != 2 || r.System[0].Text != "sys1" || r.System[0].CacheControl != nil ||
		r.System[1].CacheControl == nil || r.System[1].CacheControl.Type != "ephemeral" {
		t.Errorf("system %+v", r.System)
	}
	if len(r.Messages) != 3 || r.Messages[0].Role != "user" || len(r.Messages[0].Content) != 1 || r.Messages[0].Text() != "hi" ||
		r.Messages[1].Role != "assistant" || len(r.Messages[1].Content) != 2 || r.Messages[1].Text() != "ab" {
		t.Errorf("messages %+v", r.Messages)
	}
	if len(r.Tools) != 1 || r.Tools[0].Name != "decision" || string(r.Tools[0].InputSchema) != `{"type":"object"}` {
		t.Errorf("tools %+v", r.Tools)
	}
	if tc := r.ToolChoice; tc == nil || tc.Type != "tool" || tc.Name != "decision" || tc.DisableParallelToolUse == nil || !*tc.DisableParallelToolUse {
		t.Errorf("tool_choice %+v", r.ToolChoice)
	}
	if !bytes.Equal(r.Body, []byte(anthBody)) || r.Header.Get("X-Api-Key") != "k" {
		t.Errorf("raw body or header not recorded")
	}
}

func TestAnthropicServerDefaults(t *testing.T) {
	s := NewAnthropicServer(AnthropicServerConfig{})
	defer s.Close()
	s.Enqueue(AnthropicReply{}, AnthropicReply{Text: "hello there"})
	_, b, err := anthPost(t, s, "", "2023-06-01", anthBody)
	if err != nil || !strings.Contains(string(b), `"content":[]`) || !strings.Contains(string(b), `"stop_reason":"end_turn"`) ||
		!strings.Contains(string(b), `"model":"claude-test"`) {
		t.Errorf("zero reply: %s %v", b, err)
	}
	_, b, _ = anthPost(t, s, "", "2023-06-01", anthBody)
	var got struct{ Usage AnthropicUsage }
	if err := json.Unmarshal(b, &got); err != nil || got.Usage.InputTokens == 0 || got.Usage.OutputTokens == 0 {
		t.Errorf("estimated usage: %s", b)
	}
}

func TestAnthropicServerErrors(t *testing.T) {
	s := NewAnthropicServer(AnthropicServerConfig{APIKey: "k"})
	defer s.Close()
	const v = "2026-10-21"

	resp, b, _ := anthPost(t, s, "wrong", v, anthBody)
	var e anthErrorEnvelope
	if err := json.Unmarshal(b, &e); err != nil || resp.StatusCode != 401 || e.Type != "error" || e.Error.Type != "authentication_error" {
		t.Errorf("wrong key: %d %s", resp.StatusCode, b)
	}
	if resp, b, _ = anthPost(t, s, "k", "", anthBody); resp.StatusCode != 400 || !strings.Contains(string(b), "anthropic-version") {
		t.Errorf("no version: %d %s", resp.StatusCode, b)
	}

	s.Enqueue(AnthropicReply{Status: 429, ErrorMessage: "slow down", ErrorCode: "ramp_limit_exceeded", RetryAfter: "5"})
	resp, b, _ = anthPost(t, s, "k", v, anthBody)
	e = anthErrorEnvelope{}
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatalf("error body %s: %v", b, err)
	}
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "5" || e.Error.Type != "rate_limit_error" || e.Error.Message != "slow down" ||
		e.Error.Details == nil || e.Error.Details.ErrorCode != "ramp_limit_exceeded" || !strings.HasPrefix(e.RequestID, "req_") {
		t.Errorf("429: %d %v %s", resp.StatusCode, resp.Header, b)
	}

	for status, typ := range map[int]string{400: "invalid_request_error", 402: "billing_error", 403: "permission_error", 404: "not_found_error",
		413: "request_too_large", 500: "api_error", 503: "api_error", 504: "timeout_error", 529: "overloaded_error"} {
		if got := AnthropicErrorType(status); got != typ {
			t.Errorf("AnthropicErrorType(%d) = %q, want %q", status, got, typ)
		}
	}

	s.Enqueue(AnthropicReply{Body: []byte("garbage")})
	if _, b, _ = anthPost(t, s, "k", v, anthBody); string(b) != "garbage" {
		t.Errorf("raw body = %q", b)
	}
	s.Enqueue(AnthropicReply{Text: strings.Repeat("x", 100), Truncate: true})
	if _, _, err := anthPost(t, s, "k", v, anthBody); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("truncated: err = %v, want unexpected EOF", err)
	}
	s.Enqueue(AnthropicReply{Hangup: true})
	if _, _, err := anthPost(t, s, "k", v, anthBody); err == nil {
		t.Errorf("hangup: no error")
	}

	// The script is empty now.
	if resp, b, _ = anthPost(t, s, "k", v, anthBody); resp.StatusCode != 500 || !strings.Contains(string(b), "llmtest_script_exhausted") {
		t.Errorf("exhausted: %d %s", resp.StatusCode, b)
	}
	if resp, _, _ = anthPost(t, s, "k", v, "{"); resp.StatusCode != 400 {
		t.Errorf("bad body: %d", resp.StatusCode)
	}
	if n := s.Count(); n != 8 {
		t.Errorf("Count = %d, want 8", n)
	}
}

func TestAnthropicServerValidation(t *testing.T) {
	tests := []struct {
		name, version, body, want string
	}{
		{"no max_tokens", "2026-10-21", `{"model":"m","messages":[{"role":"user","content":"x"}]}`, "max_tokens"},
		{"no messages", "2026-10-21", `{"model":"m","max_tokens":1,"messages":[]}`, "messages"},
		{"temperature on new version", "2026-10-21", `{"model":"m","max_tokens":1,"temperature":0,"messages":[{"role":"user","content":"x"}]}`, "temperature"},
		{"blank text", "2026-10-21", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":" "}]}`, "non-whitespace"},
		{"blank system", "2026-10-21", `{"model":"m","max_tokens":1,"system":"","messages":[{"role":"user","content":"x"}]}`, "system"},
		{"system role", "2026-10-21", `{"model":"m","max_tokens":1,"messages":[{"role":"system","content":"x"}]}`, "role"},
		{"unknown forced tool", "2026-10-21", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"x"}],` +
			`"tools":[{"name":"a","input_schema":{"type":"object"}}],"tool_choice":{"type":"tool","name":"b"}}`, "tool_choice"},
		{"tool_choice without tools", "2026-10-21", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"x"}],"tool_choice":{"type":"auto"}}`, "tool_choice"},
		{"schema not object", "2026-10-21", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"x"}],"tools":[{"name":"a","input_schema":{"type":"string"}}]}`, "input_schema"},
		{"tool_use unanswered", "2026-10-21", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"x"},` +
			`{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"a","input":{}}]},{"role":"user","content":"y"}]}`, "t1"},
		{"tool_result without tool_use", "2026-10-21", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"x"},` +
			`{"role":"assistant","content":"a"},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t9","content":"r"}]}]}`, "t9"},
		{"tool_result after text", "2026-10-21", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"x"},` +
			`{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"a","input":{}}]},` +
			`{"role":"user","content":[{"type":"text","text":"y"},{"type":"tool_result","tool_use_id":"t1"}]}]}`, "first"},
		{"tool_use input not an object", "2026-10-21", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"x"},` +
			`{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"a","input":"q"}]},` +
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1"}]}]}`, "dictionary"},
		{"tool_use id used again", "2026-10-21", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"x"},` +
			`{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"a","input":{}}]},` +
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1"}]},` +
			`{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"a","input":{}}]},` +
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1"}]}]}`, "ids must be unique"},
		{"image in an assistant message", "2026-10-21", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"x"},` +
			`{"role":"assistant","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"aGk="}}]}]}`, "user messages"},
		{"image of an unknown type", "2026-10-21", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[` +
			`{"type":"image","source":{"type":"base64","media_type":"image/tiff","data":"aGk="}}]}]}`, "media_type"},
		{"image without data", "2026-10-21", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[` +
			`{"type":"image","source":{"type":"base64","media_type":"image/png","data":""}}]}]}`, "data"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewAnthropicServer(AnthropicServerConfig{})
			defer s.Close()
			s.Enqueue(AnthropicReply{Text: "unused"})
			resp, b, err := anthPost(t, s, "", tt.version, tt.body)
			wantRejected(t, resp, b, err, len(s.Requests()), "invalid_request_error", tt.want)
		})
	}
	// A well-formed round trip passes.
	ok := NewAnthropicServer(AnthropicServerConfig{})
	defer ok.Close()
	ok.Enqueue(AnthropicReply{Text: "done"})
	resp, b, _ := anthPost(t, ok, "", "2026-10-21", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"x"},`+
		`{"role":"assistant","content":[{"type":"text","text":"looking"},{"type":"tool_use","id":"t1","name":"a","input":{}},{"type":"tool_use","id":"t2","name":"a","input":{"q":1}}]},`+
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":"r2"},{"type":"tool_result","tool_use_id":"t1","is_error":true},{"type":"text","text":"and?"}]}]}`)
	if resp.StatusCode != 200 {
		t.Errorf("valid tool round trip: %d %s", resp.StatusCode, b)
	}
	if got := ok.Requests()[0].Messages[2].Content[1]; got.ToolUseID != "t1" || !got.IsError {
		t.Errorf("tool_result decoded as %+v", got)
	}
	// The old version still takes sampling parameters.
	s := NewAnthropicServer(AnthropicServerConfig{})
	defer s.Close()
	s.Enqueue(AnthropicReply{Text: "ok"})
	resp, b, _ = anthPost(t, s, "", "2023-06-01", `{"model":"m","max_tokens":1,"temperature":0.5,"messages":[{"role":"user","content":"x"}]}`)
	if resp.StatusCode != 200 || *s.Requests()[0].Temperature != 0.5 {
		t.Errorf("old version with temperature: %d %s", resp.StatusCode, b)
	}
}

func TestAnthropicServerDelayAndRespond(t *testing.T) {
	s := NewAnthropicServer(AnthropicServerConfig{SkipRecording: true, Respond: func(r *AnthropicRequest) AnthropicReply {
		return AnthropicReply{Text: "echo " + r.Messages[len(r.Messages)-1].Text()}
	}})
	defer s.Close()
	s.Enqueue(AnthropicReply{Text: "late", Delay: 5 * time.Second})

	req, _ := http.NewRequest(http.MethodPost, s.URL+AnthropicMessagesPath, strings.NewReader(anthBody))
	req.Header.Set("Anthropic-Version", "2026-10-21")
	wantDelayCut(t, s.Client(), req)

	_, b, err := anthPost(t, s, "", "2026-10-21", anthBody)
	if err != nil || !strings.Contains(string(b), `"text":"echo go"`) {
		t.Errorf("Respond: %s %v", b, err)
	}
	if len(s.Requests()) != 0 || s.Count() != 2 {
		t.Errorf("SkipRecording: %d recorded, Count %d", len(s.Requests()), s.Count())
	}
}

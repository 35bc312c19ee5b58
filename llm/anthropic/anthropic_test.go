package anthropic

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/internal/jsonstr"
	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/llm/llmtest"
	"github.com/arbiterhq/arbiter/llm/llmtest/providertest"
)

const testKey = "sk-ant-test-0123456789abcdef"

var (
	testSchema        = []byte(`{ "type": "object", "properties": { "say": { "type": "string" } }, "required": ["say"] }`)
	testSchemaCompact = `{"type":"object","properties":{"say":{"type":"string"}},"required":["say"]}`
)

// newTest starts a server requiring testKey and cfg's API version, and a
// provider pointed at it.
func newTest(t *testing.T, cfg Config) (*llmtest.AnthropicServer, *Provider) {
	t.Helper()
	srv := llmtest.NewAnthropicServer(llmtest.AnthropicServerConfig{APIKey: testKey, APIVersion: cmp.Or(cfg.APIVersion, DefaultAPIVersion)})
	t.Cleanup(srv.Close)
	cfg.BaseURL = cmp.Or(cfg.BaseURL, srv.URL)
	cfg.APIKey = cmp.Or(cfg.APIKey, testKey)
	cfg.Model = cmp.Or(cfg.Model, "claude-test")
	return srv, providertest.MustNew(t, New, cfg)
}

var userRequest = providertest.UserRequest

func decisionRequest() llm.Request {
	req := userRequest("hi")
	req.Schema = &llm.Schema{Name: "decision", JSON: testSchema}
	return req
}

// asLLMError asserts err is an *llm.Error naming p, not leaking testKey.
func asLLMError(t *testing.T, err error, p *Provider) *llm.Error {
	t.Helper()
	return providertest.AsLLMError(t, err, p, testKey)
}

var jsonEqual = providertest.JSONEqual

func TestNewValidation(t *testing.T) {
	providertest.RejectsConfigs(t, New, map[string]Config{
		"no model":             {},
		"unknown protocol":     {Model: "m", Protocol: "xml"},
		"negative timeout":     {Model: "m", Timeout: -time.Second},
		"negative max tokens":  {Model: "m", MaxTokens: -1},
		"relative base URL":    {Model: "m", BaseURL: "/v1"},
		"bad scheme":           {Model: "m", BaseURL: "ftp://example.com"},
		"key header":           {Model: "m", Headers: map[string]string{"x-api-key": "k"}},
		"version header":       {Model: "m", Headers: map[string]string{"Anthropic-Version": "2023-06-01"}},
		"authorization header": {Model: "m", Headers: map[string]string{"authorization": "Bearer k"}},
	})
	p := providertest.MustNew(t, New, Config{Model: "m"})
	if p.Name() != DefaultName || p.Model() != "m" || p.timeout != DefaultTimeout || p.protocol != llm.ProtocolJSON ||
		p.maxTokens != DefaultMaxTokens || p.temperature {
		t.Errorf("defaults: name %q model %q timeout %v protocol %q max tokens %d temperature %v",
			p.Name(), p.Model(), p.timeout, p.protocol, p.maxTokens, p.temperature)
	}
	providertest.CheckSharedClient(t, SharedHTTPClient())
}

func TestJSONProtocolRequestAndResponse(t *testing.T) {
	srv, p := newTest(t, Config{Name: "claude", Headers: map[string]string{"Anthropic-Beta": "b1"}})
	srv.Enqueue(llmtest.AnthropicReply{
		Text:     "Let me decide.",
		ToolUses: []llmtest.AnthropicToolUse{{ID: "toolu_9", Name: DecisionTool, Input: json.RawMessage(`{ "say": "hello" }`)}},
		Model:    "claude-test-20260101",
		Usage:    &llmtest.AnthropicUsage{InputTokens: 100, OutputTokens: 20, CacheCreationInputTokens: 30, CacheReadInputTokens: 2000},
	})
	req := llm.Request{
		Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: "be brief"},
			{Role: llm.RoleUser, Content: "hello"},
			{Role: llm.RoleUser, Content: "more"},
			{Role: llm.RoleAssistant, Content: "hi"},
			{Role: llm.RoleSystem, Content: "late rule"},
			{Role: llm.RoleUser, Content: "again"},
		},
		Schema:      &llm.Schema{Name: "decision", JSON: testSchema},
		Temperature: 0.3,
	}
	resp, err := p.Complete(context.Background(), req)
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	want := llm.Response{
		Protocol:     llm.ProtocolJSON,
		Text:         `{"say":"hello"}`,
		Provider:     "claude",
		Model:        "claude-test-20260101",
		Usage:        llm.Usage{InputTokens: 2130, OutputTokens: 20, CachedInputTokens: 2000},
		FinishReason: "tool_use",
	}
	if !reflect.DeepEqual(resp, want) {
		t.Errorf("response = %+v\nwant %+v", resp, want)
	}

	got := srv.Requests()[0]
	wantBody := `{"model":"claude-test","max_tokens":1024,` +
		`"system":[{"type":"text","text":"be brief"},{"type":"text","text":"late rule","cache_control":{"type":"ephemeral"}}],` +
		`"messages":[{"role":"user","content":[{"type":"text","text":"hello"},{"type":"text","text":"more"}]},` +
		`{"role":"assistant","content":[{"type":"text","text":"hi"}]},{"role":"user","content":[{"type":"text","text":"again"}]}],` +
		`"tools":[{"name":"decision","description":` + string(jsonstr.Append(nil, decisionDescription)) + `,"input_schema":` + testSchemaCompact + `}],` +
		`"tool_choice":{"type":"tool","name":"decision","disable_parallel_tool_use":true}}`
	if string(got.Body) != wantBody {
		t.Errorf("body:\n%s\nwant\n%s", got.Body, wantBody)
	}
	if got.Temperature != nil {
		t.Errorf("temperature sent with API version %s", DefaultAPIVersion)
	}
	h := got.Header
	if h.Get("X-Api-Key") != testKey || h.Get("Anthropic-Version") != DefaultAPIVersion || h.Get("Anthropic-Beta") != "b1" ||
		h.Get("Authorization") != "" || h.Get("Content-Type") != "application/json" {
		t.Errorf("headers: %v", h)
	}
	for k := range h {
		if strings.HasPrefix(strings.ToLower(k), "x-stainless") {
			t.Errorf("SDK telemetry header sent: %s: %s", k, h.Get(k))
		}
	}
}

func TestToolsProtocol(t *testing.T) {
	tools := []llm.ToolDef{
		{Name: "search_tasks", Description: "Find tasks.", Parameters: json.RawMessage(`{"type": "object", "properties": {"query": {"type": "string"}}}`)},
		{Name: "list_events"},
	}
	srv, p := newTest(t, Config{Protocol: llm.ProtocolTools})
	srv.Enqueue(llmtest.AnthropicReply{
		Text: "Searching now.",
		ToolUses: []llmtest.AnthropicToolUse{
			{ID: "toolu_1", Name: "search_tasks", Input: json.RawMessage(`{"query": "launch"}`)},
			{ID: "toolu_2", Name: "list_events"},
		},
	})
	req := userRequest("find launch tasks")
	req.Tools = tools
	req.Schema = &llm.Schema{JSON: testSchema} // not sent in the tools protocol
	req.MaxTokens = 300
	resp, err := p.Complete(context.Background(), req)
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	wantCalls := []llm.ToolCall{
		{ID: "toolu_1", Name: "search_tasks", Arguments: json.RawMessage(`{"query":"launch"}`)},
		{ID: "toolu_2", Name: "list_events", Arguments: json.RawMessage(`{}`)},
	}
	if resp.Protocol != llm.ProtocolTools || resp.Text != "Searching now." || !reflect.DeepEqual(resp.ToolCalls, wantCalls) || resp.FinishReason != "tool_use" {
		t.Errorf("response = %+v", resp)
	}

	got := srv.Requests()[0]
	if got.MaxTokens == nil || *got.MaxTokens != 300 || len(got.System) != 0 {
		t.Errorf("max_tokens %v, system %+v", got.MaxTokens, got.System)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(got.Body, &raw); err != nil {
		t.Fatal(err)
	}
	if _, ok := raw["system"]; ok {
		t.Errorf("system sent without system messages: %s", got.Body)
	}
	if !jsonEqual(t, raw["tools"], `[{"name":"search_tasks","description":"Find tasks.","input_schema":{"type":"object","properties":{"query":{"type":"string"}}}},`+
		`{"name":"list_events","input_schema":{"type":"object","properties":{}}}]`) {
		t.Errorf("tools = %s", raw["tools"])
	}
	if string(raw["tool_choice"]) != `{"type":"auto","disable_parallel_tool_use":true}` {
		t.Errorf("tool_choice = %s", raw["tool_choice"])
	}

	// Text alone is a valid answer in the tools protocol.
	srv.Enqueue(llmtest.AnthropicReply{Text: "Which list?"})
	resp, err = p.Complete(context.Background(), req)
	if err != nil || resp.Text != "Which list?" || resp.ToolCalls != nil || resp.Protocol != llm.ProtocolTools {
		t.Errorf("text-only answer: %+v %v", resp, err)
	}
}

func TestProtocolFallbacks(t *testing.T) {
	tests := []struct {
		name      string
		protocol  llm.Protocol
		schema    bool
		reply     llmtest.AnthropicReply
		wantTools string // expected tools member, "" = absent
		wantText  string
	}{
		{"tools protocol without tools uses the decision tool", llm.ProtocolTools, true,
			llmtest.AnthropicReply{ToolUses: []llmtest.AnthropicToolUse{{Name: DecisionTool, Input: json.RawMessage(`{"say":"x"}`)}}},
			`[{"name":"decision","description":` + string(jsonstr.Append(nil, decisionDescription)) + `,"input_schema":` + testSchemaCompact + `}]`, `{"say":"x"}`},
		{"json protocol without schema sends no tools", llm.ProtocolJSON, false,
			llmtest.AnthropicReply{Content: []llmtest.AnthropicBlock{{Type: "thinking"}, {Type: "text", Text: `{"say":`}, {Type: "text", Text: `"y"}`}}},
			"", `{"say":"y"}`},
		{"json protocol ignores stray tool calls", llm.ProtocolJSON, false,
			llmtest.AnthropicReply{Text: "plain", ToolUses: []llmtest.AnthropicToolUse{{Name: "other"}}}, "", "plain"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, p := newTest(t, Config{Protocol: tt.protocol})
			srv.Enqueue(tt.reply)
			req := userRequest("hi")
			if tt.schema {
				req.Schema = &llm.Schema{JSON: testSchema}
			}
			resp, err := p.Complete(context.Background(), req)
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
			if resp.Protocol != llm.ProtocolJSON || resp.Text != tt.wantText || resp.ToolCalls != nil {
				t.Errorf("response = %+v, want JSON text %q", resp, tt.wantText)
			}
			var raw map[string]json.RawMessage
			if err := json.Unmarshal(srv.Requests()[0].Body, &raw); err != nil {
				t.Fatal(err)
			}
			tools, ok := raw["tools"]
			switch {
			case tt.wantTools == "" && (ok || raw["tool_choice"] != nil):
				t.Errorf("tools sent: %s", srv.Requests()[0].Body)
			case tt.wantTools != "" && string(tools) != tt.wantTools:
				t.Errorf("tools = %s\nwant %s", tools, tt.wantTools)
			}
		})
	}
}

func TestTemperatureByAPIVersion(t *testing.T) {
	tests := []struct {
		version string
		want    *float64
	}{
		{"", nil},
		{LegacyAPIVersion, new(0.7)},
	}
	for _, tt := range tests {
		t.Run("version "+tt.version, func(t *testing.T) {
			srv, p := newTest(t, Config{APIVersion: tt.version})
			srv.Enqueue(llmtest.AnthropicReply{Text: "ok"})
			req := userRequest("hi")
			req.Temperature = 0.7
			if _, err := p.Complete(context.Background(), req); err != nil {
				t.Fatalf("Complete: %v", err)
			}
			got := srv.Requests()[0]
			if !reflect.DeepEqual(got.Temperature, tt.want) {
				t.Errorf("temperature = %v, want %v", got.Temperature, tt.want)
			}
			if v := got.Header.Get("Anthropic-Version"); tt.version != "" && v != tt.version {
				t.Errorf("anthropic-version = %q", v)
			}
		})
	}
}

func TestMessageMapping(t *testing.T) {
	long := strings.Repeat("Answer briefly and propose at most one action. ", 30) // cached encoding
	tests := []struct {
		name   string
		msgs   []llm.Message
		system string // expected system member, "" = absent
		want   string // expected messages member
	}{
		{"assistant first is sent as is",
			[]llm.Message{{Role: llm.RoleAssistant, Content: "How can I help?"}, {Role: llm.RoleUser, Content: "list tasks"}}, "",
			`[{"role":"assistant","content":[{"type":"text","text":"How can I help?"}]},{"role":"user","content":[{"type":"text","text":"list tasks"}]}]`},
		{"blank messages are left out",
			[]llm.Message{{Role: llm.RoleSystem, Content: " \n"}, {Role: llm.RoleUser, Content: "a"}, {Role: llm.RoleAssistant, Content: ""}, {Role: llm.RoleUser, Content: "b"}}, "",
			`[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]`},
		{"long system prompt, escapes",
			[]llm.Message{{Role: llm.RoleSystem, Content: long}, {Role: llm.RoleSystem, Content: "  "}, {Role: llm.RoleUser, Content: "say \"hi\"\n\t<b>é\u2028"}},
			`[{"type":"text","text":` + string(jsonstr.Append(nil, long)) + `,"cache_control":{"type":"ephemeral"}}]`,
			`[{"role":"user","content":[{"type":"text","text":"say \"hi\"\n\t<b>é\u2028"}]}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, p := newTest(t, Config{})
			for range 2 { // the second call uses the cached encodings
				srv.Enqueue(llmtest.AnthropicReply{Text: "ok"})
				if _, err := p.Complete(context.Background(), llm.Request{Messages: tt.msgs}); err != nil {
					t.Fatalf("Complete: %v", err)
				}
			}
			for _, got := range srv.Requests() {
				var raw map[string]json.RawMessage
				if err := json.Unmarshal(got.Body, &raw); err != nil {
					t.Fatalf("decode %s: %v", got.Body, err)
				}
				if sys, ok := raw["system"]; (tt.system == "") == ok || ok && !jsonEqual(t, sys, tt.system) {
					t.Errorf("system = %s\nwant %s", sys, tt.system)
				}
				if !jsonEqual(t, raw["messages"], tt.want) {
					t.Errorf("messages = %s\nwant %s", raw["messages"], tt.want)
				}
			}
		})
	}
}

func TestUnsendableRequests(t *testing.T) {
	tests := []struct {
		name string
		req  llm.Request
	}{
		{"unknown role", llm.Request{Messages: []llm.Message{{Role: "function", Content: "x"}}}},
		{"tool result without a call", llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}, {Role: llm.RoleTool, ToolCallID: "t1", Content: "r"}}}},
		{"call without a result", llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"},
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "t1", Name: "t"}}}, {Role: llm.RoleUser, Content: "y"}}}},
		{"named tool not offered", func() llm.Request {
			r := userRequest("x")
			r.Tools = []llm.ToolDef{{Name: "t"}}
			r.ToolChoice = llm.ToolChoice{Mode: llm.ToolNamed, Name: "u"}
			return r
		}()},
		{"no messages", llm.Request{}},
		{"only system", llm.Request{Messages: []llm.Message{{Role: llm.RoleSystem, Content: "x"}}}},
		{"schema without document", func() llm.Request { r := userRequest("x"); r.Schema = &llm.Schema{Name: "d"}; return r }()},
		{"schema not JSON", func() llm.Request { r := userRequest("x"); r.Schema = &llm.Schema{JSON: []byte(`{"type":`)}; return r }()},
		{"schema not an object", func() llm.Request { r := userRequest("x"); r.Schema = &llm.Schema{JSON: []byte(`[1]`)}; return r }()},
		{"tool without name", func() llm.Request { r := userRequest("x"); r.Tools = []llm.ToolDef{{Description: "d"}}; return r }()},
		{"tool parameters not an object", func() llm.Request {
			r := userRequest("x")
			r.Tools = []llm.ToolDef{{Name: "t", Parameters: json.RawMessage(`"string"`)}}
			return r
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, p := newTest(t, Config{Protocol: llm.ProtocolTools})
			_, err := p.Complete(context.Background(), tt.req)
			if e := asLLMError(t, err, p); e.Kind != llm.ErrBadRequest {
				t.Errorf("kind = %s, want bad_request (%v)", e.Kind, err)
			}
			if n := srv.Count(); n != 0 {
				t.Errorf("server saw %d requests, want 0", n)
			}
		})
	}
}

func TestEncodedPartsFollowChanges(t *testing.T) {
	srv, p := newTest(t, Config{Protocol: llm.ProtocolTools})
	srv.Enqueue(llmtest.AnthropicReply{Text: "1"}, llmtest.AnthropicReply{Text: "2"},
		llmtest.AnthropicReply{ToolUses: []llmtest.AnthropicToolUse{{Name: DecisionTool}}},
		llmtest.AnthropicReply{ToolUses: []llmtest.AnthropicToolUse{{Name: DecisionTool}}})
	req := userRequest("x")
	req.Tools = []llm.ToolDef{{Name: "a", Parameters: json.RawMessage(`{"type":"object","description":"1"}`)}}
	if _, err := p.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	// The same tool list and parameter bytes, changed in place.
	req.Tools[0].Parameters[len(`{"type":"object","description":"`)] = '2'
	if _, err := p.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	schema := &llm.Schema{JSON: []byte(`{"type":"object"}`)}
	req = userRequest("x")
	req.Schema = schema
	if _, err := p.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	schema.JSON = []byte(`{"type":"object","required":["say"]}`)
	if _, err := p.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if s := string(reqs[1].Tools[0].InputSchema); s != `{"type":"object","description":"2"}` {
		t.Errorf("second call sent stale tools: %s", s)
	}
	if s := string(reqs[3].Tools[0].InputSchema); s != `{"type":"object","required":["say"]}` {
		t.Errorf("fourth call sent a stale schema: %s", s)
	}
}

func TestErrorClasses(t *testing.T) {
	httpDate := time.Now().Add(30 * time.Second).UTC().Format(http.TimeFormat)
	decision := []llmtest.AnthropicToolUse{{Name: DecisionTool, Input: json.RawMessage(`{"say":"x"}`)}}
	tests := []struct {
		name       string
		reply      llmtest.AnthropicReply
		kind       llm.ErrorKind
		status     int
		retryAfter time.Duration // expected, with 2s tolerance for dates
		errType    string        // expected APIError.Type, if any
	}{
		{"400", llmtest.AnthropicReply{Status: 400, ErrorMessage: "messages: roles must alternate"}, llm.ErrBadRequest, 400, 0, "invalid_request_error"},
		{"400 credit balance", llmtest.AnthropicReply{Status: 400, ErrorMessage: "Your credit balance is too low to access the Anthropic API."}, llm.ErrBilling, 400, 0, "invalid_request_error"},
		{"401", llmtest.AnthropicReply{Status: 401, ErrorMessage: "invalid x-api-key"}, llm.ErrAuth, 401, 0, "authentication_error"},
		{"402", llmtest.AnthropicReply{Status: 402, ErrorMessage: "payment required"}, llm.ErrBilling, 402, 0, "billing_error"},
		{"402 linked org", llmtest.AnthropicReply{Status: 402, ErrorType: "invalid_request_error", ErrorCode: "linked_organization_spend_limit_reached"}, llm.ErrBilling, 402, 0, "invalid_request_error"},
		{"403 permission", llmtest.AnthropicReply{Status: 403, ErrorMessage: "Your API key does not have permission to use the specified resource."}, llm.ErrAuth, 403, 0, "permission_error"},
		{"403 billing_error", llmtest.AnthropicReply{Status: 403, ErrorType: "billing_error", ErrorMessage: "billing issue"}, llm.ErrBilling, 403, 0, "billing_error"},
		{"403 not billable", llmtest.AnthropicReply{Status: 403, ErrorCode: "user_profile_not_billable"}, llm.ErrBilling, 403, 0, "permission_error"},
		{"404 model", llmtest.AnthropicReply{Status: 404, ErrorMessage: "model: claude-nope"}, llm.ErrBadRequest, 404, 0, "not_found_error"},
		{"413", llmtest.AnthropicReply{Status: 413, ErrorMessage: "Request exceeds the maximum allowed number of bytes."}, llm.ErrBadRequest, 413, 0, "request_too_large"},
		{"429 retry-after seconds", llmtest.AnthropicReply{Status: 429, RetryAfter: "7"}, llm.ErrRateLimited, 429, 7 * time.Second, "rate_limit_error"},
		{"429 retry-after-ms", llmtest.AnthropicReply{Status: 429, RetryAfter: "2", Header: http.Header{"Retry-After-Ms": {"1500"}}}, llm.ErrRateLimited, 429, 1500 * time.Millisecond, "rate_limit_error"},
		{"429 retry-after date", llmtest.AnthropicReply{Status: 429, RetryAfter: httpDate}, llm.ErrRateLimited, 429, 30 * time.Second, "rate_limit_error"},
		{"429 no retry-after", llmtest.AnthropicReply{Status: 429}, llm.ErrRateLimited, 429, 0, "rate_limit_error"},
		{"429 spend limit", llmtest.AnthropicReply{Status: 429, ErrorCode: "enforced_spend_limit_reached", RetryAfter: "60"}, llm.ErrBilling, 429, 0, "rate_limit_error"},
		{"500", llmtest.AnthropicReply{Status: 500, ErrorMessage: "Internal server error"}, llm.ErrTransient, 500, 0, "api_error"},
		{"502 html body", llmtest.AnthropicReply{Status: 502, Body: []byte("<html>bad gateway</html>"), Header: http.Header{"Content-Type": {"text/html"}}}, llm.ErrTransient, 502, 0, ""},
		{"503 retry-after", llmtest.AnthropicReply{Status: 503, RetryAfter: "3"}, llm.ErrTransient, 503, 3 * time.Second, "api_error"},
		{"504", llmtest.AnthropicReply{Status: 504}, llm.ErrTransient, 504, 0, "timeout_error"},
		{"529 overloaded", llmtest.AnthropicReply{Status: 529, ErrorMessage: "Overloaded", RetryAfter: "1"}, llm.ErrTransient, 529, time.Second, "overloaded_error"},
		{"error status, truncated body", llmtest.AnthropicReply{Status: 500, ErrorMessage: strings.Repeat("x", 100), Truncate: true}, llm.ErrTransient, 500, 0, ""},
		{"200 garbage body", llmtest.AnthropicReply{Body: []byte("<<not json>>")}, llm.ErrBadResponse, 200, 0, ""},
		{"200 not JSON content type", llmtest.AnthropicReply{Body: []byte("hello"), Header: http.Header{"Content-Type": {"text/plain"}}}, llm.ErrBadResponse, 200, 0, ""},
		{"200 truncated body", llmtest.AnthropicReply{ToolUses: decision, Truncate: true}, llm.ErrTransient, 200, 0, ""},
		{"200 empty body", llmtest.AnthropicReply{Body: []byte{}}, llm.ErrTransient, 200, 0, ""},
		{"200 empty content", llmtest.AnthropicReply{}, llm.ErrBadResponse, 0, 0, ""},
		{"200 text without decision", llmtest.AnthropicReply{Text: `{"say":"x"}`}, llm.ErrBadResponse, 0, 0, ""},
		{"200 other tool instead of decision", llmtest.AnthropicReply{ToolUses: []llmtest.AnthropicToolUse{{Name: "search"}}}, llm.ErrBadResponse, 0, 0, ""},
		{"200 invalid tool input", llmtest.AnthropicReply{Body: []byte(`{"type":"message","content":[{"type":"tool_use","id":"t","name":"decision","input":{"a":}}]}`)},
			llm.ErrBadResponse, 200, 0, ""},
		{"200 decision cut off", llmtest.AnthropicReply{ToolUses: decision, StopReason: "max_tokens"}, llm.ErrBadResponse, 0, 0, ""},
		{"200 refusal", llmtest.AnthropicReply{Text: "I can't help with that.", StopReason: "refusal"}, llm.ErrContentPolicy, 0, 0, ""},
		{"200 refusal with decision", llmtest.AnthropicReply{ToolUses: decision, StopReason: "refusal"}, llm.ErrContentPolicy, 0, 0, ""},
		{"200 error object", llmtest.AnthropicReply{Body: []byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)}, llm.ErrTransient, 0, 0, "overloaded_error"},
		{"connection reset", llmtest.AnthropicReply{Hangup: true}, llm.ErrTransient, 0, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, p := newTest(t, Config{})
			srv.Enqueue(tt.reply)
			_, err := p.Complete(context.Background(), decisionRequest())
			providertest.CheckError(t, err, p, testKey, tt.kind, tt.status, tt.retryAfter)
			var ae *APIError
			if tt.errType != "" && (!errors.As(err, &ae) || ae.Type != tt.errType) {
				t.Errorf("APIError: got %+v, want type %q", ae, tt.errType)
			}
			if ae != nil && tt.reply.ErrorCode != "" && ae.Code != tt.reply.ErrorCode {
				t.Errorf("APIError code = %q, want %q", ae.Code, tt.reply.ErrorCode)
			}
			if n := srv.Count(); n != 1 {
				t.Errorf("server saw %d requests, want exactly 1 (no retries)", n)
			}
		})
	}
}

func TestRefusalMessage(t *testing.T) {
	srv, p := newTest(t, Config{})
	srv.Enqueue(llmtest.AnthropicReply{Text: "I can't help with that. " + strings.Repeat("x", 300), StopReason: "refusal"})
	_, err := p.Complete(context.Background(), decisionRequest())
	e := asLLMError(t, err, p)
	if e.Kind != llm.ErrContentPolicy || !strings.Contains(e.Message, "I can't help with that.") || !strings.HasSuffix(e.Message, "...") || len(e.Message) > 300 {
		t.Errorf("refusal error = %v", err)
	}
}

// TestWrongKeyIsAnAPIError: beyond the conformance suite's auth kind, the
// error carries the API's type and request id.
func TestWrongKeyIsAnAPIError(t *testing.T) {
	srv := llmtest.NewAnthropicServer(llmtest.AnthropicServerConfig{APIKey: testKey})
	defer srv.Close()
	p := providertest.MustNew(t, New, Config{BaseURL: srv.URL, APIKey: "sk-ant-wrong", Model: "m"})
	_, err := p.Complete(context.Background(), userRequest("hi"))
	var ae *APIError
	if k := llm.KindOf(err); k != llm.ErrAuth || !errors.As(err, &ae) || ae.Type != "authentication_error" || ae.RequestID == "" {
		t.Errorf("kind = %s, APIError %+v, want auth (%v)", k, ae, err)
	}
}

func TestIgnoresEnvironment(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-from-env")
	t.Setenv("ANTHROPIC_AUTH_TOKEN", "token-from-env")
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1")
	t.Setenv("ANTHROPIC_CUSTOM_HEADERS", "X-From-Env: 1")
	t.Setenv("ANTHROPIC_OPEN_TELEMETRY", "true")
	srv := llmtest.NewAnthropicServer(llmtest.AnthropicServerConfig{})
	defer srv.Close()
	srv.Enqueue(llmtest.AnthropicReply{Text: "ok"})
	p := providertest.MustNew(t, New, Config{BaseURL: srv.URL, Model: "local"})
	if _, err := p.Complete(context.Background(), userRequest("hi")); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	h := srv.Requests()[0].Header
	if h.Get("X-Api-Key") != "" || h.Get("Authorization") != "" || h.Get("X-From-Env") != "" || h.Get("Traceparent") != "" {
		t.Errorf("environment leaked into the request: %v", h)
	}
}

func TestToolTranscript(t *testing.T) {
	tools := []llm.ToolDef{{Name: "get_payment_status"}, {Name: "search_support_policy"}}
	req := llm.Request{
		Tools:             tools,
		ToolChoice:        llm.ToolChoice{Mode: llm.ToolRequired},
		ParallelToolCalls: true,
		Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: "You are the support agent."},
			{Role: llm.RoleUser, Content: "Money was taken, no access."},
			{Role: llm.RoleAssistant, Content: "Checking.", ToolCalls: []llm.ToolCall{
				{ID: "toolu_1", Name: "get_payment_status", Arguments: json.RawMessage(`{ "ticket_id": "T-4821" }`)},
				{ID: "toolu_2", Name: "search_support_policy"},
			}},
			{Role: llm.RoleTool, ToolCallID: "toolu_2", Content: "policy text"},
			{Role: llm.RoleTool, ToolCallID: "toolu_1", Content: "payments down", IsError: true},
			{Role: llm.RoleUser, Content: "any news?"},
		},
	}
	srv, p := newTest(t, Config{Protocol: llm.ProtocolTools})
	srv.Enqueue(llmtest.AnthropicReply{Text: "The payment is confirmed."})
	if _, err := p.Complete(context.Background(), req); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(srv.Requests()[0].Body, &raw); err != nil {
		t.Fatal(err)
	}
	want := `[{"role":"user","content":[{"type":"text","text":"Money was taken, no access."}]},` +
		`{"role":"assistant","content":[{"type":"text","text":"Checking."},` +
		`{"type":"tool_use","id":"toolu_1","name":"get_payment_status","input":{"ticket_id":"T-4821"}},` +
		`{"type":"tool_use","id":"toolu_2","name":"search_support_policy","input":{}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_2","content":"policy text"},` +
		`{"type":"tool_result","tool_use_id":"toolu_1","content":"payments down","is_error":true},` +
		`{"type":"text","text":"any news?"}]}]`
	if string(raw["messages"]) != want {
		t.Errorf("messages =\n%s\nwant\n%s", raw["messages"], want)
	}
	if string(raw["tool_choice"]) != `{"type":"any"}` {
		t.Errorf("tool_choice = %s, want any with parallel use allowed", raw["tool_choice"])
	}

	for _, tt := range []struct {
		choice   llm.ToolChoice
		parallel bool
		want     string
	}{
		{llm.ToolChoice{Mode: llm.ToolNamed, Name: "search_support_policy"}, false, `{"type":"tool","name":"search_support_policy","disable_parallel_tool_use":true}`},
		{llm.ToolChoice{Mode: llm.ToolNone}, false, `{"type":"none"}`},
		{llm.ToolChoice{}, true, `{"type":"auto"}`},
	} {
		req.ToolChoice, req.ParallelToolCalls = tt.choice, tt.parallel
		srv.Enqueue(llmtest.AnthropicReply{Text: "ok"})
		if _, err := p.Complete(context.Background(), req); err != nil {
			t.Fatalf("%+v: Complete: %v", tt.choice, err)
		}
		reqs := srv.Requests()
		if err := json.Unmarshal(reqs[len(reqs)-1].Body, &raw); err != nil {
			t.Fatal(err)
		}
		if string(raw["tool_choice"]) != tt.want {
			t.Errorf("%+v parallel %v: tool_choice = %s, want %s", tt.choice, tt.parallel, raw["tool_choice"], tt.want)
		}
	}
}

// A message marked Cache carries the cache breakpoint on its last block,
// after the system prompt's.
func TestCacheBreakpointOnAMessage(t *testing.T) {
	srv, p := newTest(t, Config{})
	srv.Enqueue(llmtest.AnthropicReply{Text: "ok"})
	req := llm.Request{Messages: []llm.Message{
		{Role: llm.RoleSystem, Content: "You interview."},
		{Role: llm.RoleUser, Content: "a 50 KB log", Cache: true},
		{Role: llm.RoleAssistant, Content: "Which version?"},
		{Role: llm.RoleUser, Content: "11"},
	}}
	if _, err := p.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	got := srv.Requests()[0]
	if cc := got.Messages[0].Content[0].CacheControl; cc == nil || cc.Type != "ephemeral" {
		t.Errorf("first message blocks %+v: want a cache breakpoint", got.Messages[0].Content)
	}
	if got.Messages[2].Content[0].CacheControl != nil || got.System[0].CacheControl == nil {
		t.Errorf("breakpoints elsewhere: %s", got.Body)
	}
}

package openaicompat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/llm/llmtest"
	"github.com/arbiterhq/arbiter/llm/llmtest/providertest"
)

// Wire tests: both decision protocols against the fake server, request
// shape, answers and every failure class.

// testTools is a catalog as the engine passes it: the same slice on every
// request. The second tool's parameters carry spaces to check compaction,
// the third has neither description nor parameters.
var testTools = []llm.ToolDef{
	{Name: "search_tasks", Description: "Search the board's tasks.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`)},
	{Name: "create_task", Description: "Create a task \"now\".",
		Parameters: json.RawMessage(`{ "type": "object",
			"properties": { "title": { "type": "string" } } }`)},
	{Name: "list_events"},
}

const testToolsJSON = `[` +
	`{"type":"function","function":{"name":"search_tasks","description":"Search the board's tasks.",` +
	`"parameters":{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}}},` +
	`{"type":"function","function":{"name":"create_task","description":"Create a task \"now\".",` +
	`"parameters":{"type":"object","properties":{"title":{"type":"string"}}}}},` +
	`{"type":"function","function":{"name":"list_events","parameters":{"type":"object","properties":{}}}}]`

var protocols = []llm.Protocol{llm.ProtocolJSON, llm.ProtocolTools}

// decisionRequest carries both forms of the decision contract, as the
// engine sends it.
func decisionRequest() llm.Request {
	return llm.Request{
		Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: "You are the team assistant."},
			{Role: llm.RoleUser, Content: "Find the launch tasks."},
		},
		Schema:    &llm.Schema{Name: "decision", JSON: testSchemaJSON, Strict: testSchemaStrict},
		Tools:     testTools,
		MaxTokens: 200,
	}
}

// topLevel decodes a request body's members.
func topLevel(t *testing.T, body []byte) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("decode body %s: %v", body, err)
	}
	return m
}

// noKeyLeak fails if the API key appears anywhere in err's chain.
func noKeyLeak(t *testing.T, err error) {
	t.Helper()
	for e := err; e != nil; e = errors.Unwrap(e) {
		if strings.Contains(e.Error(), testKey) || strings.Contains(fmt.Sprintf("%+v", e), testKey) {
			t.Errorf("error chain leaks the API key at %T: %v", e, e)
		}
	}
}

func TestWireRequestShape(t *testing.T) {
	strictFormat := `{"type":"json_schema","json_schema":{"name":"decision","strict":true,"schema":` + string(testSchemaStrict) + `}}`
	base := []string{"max_tokens", "messages", "model", "temperature"}
	tests := []struct {
		name    string
		cfg     Config
		noTools bool
		want    map[string]string // members besides base, with exact values
	}{
		{"json", Config{Protocol: llm.ProtocolJSON}, false,
			map[string]string{"response_format": strictFormat}},
		{"default protocol is json", Config{}, false,
			map[string]string{"response_format": strictFormat}},
		{"json, json_object", Config{Output: llm.OutputJSONObject}, false,
			map[string]string{"response_format": `{"type":"json_object"}`}},
		{"tools", Config{Protocol: llm.ProtocolTools}, false,
			map[string]string{"tools": testToolsJSON, "tool_choice": `"auto"`, "parallel_tool_calls": "false"}},
		{"tools, parallel field omitted", Config{Protocol: llm.ProtocolTools, OmitParallelToolCalls: true}, false,
			map[string]string{"tools": testToolsJSON, "tool_choice": `"auto"`}},
		{"tools, request without tools", Config{Protocol: llm.ProtocolTools}, true,
			map[string]string{"response_format": strictFormat}},
		{"tools, request without tools, json_schema", Config{Protocol: llm.ProtocolTools, Output: llm.OutputJSONSchema}, true,
			map[string]string{"response_format": `{"type":"json_schema","json_schema":{"name":"decision","strict":false,"schema":` + string(testSchemaJSON) + `}}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, p := newTest(t, tt.cfg)
			srv.Enqueue(llmtest.HTTPReply{Content: `{"say":"hi"}`})
			req := decisionRequest()
			if tt.noTools {
				req.Tools = nil
			}
			if _, err := p.Complete(context.Background(), req); err != nil {
				t.Fatalf("Complete: %v", err)
			}
			got := srv.Requests()[0]
			members := topLevel(t, got.Body)
			wantKeys := slices.Clone(base)
			for k := range tt.want {
				wantKeys = append(wantKeys, k)
			}
			slices.Sort(wantKeys)
			gotKeys := slices.Sorted(func(yield func(string) bool) {
				for k := range members {
					if !yield(k) {
						return
					}
				}
			})
			if !slices.Equal(gotKeys, wantKeys) {
				t.Errorf("members = %v, want %v\nbody %s", gotKeys, wantKeys, got.Body)
			}
			for k, want := range tt.want {
				if v, ok := members[k]; ok && !jsonEqual(t, v, want) {
					t.Errorf("%s = %s\nwant %s", k, v, want)
				}
			}
			if v, ok := members["tools"]; ok && string(v) != testToolsJSON {
				t.Errorf("tools not compact or not in order:\n%s\nwant\n%s", v, testToolsJSON)
			}
			if len(got.Tools) > 0 && (got.Tools[1].Function.Name != "create_task" || string(got.ToolChoice) != `"auto"`) {
				t.Errorf("server decoded tools %+v choice %s", got.Tools, got.ToolChoice)
			}
			if !json.Valid(got.Body) {
				t.Errorf("body is not valid JSON: %s", got.Body)
			}
		})
	}
}

func TestToolCatalogCache(t *testing.T) {
	srv, p := newTest(t, Config{Protocol: llm.ProtocolTools})
	srv.Enqueue(llmtest.HTTPReply{Content: "a"}, llmtest.HTTPReply{Content: "b"}, llmtest.HTTPReply{Content: "c"})
	ctx := context.Background()
	catalog := slices.Clone(testTools)
	req := decisionRequest()
	req.Tools = catalog
	for range 2 {
		if _, err := p.Complete(ctx, req); err != nil {
			t.Fatalf("Complete: %v", err)
		}
	}
	if n := p.tools.Len(); n != 1 {
		t.Errorf("%d catalogs cached after two calls with one catalog, want 1", n)
	}
	// The same array, reused for another catalog, is encoded afresh.
	catalog[0].Name = "find_tasks"
	if _, err := p.Complete(ctx, req); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	reqs := srv.Requests()
	if string(reqs[0].Body) != string(reqs[1].Body) {
		t.Errorf("same catalog, different bodies:\n%s\n%s", reqs[0].Body, reqs[1].Body)
	}
	if name := reqs[2].Tools[0].Function.Name; name != "find_tasks" {
		t.Errorf("reused array sent the old catalog: first tool %q", name)
	}
}

func TestBadToolsNotSent(t *testing.T) {
	tests := []struct {
		name  string
		tools []llm.ToolDef
	}{
		{"no name", []llm.ToolDef{{Description: "x"}}},
		{"duplicate", []llm.ToolDef{{Name: "a"}, {Name: "a"}}},
		{"parameters not JSON", []llm.ToolDef{{Name: "a", Parameters: json.RawMessage(`{"type":`)}}},
		{"parameters not an object", []llm.ToolDef{{Name: "a", Parameters: json.RawMessage(`["x"]`)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, p := newTest(t, Config{Protocol: llm.ProtocolTools})
			req := userRequest("hi")
			req.Tools = tt.tools
			for range 2 { // a failed encoding is not cached
				_, err := p.Complete(context.Background(), req)
				if e := asLLMError(t, err, p); e.Kind != llm.ErrBadRequest {
					t.Errorf("kind = %s, want bad_request (%v)", e.Kind, err)
				}
			}
			if n := srv.Count(); n != 0 {
				t.Errorf("server saw %d requests, want 0", n)
			}
		})
	}
}

// rawAnswer is a 200 answer whose message is given as JSON.
func rawAnswer(message, finish string) llmtest.HTTPReply {
	return llmtest.HTTPReply{Body: []byte(`{"id":"c1","object":"chat.completion","created":1,"model":"test-model",` +
		`"choices":[{"index":0,"finish_reason":"` + finish + `","message":` + message + `}],` +
		`"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`)}
}

func TestWireAnswers(t *testing.T) {
	search := llmtest.WireToolCall{ID: "call_a", Name: "search_tasks", Arguments: `{"query":"launch"}`}
	create := llmtest.WireToolCall{ID: "call_b", Name: "create_task", Arguments: `{"title":"Ship it"}`}
	usage := &llmtest.WireUsage{PromptTokens: 2000, CompletionTokens: 50, TotalTokens: 2050}
	call := func(id, name, args string) llm.ToolCall {
		return llm.ToolCall{ID: id, Name: name, Arguments: json.RawMessage(args)}
	}
	tests := []struct {
		name     string
		protocol llm.Protocol
		noTools  bool // send the request without Tools
		reply    llmtest.HTTPReply
		want     llm.Response // Provider and Model are filled in; Usage defaults to 10/5 for raw answers
		kind     llm.ErrorKind
	}{
		{name: "json success", protocol: llm.ProtocolJSON,
			reply: llmtest.HTTPReply{Content: `{"say":"hi"}`, Usage: usage},
			want:  llm.Response{Protocol: llm.ProtocolJSON, Text: `{"say":"hi"}`, FinishReason: "stop", Usage: llm.Usage{InputTokens: 2000, OutputTokens: 50}}},
		{name: "json cached tokens", protocol: llm.ProtocolJSON,
			reply: llmtest.HTTPReply{Content: `{"say":"hi"}`, Usage: usage, CachedTokens: 1536},
			want:  llm.Response{Protocol: llm.ProtocolJSON, Text: `{"say":"hi"}`, FinishReason: "stop", Usage: llm.Usage{InputTokens: 2000, OutputTokens: 50, CachedInputTokens: 1536}}},
		{name: "json ignores tool calls", protocol: llm.ProtocolJSON,
			reply: llmtest.HTTPReply{Content: `{"say":"hi"}`, ToolCalls: []llmtest.WireToolCall{search}, Usage: usage},
			want:  llm.Response{Protocol: llm.ProtocolJSON, Text: `{"say":"hi"}`, FinishReason: "tool_calls", Usage: llm.Usage{InputTokens: 2000, OutputTokens: 50}}},
		{name: "json, only a tool call", protocol: llm.ProtocolJSON,
			reply: llmtest.HTTPReply{ToolCalls: []llmtest.WireToolCall{search}}, kind: llm.ErrBadResponse},
		{name: "tools, request without tools answers json", protocol: llm.ProtocolTools, noTools: true,
			reply: llmtest.HTTPReply{Content: `{"say":"hi"}`, ToolCalls: []llmtest.WireToolCall{search}, Usage: usage},
			want:  llm.Response{Protocol: llm.ProtocolJSON, Text: `{"say":"hi"}`, FinishReason: "tool_calls", Usage: llm.Usage{InputTokens: 2000, OutputTokens: 50}}},
		{name: "tools, one call", protocol: llm.ProtocolTools,
			reply: llmtest.HTTPReply{ToolCalls: []llmtest.WireToolCall{search}, Usage: usage},
			want: llm.Response{Protocol: llm.ProtocolTools, FinishReason: "tool_calls", Usage: llm.Usage{InputTokens: 2000, OutputTokens: 50},
				ToolCalls: []llm.ToolCall{call("call_a", "search_tasks", `{"query":"launch"}`)}}},
		{name: "tools, two calls", protocol: llm.ProtocolTools,
			reply: llmtest.HTTPReply{ToolCalls: []llmtest.WireToolCall{search, create}, Usage: usage},
			want: llm.Response{Protocol: llm.ProtocolTools, FinishReason: "tool_calls", Usage: llm.Usage{InputTokens: 2000, OutputTokens: 50},
				ToolCalls: []llm.ToolCall{call("call_a", "search_tasks", `{"query":"launch"}`), call("call_b", "create_task", `{"title":"Ship it"}`)}}},
		{name: "tools, arguments not JSON", protocol: llm.ProtocolTools,
			reply: llmtest.HTTPReply{ToolCalls: []llmtest.WireToolCall{{ID: "call_c", Name: "search_tasks", Arguments: `{"query":"lau`}},
				FinishReason: "length", Usage: usage},
			want: llm.Response{Protocol: llm.ProtocolTools, FinishReason: "length", Usage: llm.Usage{InputTokens: 2000, OutputTokens: 50},
				ToolCalls: []llm.ToolCall{call("call_c", "search_tasks", `"{\"query\":\"lau"`)}}},
		{name: "tools, arguments with spaces", protocol: llm.ProtocolTools,
			reply: llmtest.HTTPReply{ToolCalls: []llmtest.WireToolCall{{ID: "call_d", Name: "search_tasks", Arguments: "\n { \"query\": \"x\" } \n"}}, Usage: usage},
			want: llm.Response{Protocol: llm.ProtocolTools, FinishReason: "tool_calls", Usage: llm.Usage{InputTokens: 2000, OutputTokens: 50},
				ToolCalls: []llm.ToolCall{call("call_d", "search_tasks", `{ "query": "x" }`)}}},
		{name: "tools, empty arguments", protocol: llm.ProtocolTools,
			reply: llmtest.HTTPReply{ToolCalls: []llmtest.WireToolCall{{ID: "call_e", Name: "list_events"}}, Usage: usage},
			want: llm.Response{Protocol: llm.ProtocolTools, FinishReason: "tool_calls", Usage: llm.Usage{InputTokens: 2000, OutputTokens: 50},
				ToolCalls: []llm.ToolCall{call("call_e", "list_events", `{}`)}}},
		{name: "tools, arguments as an object", protocol: llm.ProtocolTools,
			reply: rawAnswer(`{"role":"assistant","content":null,"tool_calls":[{"id":"call_f","type":"function","function":{"name":"search_tasks","arguments":{"query":"x"}}}]}`, "tool_calls"),
			want: llm.Response{Protocol: llm.ProtocolTools, FinishReason: "tool_calls", Usage: llm.Usage{InputTokens: 10, OutputTokens: 5},
				ToolCalls: []llm.ToolCall{call("call_f", "search_tasks", `{"query":"x"}`)}}},
		{name: "tools, text plus call", protocol: llm.ProtocolTools,
			reply: llmtest.HTTPReply{Content: "Let me look.", ToolCalls: []llmtest.WireToolCall{search}, Usage: usage, CachedTokens: 1024},
			want: llm.Response{Protocol: llm.ProtocolTools, Text: "Let me look.", FinishReason: "tool_calls",
				Usage:     llm.Usage{InputTokens: 2000, OutputTokens: 50, CachedInputTokens: 1024},
				ToolCalls: []llm.ToolCall{call("call_a", "search_tasks", `{"query":"launch"}`)}}},
		{name: "tools, plain text", protocol: llm.ProtocolTools,
			reply: llmtest.HTTPReply{Content: "Which board?", Usage: usage, CachedTokens: 1024},
			want: llm.Response{Protocol: llm.ProtocolTools, Text: "Which board?", FinishReason: "stop",
				Usage: llm.Usage{InputTokens: 2000, OutputTokens: 50, CachedInputTokens: 1024}}},
		{name: "tools, neither text nor call", protocol: llm.ProtocolTools,
			reply: rawAnswer(`{"role":"assistant","content":null,"tool_calls":[]}`, "tool_calls"), kind: llm.ErrBadResponse},
		{name: "tools, refusal", protocol: llm.ProtocolTools,
			reply: llmtest.HTTPReply{Refusal: "I can't help with that."}, kind: llm.ErrContentPolicy},
		{name: "tools, malformed tool_calls", protocol: llm.ProtocolTools,
			reply: rawAnswer(`{"role":"assistant","content":null,"tool_calls":{"id":"x"}}`, "tool_calls"), kind: llm.ErrBadResponse},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, p := newTest(t, Config{Protocol: tt.protocol})
			srv.Enqueue(tt.reply)
			req := decisionRequest()
			if tt.noTools {
				req.Tools = nil
			}
			resp, err := p.Complete(context.Background(), req)
			if n := srv.Count(); n != 1 {
				t.Errorf("server saw %d requests, want 1", n)
			}
			if tt.kind != "" {
				if e := asLLMError(t, err, p); e.Kind != tt.kind {
					t.Errorf("kind = %s, want %s (%v)", e.Kind, tt.kind, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
			want := tt.want
			want.Provider, want.Model = p.Name(), p.Model()
			if !reflect.DeepEqual(resp, want) {
				t.Errorf("response = %+v\nwant       %+v", resp, want)
			}
			for _, c := range resp.ToolCalls {
				if !json.Valid(c.Arguments) {
					t.Errorf("call %s: arguments %q are not one JSON value", c.ID, c.Arguments)
				}
			}
		})
	}
}

func TestWireFailures(t *testing.T) {
	httpDate := time.Now().Add(30 * time.Second).UTC().Format(http.TimeFormat)
	// Status answers echo the key, as some APIs do, to check redaction.
	echo := "Request with key " + testKey + " failed"
	tests := []struct {
		name       string
		reply      llmtest.HTTPReply
		timeout    time.Duration
		kind       llm.ErrorKind
		status     int
		retryAfter time.Duration // with 2s tolerance for dates
	}{
		{"400", llmtest.HTTPReply{Status: 400, ErrorType: "invalid_request_error", ErrorCode: "invalid_value", ErrorMessage: echo}, 0, llm.ErrBadRequest, 400, 0},
		{"401", llmtest.HTTPReply{Status: 401, ErrorType: "invalid_request_error", ErrorCode: "invalid_api_key", ErrorMessage: echo}, 0, llm.ErrAuth, 401, 0},
		{"402", llmtest.HTTPReply{Status: 402, ErrorMessage: "Insufficient credits. " + echo}, 0, llm.ErrBilling, 402, 0},
		{"403 permission", llmtest.HTTPReply{Status: 403, ErrorType: "permission_error", ErrorMessage: "Project does not have access to model. " + echo}, 0, llm.ErrAuth, 403, 0},
		{"403 region", llmtest.HTTPReply{Status: 403, ErrorCode: "unsupported_country_region_territory", ErrorMessage: echo}, 0, llm.ErrAuth, 403, 0},
		{"403 credits in message", llmtest.HTTPReply{Status: 403, ErrorMessage: "Your team has run out of credits. " + echo}, 0, llm.ErrBilling, 403, 0},
		{"403 quota code", llmtest.HTTPReply{Status: 403, ErrorType: "forbidden", ErrorCode: "quota_exceeded", ErrorMessage: echo}, 0, llm.ErrBilling, 403, 0},
		{"403 billing type", llmtest.HTTPReply{Status: 403, ErrorType: "billing_error"}, 0, llm.ErrBilling, 403, 0},
		{"404 model", llmtest.HTTPReply{Status: 404, ErrorType: "invalid_request_error", ErrorCode: "model_not_found", ErrorMessage: "The model does not exist."}, 0, llm.ErrBadRequest, 404, 0},
		{"429 retry-after seconds", llmtest.HTTPReply{Status: 429, ErrorCode: "rate_limit_exceeded", ErrorMessage: echo, RetryAfter: "7"}, 0, llm.ErrRateLimited, 429, 7 * time.Second},
		{"429 retry-after date", llmtest.HTTPReply{Status: 429, RetryAfter: httpDate}, 0, llm.ErrRateLimited, 429, 30 * time.Second},
		{"429 retry-after-ms", llmtest.HTTPReply{Status: 429, RetryAfter: "9", Header: http.Header{"Retry-After-Ms": {"1500"}}}, 0, llm.ErrRateLimited, 429, 1500 * time.Millisecond},
		{"429 insufficient_quota", llmtest.HTTPReply{Status: 429, ErrorType: "insufficient_quota", ErrorCode: "insufficient_quota", ErrorMessage: "You exceeded your current quota.", RetryAfter: "5"}, 0, llm.ErrBilling, 429, 0},
		{"500", llmtest.HTTPReply{Status: 500, ErrorType: "server_error", ErrorMessage: echo}, 0, llm.ErrTransient, 500, 0},
		{"502", llmtest.HTTPReply{Status: 502, Body: []byte("<html>502 Bad Gateway</html>"), Header: http.Header{"Content-Type": {"text/html"}}}, 0, llm.ErrTransient, 502, 0},
		{"503 retry-after", llmtest.HTTPReply{Status: 503, ErrorMessage: "overloaded", RetryAfter: "3"}, 0, llm.ErrTransient, 503, 3 * time.Second},
		{"504", llmtest.HTTPReply{Status: 504, Body: []byte("upstream timed out")}, 0, llm.ErrTransient, 504, 0},
		{"timeout", llmtest.HTTPReply{Content: "late", Delay: 5 * time.Second}, 50 * time.Millisecond, llm.ErrTransient, 0, 0},
		{"connection reset", llmtest.HTTPReply{Reset: true}, 0, llm.ErrTransient, 0, 0},
		{"connection closed", llmtest.HTTPReply{Hangup: true}, 0, llm.ErrTransient, 0, 0},
		{"body cut short", llmtest.HTTPReply{Content: strings.Repeat("x", 200), Truncate: true}, 0, llm.ErrTransient, 200, 0},
		{"truncated JSON", llmtest.HTTPReply{Body: []byte(`{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"{\"say\"`)}, 0, llm.ErrTransient, 200, 0},
		{"empty choices", llmtest.HTTPReply{NoChoices: true}, 0, llm.ErrBadResponse, 0, 0},
	}
	for _, protocol := range protocols {
		for _, tt := range tests {
			t.Run(string(protocol)+"/"+tt.name, func(t *testing.T) {
				srv, p := newTest(t, Config{Protocol: protocol, Timeout: tt.timeout})
				srv.Enqueue(tt.reply)
				_, err := p.Complete(context.Background(), decisionRequest())
				e := asLLMError(t, err, p)
				noKeyLeak(t, err)
				if e.Kind != tt.kind {
					t.Errorf("kind = %s, want %s (%v)", e.Kind, tt.kind, err)
				}
				if e.Status != tt.status {
					t.Errorf("status = %d, want %d", e.Status, tt.status)
				}
				if d := e.RetryAfter - tt.retryAfter; d < -2*time.Second || d > 2*time.Second ||
					(tt.retryAfter == 0) != (e.RetryAfter == 0) {
					t.Errorf("RetryAfter = %v, want %v", e.RetryAfter, tt.retryAfter)
				}
				if e.Message == "" {
					t.Errorf("empty message")
				}
				if tt.timeout > 0 && !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("timeout error %v does not wrap context.DeadlineExceeded", err)
				}
				if n := srv.Count(); n != 1 {
					t.Errorf("server saw %d requests, want exactly 1", n)
				}
				if reqs := srv.Requests(); len(reqs) != 1 || (len(reqs[0].Tools) > 0) != (protocol == llm.ProtocolTools) {
					t.Errorf("the request was not sent in the %s protocol", protocol)
				}
			})
		}
	}
}

func TestAuthHeader(t *testing.T) {
	tests := []struct {
		name       string
		authHeader string // Config.AuthHeader and ServerConfig.AuthHeader
		sent       string // header that must carry the key
		value      string
	}{
		{"default", "", "Authorization", "Bearer " + testKey},
		{"Authorization", "Authorization", "Authorization", "Bearer " + testKey},
		{"lower-case authorization", "authorization", "Authorization", "Bearer " + testKey},
		{"api-key", "api-key", "Api-Key", testKey},
		{"x-api-key", "x-api-key", "X-Api-Key", testKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewServer(llmtest.ServerConfig{APIKey: testKey, AuthHeader: tt.authHeader})
			defer srv.Close()
			srv.Enqueue(llmtest.HTTPReply{Content: "ok"})
			p := providertest.MustNew(t, New, Config{BaseURL: srv.URL, APIKey: testKey, Model: "m", AuthHeader: tt.authHeader,
				Headers: map[string]string{"X-Gateway": "g1"}})
			if _, err := p.Complete(context.Background(), userRequest("hi")); err != nil {
				t.Fatalf("Complete: %v", err)
			}
			h := srv.Requests()[0].Header
			if got := h.Get(tt.sent); got != tt.value {
				t.Errorf("%s = %q, want %q", tt.sent, got, tt.value)
			}
			for k, vs := range h {
				if k != tt.sent && slices.ContainsFunc(vs, func(v string) bool { return strings.Contains(v, testKey) }) {
					t.Errorf("key also sent in %s", k)
				}
			}
			if h.Get("X-Gateway") != "g1" {
				t.Errorf("extra header lost: %v", h)
			}

			// A wrong key in the same header is an auth error after one call.
			srv.Enqueue(llmtest.HTTPReply{Content: "unused"})
			wrong := providertest.MustNew(t, New, Config{BaseURL: srv.URL, APIKey: "sk-wrong", Model: "m", AuthHeader: tt.authHeader})
			before := srv.Count()
			_, err := wrong.Complete(context.Background(), userRequest("hi"))
			if k := llm.KindOf(err); k != llm.ErrAuth || srv.Count() != before+1 {
				t.Errorf("wrong key: kind %s after %d requests (%v)", k, srv.Count()-before, err)
			}
		})
	}
	t.Run("no key", func(t *testing.T) {
		srv := llmtest.NewServer(llmtest.ServerConfig{})
		defer srv.Close()
		srv.Enqueue(llmtest.HTTPReply{Content: "ok"})
		p := providertest.MustNew(t, New, Config{BaseURL: srv.URL, Model: "m", AuthHeader: "api-key"})
		if _, err := p.Complete(context.Background(), userRequest("hi")); err != nil {
			t.Fatalf("Complete: %v", err)
		}
		if h := srv.Requests()[0].Header; h.Get("Api-Key") != "" || h.Get("Authorization") != "" {
			t.Errorf("a key header was sent without a key: %v", h)
		}
	})
}

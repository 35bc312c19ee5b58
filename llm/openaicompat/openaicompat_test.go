package openaicompat

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

	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/llm/llmtest"
	"github.com/arbiterhq/arbiter/llm/llmtest/providertest"
)

const testKey = "sk-test-0123456789abcdef"

var (
	testSchemaJSON   = []byte(`{"type":"object","properties":{"say":{"type":"string"},"n":{"type":"integer"}},"required":["say"]}`)
	testSchemaStrict = []byte(`{"type":"object","properties":{"say":{"type":"string"},"n":{"type":["integer","null"]}},"required":["say","n"],"additionalProperties":false}`)
)

// newTest starts a server requiring testKey and a provider pointed at it.
func newTest(t *testing.T, cfg Config) (*llmtest.Server, *Provider) {
	t.Helper()
	srv := llmtest.NewServer(llmtest.ServerConfig{APIKey: testKey})
	t.Cleanup(srv.Close)
	cfg.BaseURL = cmp.Or(cfg.BaseURL, srv.URL)
	cfg.APIKey = cmp.Or(cfg.APIKey, testKey)
	cfg.Model = cmp.Or(cfg.Model, "test-model")
	return srv, providertest.MustNew(t, New, cfg)
}

var userRequest = providertest.UserRequest

// asLLMError asserts err is an *llm.Error naming p, not leaking testKey.
func asLLMError(t *testing.T, err error, p *Provider) *llm.Error {
	t.Helper()
	return providertest.AsLLMError(t, err, p, testKey)
}

var jsonEqual = providertest.JSONEqual

func TestNewValidation(t *testing.T) {
	providertest.RejectsConfigs(t, New, map[string]Config{
		"no model":                 {},
		"unknown output mode":      {Model: "m", Output: "xml"},
		"negative timeout":         {Model: "m", Timeout: -time.Second},
		"relative base URL":        {Model: "m", BaseURL: "/v1"},
		"bad scheme":               {Model: "m", BaseURL: "ftp://example.com/v1"},
		"unknown protocol":         {Model: "m", Protocol: "xml"},
		"auth header with a space": {Model: "m", AuthHeader: "api key"},
		"auth header with a colon": {Model: "m", AuthHeader: "api-key:"},
	})
	p := providertest.MustNew(t, New, Config{Model: "m"})
	if p.Name() != DefaultName || p.Model() != "m" || p.timeout != DefaultTimeout || p.output != llm.OutputJSONSchemaStrict ||
		p.protocol != llm.ProtocolJSON || p.omitParallel {
		t.Errorf("defaults: name %q model %q timeout %v output %q protocol %q omitParallel %v",
			p.Name(), p.Model(), p.timeout, p.output, p.protocol, p.omitParallel)
	}
	providertest.CheckSharedClient(t, SharedHTTPClient())
}

func TestRequestBody(t *testing.T) {
	schema := &llm.Schema{Name: "decision", JSON: testSchemaJSON, Strict: testSchemaStrict}
	noStrict := &llm.Schema{Name: "decision", JSON: testSchemaJSON}
	strictFormat := `{"type":"json_schema","json_schema":{"name":"decision","strict":true,"schema":` + string(testSchemaStrict) + `}}`
	looseFormat := `{"type":"json_schema","json_schema":{"name":"decision","strict":false,"schema":` + string(testSchemaJSON) + `}}`
	tests := []struct {
		name   string
		mode   llm.OutputMode
		schema *llm.Schema
		want   string // exact response_format; "" means absent
	}{
		{"strict", llm.OutputJSONSchemaStrict, schema, strictFormat},
		{"default mode is strict", "", schema, strictFormat},
		{"strict without strict variant", llm.OutputJSONSchemaStrict, noStrict, looseFormat},
		{"json_schema", llm.OutputJSONSchema, schema, looseFormat},
		{"json_object", llm.OutputJSONObject, schema, `{"type":"json_object"}`},
		{"no schema", llm.OutputJSONSchemaStrict, nil, ""},
		{"no schema, json_object", llm.OutputJSONObject, nil, ""},
		{"unnamed schema", llm.OutputJSONSchema, &llm.Schema{JSON: testSchemaJSON},
			`{"type":"json_schema","json_schema":{"name":"output","strict":false,"schema":` + string(testSchemaJSON) + `}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, p := newTest(t, Config{Output: tt.mode})
			srv.Enqueue(llmtest.HTTPReply{Content: `{"say":"hi","n":null}`})
			req := userRequest("hello")
			req.Schema = tt.schema
			if _, err := p.Complete(context.Background(), req); err != nil {
				t.Fatalf("Complete: %v", err)
			}
			got := srv.Requests()[0]
			var raw map[string]json.RawMessage
			if err := json.Unmarshal(got.Body, &raw); err != nil {
				t.Fatalf("decode body: %v", err)
			}
			rf, ok := raw["response_format"]
			switch {
			case tt.want == "" && ok:
				t.Errorf("response_format sent: %s", rf)
			case tt.want != "" && !ok:
				t.Errorf("no response_format sent, want %s", tt.want)
			case tt.want != "" && !jsonEqual(t, rf, tt.want):
				t.Errorf("response_format = %s\nwant %s", rf, tt.want)
			}
		})
	}
}

func TestRequestFields(t *testing.T) {
	tests := []struct {
		name          string
		useMaxComp    bool
		maxTokens     int
		wantMax       int // expected max_tokens, 0 = absent
		wantMaxComp   int // expected max_completion_tokens, 0 = absent
		temperature   float64
		wantTemperate float64
	}{
		{"max_tokens", false, 500, 500, 0, 0, 0},
		{"max_completion_tokens", true, 300, 0, 300, 0.7, 0.7},
		{"no limit", false, 0, 0, 0, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, p := newTest(t, Config{
				Model:                  "gpt-test",
				UseMaxCompletionTokens: tt.useMaxComp,
				Headers:                map[string]string{"X-Gateway": "g1"},
			})
			srv.Enqueue(llmtest.HTTPReply{Content: "ok"})
			req := llm.Request{
				Messages: []llm.Message{
					{Role: llm.RoleSystem, Content: "be brief"},
					{Role: llm.RoleUser, Content: "hello"},
					{Role: llm.RoleAssistant, Content: "hi"},
					{Role: llm.RoleUser, Content: "again"},
				},
				Temperature: tt.temperature,
				MaxTokens:   tt.maxTokens,
			}
			if _, err := p.Complete(context.Background(), req); err != nil {
				t.Fatalf("Complete: %v", err)
			}
			got := srv.Requests()[0]
			if got.Model != "gpt-test" {
				t.Errorf("model = %q", got.Model)
			}
			want := []llmtest.ChatMessage{{Role: "system", Content: "be brief"}, {Role: "user", Content: "hello"}, {Role: "assistant", Content: "hi"}, {Role: "user", Content: "again"}}
			if !reflect.DeepEqual(got.Messages, want) {
				t.Errorf("messages = %+v, want %+v", got.Messages, want)
			}
			if got.Temperature == nil || *got.Temperature != tt.wantTemperate {
				t.Errorf("temperature = %v, want %v (always sent)", got.Temperature, tt.wantTemperate)
			}
			if (got.MaxTokens == nil) != (tt.wantMax == 0) || got.MaxTokens != nil && *got.MaxTokens != tt.wantMax {
				t.Errorf("max_tokens = %v, want %d", got.MaxTokens, tt.wantMax)
			}
			if (got.MaxCompletionTokens == nil) != (tt.wantMaxComp == 0) || got.MaxCompletionTokens != nil && *got.MaxCompletionTokens != tt.wantMaxComp {
				t.Errorf("max_completion_tokens = %v, want %d", got.MaxCompletionTokens, tt.wantMaxComp)
			}
			if got.Stream {
				t.Errorf("stream requested")
			}
			if h := got.Header.Get("Authorization"); h != "Bearer "+testKey {
				t.Errorf("Authorization = %q", h)
			}
			if h := got.Header.Get("X-Gateway"); h != "g1" {
				t.Errorf("X-Gateway = %q", h)
			}
			for k := range got.Header {
				if strings.HasPrefix(strings.ToLower(k), "x-stainless") {
					t.Errorf("SDK telemetry header sent: %s: %s", k, got.Header.Get(k))
				}
			}
		})
	}
}

func TestIgnoresEnvironment(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	t.Setenv("OPENAI_API_KEY", "sk-from-env")
	t.Setenv("OPENAI_ORG_ID", "org-env")
	srv := llmtest.NewServer(llmtest.ServerConfig{})
	defer srv.Close()
	srv.Enqueue(llmtest.HTTPReply{Content: "ok"})
	p := providertest.MustNew(t, New, Config{BaseURL: srv.URL, Model: "local"})
	if _, err := p.Complete(context.Background(), userRequest("hi")); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	h := srv.Requests()[0].Header
	if h.Get("Authorization") != "" || h.Get("OpenAI-Organization") != "" {
		t.Errorf("environment leaked into the request: %v", h)
	}
}

func TestUnknownRoleNotSent(t *testing.T) {
	srv, p := newTest(t, Config{})
	_, err := p.Complete(context.Background(), llm.Request{Messages: []llm.Message{{Role: "tool", Content: "x"}}})
	if e := asLLMError(t, err, p); e.Kind != llm.ErrBadRequest {
		t.Errorf("kind = %s, want bad_request", e.Kind)
	}
	if n := srv.Count(); n != 0 {
		t.Errorf("server saw %d requests, want 0", n)
	}
}

func TestResponse(t *testing.T) {
	srv, p := newTest(t, Config{Name: "fireworks", Model: "gpt-4o"})
	srv.Enqueue(llmtest.HTTPReply{
		Content:      `{"say":"hello"}`,
		Model:        "gpt-4o-2024-08-06",
		FinishReason: "length",
		Usage:        &llmtest.WireUsage{PromptTokens: 1234, CompletionTokens: 56, TotalTokens: 1290},
	})
	resp, err := p.Complete(context.Background(), userRequest("hi"))
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	want := llm.Response{
		Protocol:     llm.ProtocolJSON,
		Text:         `{"say":"hello"}`,
		Provider:     "fireworks",
		Model:        "gpt-4o-2024-08-06",
		Usage:        llm.Usage{InputTokens: 1234, OutputTokens: 56},
		FinishReason: "length",
	}
	if !reflect.DeepEqual(resp, want) {
		t.Errorf("response = %+v\nwant %+v", resp, want)
	}
}

func TestResponseContentParts(t *testing.T) {
	srv, p := newTest(t, Config{Model: "magistral"})
	srv.Enqueue(llmtest.HTTPReply{Body: []byte(`{"id":"x","object":"chat.completion","created":1,"model":"magistral-2509",` +
		`"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","refusal":null,"content":[` +
		`{"type":"thinking","thinking":[{"type":"text","text":"hmm"}]},{"type":"text","text":"{\"a\":"},{"type":"text","text":"1}"}]}}],` +
		`"usage":{"prompt_tokens":5,"completion_tokens":7,"total_tokens":12}}`)})
	resp, err := p.Complete(context.Background(), userRequest("hi"))
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if resp.Text != `{"a":1}` || resp.Model != "magistral-2509" || resp.Usage != (llm.Usage{InputTokens: 5, OutputTokens: 7}) {
		t.Errorf("response = %+v", resp)
	}
}

func TestErrorClasses(t *testing.T) {
	httpDate := time.Now().Add(30 * time.Second).UTC().Format(http.TimeFormat)
	tests := []struct {
		name       string
		reply      llmtest.HTTPReply
		kind       llm.ErrorKind
		status     int
		retryAfter time.Duration // expected, with 2s tolerance for dates
		code       string        // expected APIError.Code, if any
	}{
		{"401", llmtest.HTTPReply{Status: 401, ErrorType: "invalid_request_error", ErrorCode: "invalid_api_key", ErrorMessage: "Incorrect API key"}, llm.ErrAuth, 401, 0, "invalid_api_key"},
		{"403", llmtest.HTTPReply{Status: 403, ErrorCode: "unsupported_country_region_territory"}, llm.ErrAuth, 403, 0, "unsupported_country_region_territory"},
		{"402", llmtest.HTTPReply{Status: 402, ErrorMessage: "pay up"}, llm.ErrBilling, 402, 0, ""},
		{"429 insufficient_quota code", llmtest.HTTPReply{Status: 429, ErrorType: "insufficient_quota", ErrorCode: "insufficient_quota", RetryAfter: "1"}, llm.ErrBilling, 429, 0, "insufficient_quota"},
		{"429 billing type", llmtest.HTTPReply{Status: 429, ErrorType: "billing_hard_limit_reached"}, llm.ErrBilling, 429, 0, ""},
		{"429 retry-after seconds", llmtest.HTTPReply{Status: 429, ErrorType: "requests", ErrorCode: "rate_limit_exceeded", RetryAfter: "7"}, llm.ErrRateLimited, 429, 7 * time.Second, "rate_limit_exceeded"},
		{"429 retry-after-ms", llmtest.HTTPReply{Status: 429, Header: http.Header{"Retry-After-Ms": {"1500"}}, RetryAfter: "2"}, llm.ErrRateLimited, 429, 1500 * time.Millisecond, ""},
		{"429 retry-after date", llmtest.HTTPReply{Status: 429, RetryAfter: httpDate}, llm.ErrRateLimited, 429, 30 * time.Second, ""},
		{"429 no retry-after", llmtest.HTTPReply{Status: 429}, llm.ErrRateLimited, 429, 0, ""},
		{"400", llmtest.HTTPReply{Status: 400, ErrorType: "invalid_request_error", ErrorMessage: "bad schema"}, llm.ErrBadRequest, 400, 0, ""},
		{"404 model", llmtest.HTTPReply{Status: 404, ErrorCode: "model_not_found"}, llm.ErrBadRequest, 404, 0, "model_not_found"},
		{"413", llmtest.HTTPReply{Status: 413, Body: []byte("too large")}, llm.ErrBadRequest, 413, 0, ""},
		{"422", llmtest.HTTPReply{Status: 422, ErrorMessage: "unprocessable"}, llm.ErrBadRequest, 422, 0, ""},
		{"400 content_policy_violation", llmtest.HTTPReply{Status: 400, ErrorCode: "content_policy_violation"}, llm.ErrContentPolicy, 400, 0, "content_policy_violation"},
		{"400 content_filter", llmtest.HTTPReply{Status: 400, ErrorCode: "content_filter"}, llm.ErrContentPolicy, 400, 0, "content_filter"},
		{"408", llmtest.HTTPReply{Status: 408}, llm.ErrTransient, 408, 0, ""},
		{"409", llmtest.HTTPReply{Status: 409}, llm.ErrTransient, 409, 0, ""},
		{"500", llmtest.HTTPReply{Status: 500, ErrorType: "server_error"}, llm.ErrTransient, 500, 0, ""},
		{"502 html body", llmtest.HTTPReply{Status: 502, Body: []byte("<html>bad gateway</html>"), Header: http.Header{"Content-Type": {"text/html"}}}, llm.ErrTransient, 502, 0, ""},
		{"503 retry-after", llmtest.HTTPReply{Status: 503, RetryAfter: "3"}, llm.ErrTransient, 503, 3 * time.Second, ""},
		{"200 garbage body", llmtest.HTTPReply{Body: []byte("<<not json>>")}, llm.ErrBadResponse, 200, 0, ""},
		{"200 not JSON content type", llmtest.HTTPReply{Body: []byte("hello"), Header: http.Header{"Content-Type": {"text/plain"}}}, llm.ErrBadResponse, 200, 0, ""},
		{"200 truncated body", llmtest.HTTPReply{Content: strings.Repeat("x", 200), Truncate: true}, llm.ErrTransient, 200, 0, ""},
		{"200 no choices", llmtest.HTTPReply{NoChoices: true}, llm.ErrBadResponse, 0, 0, ""},
		{"200 empty content", llmtest.HTTPReply{Content: ""}, llm.ErrBadResponse, 0, 0, ""},
		{"200 refusal", llmtest.HTTPReply{Refusal: "I can't help with that."}, llm.ErrContentPolicy, 0, 0, ""},
		{"200 content_filter finish", llmtest.HTTPReply{FinishReason: "content_filter"}, llm.ErrContentPolicy, 0, 0, ""},
		{"connection dropped", llmtest.HTTPReply{Hangup: true}, llm.ErrTransient, 0, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, p := newTest(t, Config{})
			srv.Enqueue(tt.reply)
			_, err := p.Complete(context.Background(), userRequest("hi"))
			providertest.CheckError(t, err, p, testKey, tt.kind, tt.status, tt.retryAfter)
			var ae *APIError
			if tt.code != "" && (!errors.As(err, &ae) || ae.Code != tt.code) {
				t.Errorf("APIError code: got %+v, want %q", ae, tt.code)
			}
			if n := srv.Count(); n != 1 {
				t.Errorf("server saw %d requests, want exactly 1 (no retries)", n)
			}
		})
	}
}

func TestOtherErrorBodies(t *testing.T) {
	tests := []struct {
		name, body, message, code string
		status                    int
		kind                      llm.ErrorKind
	}{
		{"ollama", `{"error":"model \"x\" not found, try pulling it first"}`, `model "x" not found, try pulling it first`, "", 404, llm.ErrBadRequest},
		{"vllm", `{"object":"error","message":"bad schema","type":"BadRequestError","code":400}`, "bad schema", "", 400, llm.ErrBadRequest},
		{"top-level policy code", `{"message":"blocked","type":"invalid_request_error","code":"content_policy_violation"}`, "blocked", "content_policy_violation", 400, llm.ErrContentPolicy},
		{"fastapi", `{"detail":"Not Found"}`, "Not Found", "", 404, llm.ErrBadRequest},
		{"html", `<html>oops</html>`, "Bad Gateway", "", 502, llm.ErrTransient},
		// The OpenAI error object with a numeric code, as some compatible
		// servers send it, and a param.
		{"numeric code", `{"error":{"message":"bad max_tokens","type":"invalid_request_error","code":400,"param":"max_tokens"}}`, "bad max_tokens", "400", 400, llm.ErrBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, p := newTest(t, Config{})
			srv.Enqueue(llmtest.HTTPReply{Status: tt.status, Body: []byte(tt.body)})
			_, err := p.Complete(context.Background(), userRequest("hi"))
			e := asLLMError(t, err, p)
			if e.Kind != tt.kind || e.Status != tt.status || e.Message != tt.message {
				t.Errorf("got kind %s status %d message %q, want %s %d %q", e.Kind, e.Status, e.Message, tt.kind, tt.status, tt.message)
			}
			var ae *APIError
			if !errors.As(err, &ae) || ae.Code != tt.code {
				t.Errorf("APIError = %+v, want code %q", ae, tt.code)
			}
		})
	}
}

func TestNoRetryOn503(t *testing.T) {
	srv, p := newTest(t, Config{})
	srv.Enqueue(llmtest.HTTPReply{Status: 503, RetryAfter: "0"}, llmtest.HTTPReply{Content: "late"})
	_, err := p.Complete(context.Background(), userRequest("hi"))
	if k := llm.KindOf(err); k != llm.ErrTransient {
		t.Errorf("kind = %s, want transient", k)
	}
	if n := srv.Count(); n != 1 {
		t.Errorf("server saw %d requests, want 1", n)
	}
}

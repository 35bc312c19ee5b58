package anthropic

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/llm/internal/wire"
	"github.com/arbiterhq/arbiter/llm/llmtest"
	"github.com/arbiterhq/arbiter/llm/llmtest/providertest"
)

func benchServer(b *testing.B) *llmtest.AnthropicServer {
	b.Helper()
	srv := llmtest.NewAnthropicServer(llmtest.AnthropicServerConfig{
		APIKey:        testKey,
		SkipRecording: true,
		Respond: func(*llmtest.AnthropicRequest) llmtest.AnthropicReply {
			return llmtest.AnthropicReply{Model: "claude-bench-20260101",
				ToolUses: []llmtest.AnthropicToolUse{{ID: "toolu_1", Name: DecisionTool, Input: json.RawMessage(providertest.BenchDecision)}}}
		},
	})
	b.Cleanup(srv.Close)
	return srv
}

// benchProvider is a provider against a benchServer.
func benchProvider(b *testing.B) *Provider {
	return providertest.MustNew(b, New, Config{BaseURL: benchServer(b).URL, APIKey: testKey, Model: "claude-bench"})
}

// BenchmarkComplete measures one Provider.Complete through the SDK against
// the loopback fake server (server CPU included).
func BenchmarkComplete(b *testing.B) {
	providertest.BenchComplete(b, benchProvider(b))
}

// BenchmarkCompleteStreamed is BenchmarkComplete with OnText set: the
// same answer as a stream of events (16 runes of the decision's JSON per
// delta, one write per event), put together again by the provider.
func BenchmarkCompleteStreamed(b *testing.B) {
	providertest.BenchCompleteStreamed(b, benchProvider(b))
}

// BenchmarkBaselineNetHTTP makes the same call with plain net/http and
// encoding/json, as the reference for the SDK's overhead.
func BenchmarkBaselineNetHTTP(b *testing.B) {
	srv := benchServer(b)
	client := SharedHTTPClient()
	url := srv.URL + "/v1/messages"
	providertest.BenchLoop(b, func(ctx context.Context, req *llm.Request) (string, error) {
		return baselineComplete(ctx, client, url, req)
	})
}

// BenchmarkEncodeBody compares this package's body encoder with building
// and marshaling the SDK's params for the same request (the schema parsed
// once, as a provider would cache it).
func BenchmarkEncodeBody(b *testing.B) {
	p := providertest.MustNew(b, New, Config{Model: "claude-bench"})
	req := providertest.BenchRequest()
	b.Run("hand", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := p.encodeBody(&req, llm.ProtocolJSON, true); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("sdk", func(b *testing.B) {
		schema, err := sdkSchema(req.Schema.JSON)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(sdkParams(&req, schema)); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func sdkSchema(doc []byte) (anthropic.ToolInputSchemaParam, error) {
	var m map[string]any
	if err := json.Unmarshal(doc, &m); err != nil {
		return anthropic.ToolInputSchemaParam{}, err
	}
	s := anthropic.ToolInputSchemaParam{Properties: m["properties"], ExtraFields: map[string]any{}}
	for _, r := range m["required"].([]any) {
		s.Required = append(s.Required, r.(string))
	}
	for k, v := range m {
		if k != "type" && k != "properties" && k != "required" {
			s.ExtraFields[k] = v
		}
	}
	return s, nil
}

func sdkParams(req *llm.Request, schema anthropic.ToolInputSchemaParam) anthropic.MessageNewParams {
	params := anthropic.MessageNewParams{Model: "claude-bench", MaxTokens: int64(req.MaxTokens)}
	for _, m := range req.Messages {
		switch m.Role {
		case llm.RoleSystem:
			params.System = append(params.System, anthropic.TextBlockParam{Text: m.Content})
		case llm.RoleUser:
			params.Messages = append(params.Messages, anthropic.NewUserMessage(anthropic.NewTextBlock(m.Content)))
		case llm.RoleAssistant:
			params.Messages = append(params.Messages, anthropic.NewAssistantMessage(anthropic.NewTextBlock(m.Content)))
		}
	}
	params.System[len(params.System)-1].CacheControl = anthropic.NewCacheControlEphemeralParam()
	params.Tools = []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{Name: DecisionTool,
		Description: anthropic.String(decisionDescription), InputSchema: schema}}}
	params.ToolChoice = anthropic.ToolChoiceUnionParam{OfTool: &anthropic.ToolChoiceToolParam{Name: DecisionTool,
		DisableParallelToolUse: anthropic.Bool(true)}}
	return params
}

type baseBlock struct {
	Type         string          `json:"type"`
	Text         string          `json:"text,omitempty"`
	Name         string          `json:"name,omitempty"`
	Input        json.RawMessage `json:"input,omitempty"`
	CacheControl *struct {
		Type string `json:"type"`
	} `json:"cache_control,omitempty"`
}

type baseMessage struct {
	Role    string      `json:"role"`
	Content []baseBlock `json:"content"`
}

type baseTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type baseRequest struct {
	Model      string            `json:"model"`
	MaxTokens  int               `json:"max_tokens"`
	System     []baseBlock       `json:"system,omitempty"`
	Messages   []baseMessage     `json:"messages"`
	Tools      []baseTool        `json:"tools,omitempty"`
	ToolChoice map[string]string `json:"tool_choice,omitempty"`
}

type baseResponse struct {
	Content []baseBlock `json:"content"`
}

// baseHeader authenticates the baseline's calls.
var baseHeader = http.Header{"X-Api-Key": {testKey}, "Anthropic-Version": {DefaultAPIVersion}}

func baselineComplete(ctx context.Context, client *http.Client, url string, req *llm.Request) (string, error) {
	body := baseRequest{Model: "claude-bench", MaxTokens: req.MaxTokens,
		Tools:      []baseTool{{Name: DecisionTool, Description: decisionDescription, InputSchema: req.Schema.JSON}},
		ToolChoice: map[string]string{"type": "tool", "name": DecisionTool}}
	for _, m := range req.Messages {
		if m.Role == llm.RoleSystem {
			body.System = append(body.System, baseBlock{Type: "text", Text: m.Content})
			continue
		}
		body.Messages = append(body.Messages, baseMessage{Role: m.Role, Content: []baseBlock{{Type: "text", Text: m.Content}}})
	}
	var out baseResponse
	if err := providertest.PostJSON(ctx, client, url, baseHeader, &body, &out); err != nil {
		return "", err
	}
	for _, c := range out.Content {
		if c.Type == "tool_use" {
			return string(c.Input), nil
		}
	}
	return "", fmt.Errorf("no tool_use")
}

// BenchmarkReadStream measures the client's side of a streamed answer
// alone: reading and joining the events of BenchmarkCompleteStreamed's
// answer from memory, with no server and no connection.
func BenchmarkReadStream(b *testing.B) {
	srv := benchServer(b)
	req := httptest.NewRequest(http.MethodPost, llmtest.AnthropicMessagesPath,
		strings.NewReader(`{"model":"claude-bench","max_tokens":500,"messages":[{"role":"user","content":"hi"}],"stream":true}`))
	req.Header.Set("x-api-key", testKey)
	req.Header.Set("anthropic-version", DefaultAPIVersion)
	p := providertest.MustNew(b, New, Config{Model: "claude-bench"})
	providertest.BenchReadStream(b, srv.Handler(), req, func(body io.Reader, watch *wire.StreamWatch) (string, error) {
		a := streamAssembly{forced: true, onText: func(string) {}}
		if err := p.readStream(body, &a, watch); err != nil {
			return "", err
		}
		a.finish()
		resp, err := p.response(&a.msg, llm.ProtocolJSON, true)
		return resp.Text, err
	})
}

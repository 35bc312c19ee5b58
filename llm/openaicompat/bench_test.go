package openaicompat

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/llm/internal/wire"
	"github.com/arbiterhq/arbiter/llm/llmtest"
	"github.com/arbiterhq/arbiter/llm/llmtest/providertest"
)

func benchServer(b *testing.B) *llmtest.Server {
	b.Helper()
	srv := llmtest.NewServer(llmtest.ServerConfig{
		APIKey:        testKey,
		SkipRecording: true,
		Respond: func(*llmtest.ChatRequest) llmtest.HTTPReply {
			return llmtest.HTTPReply{Content: providertest.BenchDecision, Model: "bench-model-2025-01-01"}
		},
	})
	b.Cleanup(srv.Close)
	return srv
}

// benchProvider is a provider against a benchServer.
func benchProvider(b *testing.B) *Provider {
	return providertest.MustNew(b, New, Config{BaseURL: benchServer(b).URL, APIKey: testKey, Model: "bench-model"})
}

// BenchmarkComplete measures one Provider.Complete through the SDK against
// the loopback fake server (server CPU included).
func BenchmarkComplete(b *testing.B) {
	providertest.BenchComplete(b, benchProvider(b))
}

// benchTools is a six-tool catalog of about 1.5 KB, passed as the same
// slice on every call.
var benchTools = func() []llm.ToolDef {
	var tools []llm.ToolDef
	for _, name := range []string{"search_tasks", "create_task", "move_task", "comment_task", "list_events", "create_event"} {
		tools = append(tools, llm.ToolDef{
			Name:        name,
			Description: "Do " + name + " on the team's board. Use only when the user asks for it.",
			Parameters: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["query"],"properties":{` +
				`"query":{"type":"string","description":"What to look for."},"list":{"type":"string"},"due":{"type":"string","description":"RFC 3339 date"}}}`),
		})
	}
	return tools
}()

const benchArguments = `{"query":"launch"}`

// BenchmarkCompleteTools is BenchmarkComplete in the tools protocol: the
// request carries the tool catalog, the answer text plus one tool call.
func BenchmarkCompleteTools(b *testing.B) {
	srv := llmtest.NewServer(llmtest.ServerConfig{
		APIKey:        testKey,
		SkipRecording: true,
		Respond: func(*llmtest.ChatRequest) llmtest.HTTPReply {
			return llmtest.HTTPReply{Content: "I found 3 tasks about the launch.", Model: "bench-model-2025-01-01", CachedTokens: 512,
				ToolCalls: []llmtest.WireToolCall{{ID: "call_1", Name: "search_tasks", Arguments: benchArguments}}}
		},
	})
	b.Cleanup(srv.Close)
	p := providertest.MustNew(b, New, Config{BaseURL: srv.URL, APIKey: testKey, Model: "bench-model", Protocol: llm.ProtocolTools})
	req := providertest.BenchRequest()
	req.Tools = benchTools
	ctx := context.Background()
	b.ReportAllocs()
	defer providertest.ReportCPU(b)()
	for b.Loop() {
		resp, err := p.Complete(ctx, req)
		if err != nil || len(resp.ToolCalls) != 1 || string(resp.ToolCalls[0].Arguments) != benchArguments {
			b.Fatalf("Complete: %v %+v", err, resp)
		}
	}
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
	url := srv.URL + "/chat/completions"
	providertest.BenchLoop(b, func(ctx context.Context, req *llm.Request) (string, error) {
		resp, err := baselineComplete(ctx, client, url, testKey, "bench-model", req)
		return resp.Text, err
	})
}

type baseMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type baseJSONSchema struct {
	Name   string          `json:"name"`
	Schema json.RawMessage `json:"schema"`
	Strict bool            `json:"strict"`
}

type baseFormat struct {
	Type       string          `json:"type"`
	JSONSchema *baseJSONSchema `json:"json_schema,omitempty"`
}

type baseRequest struct {
	Model          string        `json:"model"`
	Messages       []baseMessage `json:"messages"`
	ResponseFormat *baseFormat   `json:"response_format,omitempty"`
	Temperature    float64       `json:"temperature"`
	MaxTokens      int           `json:"max_tokens,omitempty"`
}

// baseResponse is an answer as a hand-written client decodes it: plain
// strings, the tool calls' arguments left as the string the API sends.
type baseResponse struct {
	Model   string `json:"model"`
	Choices []struct {
		Message struct {
			Content   string `json:"content"`
			ToolCalls []struct {
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

func baselineComplete(ctx context.Context, client *http.Client, url, key, model string, req *llm.Request) (llm.Response, error) {
	body := baseRequest{Model: model, Temperature: req.Temperature, MaxTokens: req.MaxTokens,
		Messages: make([]baseMessage, len(req.Messages))}
	for i, m := range req.Messages {
		body.Messages[i] = baseMessage{Role: m.Role, Content: m.Content}
	}
	if req.Schema != nil {
		body.ResponseFormat = &baseFormat{Type: "json_schema",
			JSONSchema: &baseJSONSchema{Name: req.Schema.Name, Schema: req.Schema.Strict, Strict: true}}
	}
	var out baseResponse
	header := http.Header{"Authorization": {"Bearer " + key}}
	if err := providertest.PostJSON(ctx, client, url, header, &body, &out); err != nil {
		return llm.Response{}, err
	}
	if len(out.Choices) == 0 {
		return llm.Response{}, fmt.Errorf("no choices")
	}
	return llm.Response{
		Text: out.Choices[0].Message.Content, Model: out.Model,
		Usage:        llm.Usage{InputTokens: out.Usage.PromptTokens, OutputTokens: out.Usage.CompletionTokens},
		FinishReason: out.Choices[0].FinishReason,
	}, nil
}

// BenchmarkReadStream measures the client's side of a streamed answer
// alone: reading and joining the events of BenchmarkCompleteStreamed's
// answer from memory, with no server and no connection.
func BenchmarkReadStream(b *testing.B) {
	srv := benchServer(b)
	req := httptest.NewRequest(http.MethodPost, llmtest.CompletionsPath,
		strings.NewReader(`{"model":"bench-model","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true}}`))
	req.Header.Set("Authorization", "Bearer "+testKey)
	p := providertest.MustNew(b, New, Config{Model: "bench-model"})
	providertest.BenchReadStream(b, srv.Handler(), req, func(body io.Reader, watch *wire.StreamWatch) (string, error) {
		var a assembly
		if err := p.readStream(body, &a, watch, func(string) {}); err != nil {
			return "", err
		}
		a.finish()
		resp, err := p.response(&a.cc, false)
		return resp.Text, err
	})
}

package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/llm/llmtest"
)

// benchSchema is a decision-like schema of about 1 KB.
var benchSchema = []byte(`{"type":"object","additionalProperties":false,` +
	`"required":["reply","action","arguments","confidence","needs_confirmation"],"properties":{` +
	`"reply":{"type":"string","description":"What to say to the user, in their language."},` +
	`"action":{"type":["string","null"],"enum":["none","search_tasks","create_task","move_task","comment_task","list_events","create_event",null],"description":"The tool to call, or none."},` +
	`"arguments":{"type":["object","null"],"additionalProperties":false,"required":["query","title","list","due","text"],"properties":{` +
	`"query":{"type":["string","null"]},"title":{"type":["string","null"]},"list":{"type":["string","null"]},` +
	`"due":{"type":["string","null"],"description":"RFC 3339 date or null"},"text":{"type":["string","null"]}}},` +
	`"confidence":{"type":"number","minimum":0,"maximum":1},` +
	`"needs_confirmation":{"type":"boolean","description":"True when the action changes data."}}}`)

const benchDecision = `{"reply":"I found 3 tasks about the launch.","action":"search_tasks","arguments":{"query":"launch","title":null,"list":null,"due":null,"text":null},"confidence":0.92,"needs_confirmation":false}`

// benchRequest is a turn-sized request: a ~2.5 KB system prompt, a short
// history and a user message (~3 KB in all) plus the schema.
func benchRequest() llm.Request {
	system := strings.Repeat("You are the team assistant. Answer briefly, in the user's language, and propose at most one action. ", 25)
	return llm.Request{
		Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: system},
			{Role: llm.RoleUser, Content: "What is on the board for the launch?"},
			{Role: llm.RoleAssistant, Content: `{"reply":"Let me look.","action":"none","arguments":null,"confidence":0.8,"needs_confirmation":false}`},
			{Role: llm.RoleUser, Content: "Show me the open tasks about the launch, please, and anything due this week."},
		},
		Schema:    &llm.Schema{Name: "decision", JSON: benchSchema},
		MaxTokens: 500,
		Operation: "turn",
	}
}

func benchServer(b *testing.B) *llmtest.AnthropicServer {
	b.Helper()
	srv := llmtest.NewAnthropicServer(llmtest.AnthropicServerConfig{
		APIKey:        testKey,
		SkipRecording: true,
		Respond: func(*llmtest.AnthropicRequest) llmtest.AnthropicReply {
			return llmtest.AnthropicReply{Model: "claude-bench-20260101",
				ToolUses: []llmtest.AnthropicToolUse{{ID: "toolu_1", Name: DecisionTool, Input: json.RawMessage(benchDecision)}}}
		},
	})
	b.Cleanup(srv.Close)
	return srv
}

// reportCPU starts measuring the process's CPU time; the returned func
// reports it per iteration as "cpu-ns/op" (client and fake server
// together), which is steadier than wall time on a shared machine.
func reportCPU(b *testing.B) func() {
	start, ok := processCPU()
	return func() {
		end, _ := processCPU()
		if ok && b.N > 0 {
			b.ReportMetric(float64(end-start)/float64(b.N), "cpu-ns/op")
		}
	}
}

// BenchmarkComplete measures one Provider.Complete through the SDK against
// the loopback fake server (server CPU included).
func BenchmarkComplete(b *testing.B) {
	srv := benchServer(b)
	p, err := New(Config{BaseURL: srv.URL, APIKey: testKey, Model: "claude-bench"})
	if err != nil {
		b.Fatal(err)
	}
	req := benchRequest()
	ctx := context.Background()
	b.ReportAllocs()
	defer reportCPU(b)()
	for b.Loop() {
		resp, err := p.Complete(ctx, req)
		if err != nil || resp.Text != benchDecision {
			b.Fatalf("Complete: %v %q", err, resp.Text)
		}
	}
}

// BenchmarkBaselineNetHTTP makes the same call with plain net/http and
// encoding/json, as the reference for the SDK's overhead.
func BenchmarkBaselineNetHTTP(b *testing.B) {
	srv := benchServer(b)
	client := SharedHTTPClient()
	url := srv.URL + "/v1/messages"
	req := benchRequest()
	ctx := context.Background()
	b.ReportAllocs()
	defer reportCPU(b)()
	for b.Loop() {
		text, err := baselineComplete(ctx, client, url, &req)
		if err != nil || text != benchDecision {
			b.Fatalf("baseline: %v %q", err, text)
		}
	}
}

// BenchmarkEncodeBody compares this package's body encoder with building
// and marshaling the SDK's params for the same request (the schema parsed
// once, as a provider would cache it).
func BenchmarkEncodeBody(b *testing.B) {
	p, err := New(Config{Model: "claude-bench"})
	if err != nil {
		b.Fatal(err)
	}
	req := benchRequest()
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
	data, err := json.Marshal(&body)
	if err != nil {
		return "", err
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(data))
	if err != nil {
		return "", err
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("X-Api-Key", testKey)
	hreq.Header.Set("Anthropic-Version", DefaultAPIVersion)
	hresp, err := client.Do(hreq)
	if err != nil {
		return "", err
	}
	defer hresp.Body.Close()
	raw, err := io.ReadAll(hresp.Body)
	if err != nil {
		return "", err
	}
	if hresp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("HTTP %d: %s", hresp.StatusCode, raw)
	}
	var out baseResponse
	if err := json.Unmarshal(raw, &out); err != nil {
		return "", err
	}
	for _, c := range out.Content {
		if c.Type == "tool_use" {
			return string(c.Input), nil
		}
	}
	return "", fmt.Errorf("no tool_use")
}

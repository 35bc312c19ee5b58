package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"

	"github.com/arbiterhq/arbiter/llm/llmtest"
)

// loopAnswer is the fake model's final answer in a loop, once the tool's
// result is back.
const loopAnswer = "У вас 5 открытых задач."

// NewLoopBaseline is the loop turn written directly on net/http and
// encoding/json: model with the tools → list_my_tasks → model with the
// result → reply. like is the first model request of a loop engine's
// turn; the baseline sends the same messages and tools.
func NewLoopBaseline(like *llmtest.ChatRequest) *Baseline {
	return NewLoopBaselineWith(like, newInProcess(ModelLoop))
}

// NewLoopBaselineWith is NewLoopBaseline calling model, which the baseline
// closes.
func NewLoopBaselineWith(like *llmtest.ChatRequest, model Model) *Baseline {
	b := NewBaselineWith(like, model)
	b.api.Close()
	if like != nil {
		b.tools, _ = json.Marshal(like.Tools)
	}
	b.api = httptest.NewServer(http.HandlerFunc(b.serveLoop))
	return b
}

type loopMessage struct {
	Role       string          `json:"role"`
	Content    *string         `json:"content"`
	ToolCalls  json.RawMessage `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
}

type loopRequest struct {
	Model       string          `json:"model"`
	Messages    []loopMessage   `json:"messages"`
	Temperature float64         `json:"temperature"`
	MaxTokens   int             `json:"max_tokens"`
	Tools       json.RawMessage `json:"tools"`
	ToolChoice  string          `json:"tool_choice"`
}

// modelMessage is the message of a model's answer.
type modelMessage struct {
	Content   *string `json:"content"`
	ToolCalls []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

func (b *Baseline) serveLoop(w http.ResponseWriter, r *http.Request) {
	in, ok := readMessage(w, r)
	if !ok {
		return
	}
	req := loopRequest{Model: "gpt-oss-20b", MaxTokens: b.maxToken, Tools: b.tools, ToolChoice: "auto"}
	for _, m := range b.prompt {
		req.Messages = append(req.Messages, loopMessage{Role: m.Role, Content: &m.Content})
	}
	if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == "user" {
		req.Messages[n-1].Content = &in.Text
	} else {
		req.Messages = append(req.Messages, loopMessage{Role: "user", Content: &in.Text})
	}
	first, err := b.complete(r.Context(), &req)
	if err != nil || len(first.ToolCalls) != 1 || first.ToolCalls[0].Function.Name != "list_my_tasks" {
		http.Error(w, "unexpected model answer", http.StatusBadGateway)
		return
	}
	data, _ := b.listMine()
	calls, _ := json.Marshal([]map[string]any{{"id": first.ToolCalls[0].ID, "type": "function",
		"function": map[string]string{"name": "list_my_tasks", "arguments": first.ToolCalls[0].Function.Arguments}}})
	result := string(data)
	req.Messages = append(req.Messages,
		loopMessage{Role: "assistant", ToolCalls: calls},
		loopMessage{Role: "tool", ToolCallID: first.ToolCalls[0].ID, Content: &result})
	final, err := b.complete(r.Context(), &req)
	if err != nil || final.Content == nil {
		http.Error(w, "unexpected model answer", http.StatusBadGateway)
		return
	}
	b.reply(w, *final.Content, data)
}

// complete makes one model call, req being a baselineRequest or a
// loopRequest, and returns the message of the answer's first choice.
func (b *Baseline) complete(ctx context.Context, req any) (modelMessage, error) {
	body, _ := json.Marshal(req)
	mreq, _ := http.NewRequestWithContext(ctx, "POST", b.model.URL()+"/chat/completions", bytes.NewReader(body))
	mreq.Header.Set("Content-Type", "application/json")
	mresp, err := b.client.Do(mreq)
	if err != nil {
		return modelMessage{}, err
	}
	defer mresp.Body.Close()
	var c struct {
		Choices []struct {
			Message modelMessage `json:"message"`
		} `json:"choices"`
	}
	if err := json.NewDecoder(mresp.Body).Decode(&c); err != nil {
		return modelMessage{}, err
	}
	if len(c.Choices) == 0 {
		return modelMessage{}, errors.New("no choices")
	}
	return c.Choices[0].Message, nil
}

package e2e

import (
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/cmd/internal/kinds"
	"github.com/arbiterhq/arbiter/llm/llmtest"
	"github.com/arbiterhq/arbiter/server/servertest"
)

// A Messages API model that gives a tool_use the ID of an earlier one in
// the same task is not refused: the task goes on, and what is sent back is
// a conversation whose tool_use IDs are unique, as the API requires (the
// fake answers a repeated one with a 400, as the API does).
func TestAnthropicReusedToolUseIDGoesOn(t *testing.T) {
	model := llmtest.NewAnthropicServer(llmtest.AnthropicServerConfig{})
	t.Cleanup(model.Close)
	again := llmtest.AnthropicReply{ToolUses: []llmtest.AnthropicToolUse{{ID: "toolu_01Xy7kQ2mN9aB", Name: "list_my_tasks", Input: []byte(`{}`)}}}
	model.Enqueue(again, again, llmtest.AnthropicReply{Text: "You have no open tasks."})
	yaml := `models:
  - {name: claude, kind: anthropic, protocol: tools, base_url: "` + model.URL + `", model: claude-haiku-4-5, api_key: sk-ant-test-000000}
assistants:
  desk: {mode: loop, prompt: You keep the team's board in order., tools: [list_*]}
tenants:
  - id: acme
    language: en
    assistant: desk
    roles: {owner: {tools: ["*"]}}
    users:
      - {id: dmitry, name: Dmitry, role: owner, keys: [{token: k-dmitry, scopes: [read]}]}
tools:
  taskboard: {columns: [Inbox, Doing, Done]}
`
	e := servertest.New(t, yaml, kinds.All(), nil, func(string) string { return "" })
	status, body := e.Post("k-dmitry", `{"conversation_id":"c1","message_id":"m1","text":"What is on my plate? Check twice."}`)
	if status != 200 || body["say"] != "You have no open tasks." {
		_, rec := e.Do("GET", "/v1/turns/"+body["turn_id"].(string), "k-dmitry", "")
		t.Fatalf("status %d, body %v\n%v", status, body, rec["llm_calls"])
	}
	reqs := model.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests, want 3", len(reqs))
	}
	var uses, results []string
	for _, m := range reqs[2].Messages {
		for _, b := range m.Content {
			switch b.Type {
			case "tool_use":
				uses = append(uses, b.ID)
			case "tool_result":
				results = append(results, b.ToolUseID)
			}
		}
	}
	if len(uses) != 2 || uses[0] != "toolu_01Xy7kQ2mN9aB" || uses[1] == uses[0] || strings.Join(results, ",") != strings.Join(uses, ",") {
		t.Errorf("tool_use ids %v answered by %v", uses, results)
	}
}

// An interview whose model gives every question the same tool_use ID:
// the interview is stored between answers, and every later request is
// still one the API accepts.
func TestInterviewReusedToolUseIDGoesOn(t *testing.T) {
	model := llmtest.NewAnthropicServer(llmtest.AnthropicServerConfig{})
	t.Cleanup(model.Close)
	for i := 1; i <= 2; i++ {
		model.Enqueue(llmtest.AnthropicReply{ToolUses: []llmtest.AnthropicToolUse{{ID: "toolu_same", Name: "ask_user",
			Input: []byte(`{"question":"Question ` + string(rune('0'+i)) + `?","reasoning":"r"}`)}}})
	}
	model.Enqueue(llmtest.AnthropicReply{ToolUses: []llmtest.AnthropicToolUse{{ID: "toolu_same", Name: "deliver_final_result",
		Input: []byte(`{"content":"The answer.","confidence_score":0.8}`)}}})
	yaml := `models:
  - {name: claude, kind: anthropic, protocol: tools, base_url: "` + model.URL + `", model: claude-haiku-4-5, api_key: sk-ant-test-000000}
assistants:
  iv: {mode: interview, prompt: "You solve the user's task; ask one question at a time."}
tenants:
  - id: acme
    language: en
    assistant: iv
    roles: {user: {tools: []}}
    users:
      - {id: anna, role: user, keys: [{token: k-anna-01, scopes: [read]}]}
`
	e := servertest.New(t, yaml, kinds.All(), nil, func(string) string { return "" })
	for i, text := range []string{"fix my code", "PHP 8.3", "Laravel 11"} {
		status, out := e.Post("k-anna-01", `{"conversation_id":"c1","text":"`+text+`"}`)
		want := []string{"Question 1?", "Question 2?", "The answer."}[i]
		if status != 200 || out["say"] != want {
			t.Fatalf("message %d: %d %v, want %q", i+1, status, out, want)
		}
	}
	reqs := model.Requests()
	var uses []string
	for _, m := range reqs[len(reqs)-1].Messages {
		for _, b := range m.Content {
			if b.Type == "tool_use" {
				uses = append(uses, b.ID)
			}
		}
	}
	if len(reqs) != 3 || len(uses) != 2 || uses[0] != "toolu_same" || uses[1] == uses[0] {
		t.Errorf("%d requests; tool_use ids of the last: %v", len(reqs), uses)
	}
}

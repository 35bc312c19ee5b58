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

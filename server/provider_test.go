package server_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/llm/llmtest"
	"github.com/arbiterhq/arbiter/server"
	"github.com/arbiterhq/arbiter/server/servertest"
)

// A provider's HTTP 400 for one conversation's content fails that turn
// alone: a turn of another conversation right after it, well within the
// cool-down, still reaches the provider and is answered.
func TestBadRequestOfOneConversationBlocksNoOther(t *testing.T) {
	model := llmtest.NewServer(llmtest.ServerConfig{Respond: func(r *llmtest.ChatRequest) llmtest.HTTPReply {
		for _, m := range r.Messages {
			if strings.Contains(m.Content, "an attachment the API refuses") {
				return llmtest.HTTPReply{Status: 400, ErrorType: "invalid_request_error", ErrorCode: "invalid_value", ErrorMessage: "Invalid 'messages[1].content': unsupported content."}
			}
		}
		return llmtest.HTTPReply{Content: `{"say":"Hello, how can I help?","tool":null,"args":null,"done":false,"newTopic":false,"buttons":[]}`}
	}})
	t.Cleanup(model.Close)
	yaml := servertest.OwnerTenantYAML(model.URL, "en") +
		`      - {id: dmitry, role: owner, keys: [{token: k-dmitry, scopes: [read]}]}
      - {id: olga, role: owner, keys: [{token: k-olga-77, scopes: [read]}]}
`
	e := servertest.New(t, yaml, server.Builtin(), model, func(string) string { return "" })

	status, body := e.Post("k-dmitry", `{"conversation_id":"c1","message_id":"m1","text":"here is an attachment the API refuses"}`)
	if say, _ := body["say"].(string); status != 200 || !strings.Contains(say, "did not accept this request") {
		t.Fatalf("refused conversation: %d %v", status, body)
	}
	_, rec := e.Do("GET", "/v1/turns/"+body["turn_id"].(string), "k-dmitry", "")
	calls, _ := json.Marshal(rec["llm_calls"])
	if !strings.Contains(string(calls), `"status":"bad_request"`) || !strings.Contains(string(calls), "this request alone, the provider stays open") ||
		strings.Contains(string(calls), "blocked") {
		t.Errorf("journal of the refused turn: %s", calls)
	}
	before := model.Count()

	status, body = e.Post("k-olga-77", `{"conversation_id":"c2","message_id":"m1","text":"hi"}`)
	if status != 200 || body["say"] != "Hello, how can I help?" || model.Count() != before+1 {
		_, rec := e.Do("GET", "/v1/turns/"+body["turn_id"].(string), "k-olga-77", "")
		t.Fatalf("the other conversation: %d %v (model calls %d, before %d)\n%v", status, body, model.Count(), before, rec["llm_calls"])
	}
}

// A provider that uses a tool-call ID again later in a task (as real ones
// do) is not refused: the call goes on under an ID of the transcript, the
// request that carries both calls is one the API accepts, and the task
// ends with the model's answer.
func TestProviderReusedCallIDGoesOn(t *testing.T) {
	model, e := newDesk(t, `{mode: loop, prompt: You keep the team's board in order., tools: [list_*]}`, `[read]`, `{columns: [Inbox, Doing, Done]}`)
	again := llmtest.HTTPReply{ToolCalls: []llmtest.WireToolCall{{ID: "call_Q1w2E3r4", Name: "list_my_tasks", Arguments: `{}`}}}
	model.Enqueue(again, again, llmtest.HTTPReply{Content: "You have no open tasks."})
	body := deskSays(t, e, `{"conversation_id":"c1","message_id":"m1","text":"What is on my plate? Check twice."}`, "You have no open tasks.")
	reqs := model.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests, want 3", len(reqs))
	}
	var calls, answers []string
	for _, m := range reqs[2].Messages {
		for _, c := range m.ToolCalls {
			calls = append(calls, c.ID)
		}
		if m.Role == "tool" {
			answers = append(answers, m.ToolCallID)
		}
	}
	if len(calls) != 2 || calls[0] != "call_Q1w2E3r4" || calls[1] == calls[0] || len(calls[1]) != len(calls[0]) ||
		strings.Join(answers, ",") != strings.Join(calls, ",") {
		t.Errorf("call ids %v answered by %v", calls, answers)
	}
	_, rec := e.Do("GET", "/v1/turns/"+body["turn_id"].(string), "k-dmitry", "")
	notes, _ := json.Marshal(rec["notes"])
	if !strings.Contains(string(notes), `call_Q1w2E3r4`) || !strings.Contains(string(notes), calls[1]) {
		t.Errorf("the trace does not map the id back: %s", notes)
	}
}

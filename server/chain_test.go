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
	if status != 200 || body["say"] == "Hello, how can I help?" {
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

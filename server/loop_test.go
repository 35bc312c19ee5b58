package server_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/llm/llmtest"
	"github.com/arbiterhq/arbiter/server"
	"github.com/arbiterhq/arbiter/server/servertest"
)

// A loop assistant configured in YAML, over HTTP: the model reads through
// native tool calls and answers; a task that repeats one call is handed
// off and listed for people as needs_review.
func TestLoopAssistantOverHTTP(t *testing.T) {
	model, e := newDesk(t, `
    mode: loop
    hand_off: true
    prompt: You keep the team's board in order.
    tools: [list_*, comment_task]
    limits: {same_call: 1}`, `[read, "write:safe"]`, `{columns: [Inbox, Doing, Done]}`)

	model.Enqueue(
		llmtest.HTTPReply{ToolCalls: []llmtest.WireToolCall{{ID: "call_1", Name: "list_my_tasks", Arguments: `{}`}}},
		llmtest.HTTPReply{Content: "You have no open tasks."},
	)
	deskSays(t, e, `{"conversation_id":"c1","message_id":"m1","text":"What is on my plate?"}`, "You have no open tasks.")
	reqs := model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests, want 2", len(reqs))
	}
	var offered []string
	for _, tl := range reqs[0].Tools {
		offered = append(offered, tl.Function.Name)
	}
	if strings.Join(offered, ",") != "comment_task,list_my_tasks,hand_off_to_human" || reqs[0].ResponseFormat != nil {
		t.Errorf("offered %v, response_format %+v", offered, reqs[0].ResponseFormat)
	}
	if reqs[0].ParallelToolCalls != nil {
		t.Errorf("parallel_tool_calls = %v, want the API's default (allowed)", *reqs[0].ParallelToolCalls)
	}
	last := reqs[1].Messages[len(reqs[1].Messages)-1]
	if last.Role != "tool" || last.ToolCallID != "call_1" || !strings.HasPrefix(last.Content, `{"status":"ok","data":`) {
		t.Errorf("tool message = %+v", last)
	}

	// The same call twice, with same_call 1: handed off.
	repeat := llmtest.HTTPReply{ToolCalls: []llmtest.WireToolCall{{Name: "list_my_tasks", Arguments: `{}`}}}
	model.Enqueue(repeat, repeat)
	status, body := e.Post("k-dmitry", `{"conversation_id":"c2","message_id":"m2","text":"Find the launch tasks"}`)
	if status != 200 || !strings.Contains(body["say"].(string), "passed this to a colleague") {
		t.Fatalf("status %d, body %v", status, body)
	}
	handedOff := body["turn_id"].(string)
	status, list := e.Do("GET", "/v1/turns?status=needs_review", "k-dmitry", "")
	turns, _ := list["turns"].([]any)
	if status != 200 || len(turns) != 1 || turns[0].(map[string]any)["turn_id"] != handedOff {
		t.Fatalf("needs_review list: %d %v", status, list)
	}
	status, rec := e.Do("GET", "/v1/turns/"+handedOff, "k-dmitry", "")
	raw, _ := json.Marshal(rec["review"])
	if status != 200 || !strings.Contains(string(raw), `"reason":"repeated_call"`) {
		t.Errorf("turn %d, review %s", status, raw)
	}
}

// POST /v1/messages with a case: only a key with context:bind may send
// one, and a conversation keeps the case it was first bound to.
func TestCaseContextOverHTTP(t *testing.T) {
	model := llmtest.NewServer(llmtest.ServerConfig{})
	t.Cleanup(model.Close)
	yaml := servertest.OwnerTenantYAML(model.URL, "en") +
		`      - {id: desk, role: owner, keys: [{token: k-helpdesk, scopes: [read, "context:bind"]}]}
      - {id: dmitry, role: owner, keys: [{token: k-dmitry, scopes: [read, "write:safe"]}]}
`
	e := servertest.New(t, yaml, server.Builtin(), model, func(string) string { return "" })
	model.Enqueue(llmtest.HTTPReply{Content: `{"say":"Looking into it.","tool":null,"args":null,"done":false,"newTopic":false,"buttons":[]}`})

	status, body := e.Post("k-dmitry", `{"conversation_id":"T-4821","text":"hi","context":{"ticket_id":"T-4821"}}`)
	if status != 403 || body["error"].(map[string]any)["code"] != "forbidden" {
		t.Errorf("context from a key without context:bind: %d %v", status, body)
	}
	if status, body = e.Post("k-helpdesk", `{"conversation_id":"T-4821","text":"hi","context":{"ticket_id":""}}`); status != 400 {
		t.Errorf("empty context value: %d %v", status, body)
	}
	if status, body = e.Post("k-helpdesk", `{"conversation_id":"T-4821","message_id":"m1","text":"Money taken, no access","context":{"ticket_id":"T-4821"}}`); status != 200 || body["say"] != "Looking into it." {
		t.Fatalf("bound message: %d %v", status, body)
	}
	status, body = e.Post("k-helpdesk", `{"conversation_id":"T-4821","message_id":"m2","text":"another one","context":{"ticket_id":"T-9999"}}`)
	if status != 409 || body["error"].(map[string]any)["code"] != "case_conflict" || model.Count() != 1 {
		t.Errorf("another case in the same conversation: %d %v (model calls %d)", status, body, model.Count())
	}
}

// newDesk serves tenant acme (in English) with the loop assistant desk
// (its settings desk, a YAML flow mapping or block) on the fake model
// speaking the tools protocol; owner dmitry sends with key k-dmitry of
// scopes (a YAML list), and the task board has the settings board.
func newDesk(t *testing.T, desk, scopes, board string) (*llmtest.Server, *servertest.Server) {
	t.Helper()
	model := llmtest.NewServer(llmtest.ServerConfig{})
	t.Cleanup(model.Close)
	yaml := `models:
  - {name: fake, kind: openai, protocol: tools, base_url: "` + model.URL + `", model: m, api_key: sk-x}
assistants:
  desk: ` + desk + `
tenants:
  - id: acme
    language: en
    assistant: desk
    roles: {owner: {tools: ["*"]}}
    users:
      - {id: dmitry, name: Dmitry, role: owner, keys: [{token: k-dmitry, scopes: ` + scopes + `}]}
tools:
  taskboard: ` + board + `
`
	return model, servertest.New(t, yaml, server.Builtin(), model, func(string) string { return "" })
}

// deskSays posts message as dmitry and fails the test, showing the turn's
// record, unless the reply says want; it returns the reply.
func deskSays(t *testing.T, e *servertest.Server, message, want string) map[string]any {
	t.Helper()
	status, body := e.Post("k-dmitry", message)
	if status != 200 || body["say"] != want {
		_, rec := e.Do("GET", "/v1/turns/"+body["turn_id"].(string), "k-dmitry", "")
		t.Fatalf("status %d, body %v\n%v", status, body, rec)
	}
	return body
}

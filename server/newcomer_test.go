package server_test

import (
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/llm/llmtest"
	"github.com/arbiterhq/arbiter/server"
	"github.com/arbiterhq/arbiter/server/servertest"
)

// newcomerServer is a server of yaml (a tenant acme of owner dmitry and
// anna, then tools) with the fake model.
func newcomerServer(t *testing.T, tools string) *servertest.Server {
	t.Helper()
	model := llmtest.NewServer(llmtest.ServerConfig{})
	t.Cleanup(model.Close)
	yaml := servertest.OwnerTenantYAML(model.URL, "en") + `      - {id: dmitry, name: Dmitry, role: owner, keys: [{token: k-dmitry, scopes: [read, "write:safe", "write:full"]}]}
      - {id: anna, name: Anna, role: owner, keys: [{token: k-anna-01, scopes: [read, "write:safe", "write:full"]}]}
` + tools
	return servertest.New(t, yaml, server.Builtin(), model, func(string) string { return "" })
}

// page GETs a page of the web app: its status and body.
func page(t *testing.T, s *servertest.Server, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(s.API.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Without tools.taskboard there is no board: /help does not offer /tasks,
// /tasks is no command (it goes to the model as any text), and neither the
// board's API, its pages nor its navigation entry exist. With it, all of
// them do.
func TestCommandsAndPagesFollowTheTools(t *testing.T) {
	s := newcomerServer(t, "tools: {knowledge: {}}\n")
	_, r := s.Post("k-dmitry", `{"conversation_id":"c1","text":"/help"}`)
	if say, _ := r["say"].(string); strings.Contains(say, "/tasks") || !strings.Contains(say, "/cancel — drop the pending action") {
		t.Errorf("/help without a board: %q", say)
	}
	s.Model.Enqueue(llmtest.HTTPReply{Content: `{"say":"There is no task board here.","tool":null,"args":null,"done":false,"newTopic":false,"buttons":[]}`})
	_, r = s.Post("k-dmitry", `{"conversation_id":"c1","text":"/tasks"}`)
	if r["say"] != "There is no task board here." || len(r["executed"].([]any)) != 0 {
		t.Errorf("/tasks without a board = %v, want the model's answer and nothing run", r)
	}
	if status, b := s.Do("GET", "/v1/board", "k-dmitry", ""); status != 404 || b["error"].(map[string]any)["code"] != "not_found" {
		t.Errorf("GET /v1/board without a board: %d %v", status, b)
	}
	for _, path := range []string{"/board", "/board/c/x1"} {
		if status, _ := page(t, s, path); status != 404 {
			t.Errorf("GET %s without a board: %d, want 404", path, status)
		}
	}
	if status, body := page(t, s, "/"); status != 200 || !strings.Contains(body, `data-pages=""`) {
		t.Errorf("the app without a board: %d, pages not empty", status)
	}

	s = newcomerServer(t, "tools: {taskboard: {}}\n")
	_, r = s.Post("k-dmitry", `{"conversation_id":"c1","text":"/help"}`)
	if say, _ := r["say"].(string); !strings.Contains(say, "/tasks — my tasks") {
		t.Errorf("/help with the board: %q", say)
	}
	_, r = s.Post("k-dmitry", `{"conversation_id":"c1","text":"/tasks"}`)
	if ex, _ := r["executed"].([]any); len(ex) != 1 || ex[0].(map[string]any)["tool"] != "list_my_tasks" {
		t.Errorf("/tasks with the board = %v", r)
	}
	if status, _ := s.Do("GET", "/v1/board", "k-dmitry", ""); status != 200 {
		t.Errorf("GET /v1/board with the board: %d", status)
	}
	if status, body := page(t, s, "/board"); status != 200 || !strings.Contains(body, `data-pages="board"`) {
		t.Errorf("GET /board with the board: %d", status)
	}
}

// A card created without an assignee is its creator's to see in /tasks;
// another user is told how many cards have nobody.
func TestTasksListsTheUnassignedCardsTheCallerCreated(t *testing.T) {
	s := newcomerServer(t, "tools: {taskboard: {confirm: {create_task: always}}}\n")
	s.Decide("create_task", `{"title":"Check the signup form","dueIso":"2026-12-04"}`)
	s.Post("k-dmitry", `{"conversation_id":"c1","text":"create a task to check the signup form, due tomorrow"}`)
	if _, r := s.Post("k-dmitry", `{"conversation_id":"c1","text":"yes"}`); len(r["executed"].([]any)) != 1 {
		t.Fatalf("the task was not created: %v", r)
	}
	_, r := s.Post("k-dmitry", `{"conversation_id":"c1","text":"/tasks"}`)
	say, _ := r["say"].(string)
	if !strings.Contains(say, "Check the signup form") || !strings.Contains(say, "no assignee; you created it") || strings.Contains(say, "no open tasks") {
		t.Errorf("the creator's /tasks: %q", say)
	}
	_, r = s.Post("k-anna-01", `{"conversation_id":"a1","text":"/tasks"}`)
	if say, _ := r["say"].(string); strings.Contains(say, "Check the signup form") || !strings.HasSuffix(say, "You have no open tasks.\n1 open card on the board has no assignee.") {
		t.Errorf("another user's /tasks: %q", say)
	}
}

// With no model, free text is answered with how to configure one: the
// environment's key variables and every model kind of the server.
func TestNoModelNamesEveryModelKind(t *testing.T) {
	yaml := `tenants:
  - id: acme
    roles: {owner: {tools: ["*"]}}
    users:
      - {id: dmitry, role: owner, keys: [{token: k-dmitry, scopes: [read]}]}
tools: {taskboard: {}}
`
	kinds := server.Builtin()
	kinds.Models["claude"] = server.ModelKind{}
	s := servertest.New(t, yaml, kinds, nil, func(string) string { return "" })
	_, r := s.Post("k-dmitry", `{"conversation_id":"c1","text":"hello"}`)
	say, _ := r["say"].(string)
	for _, want := range append(slices.Collect(maps.Keys(kinds.Models)), "FIREWORKS_API_KEY", "MISTRAL_API_KEY", "OPENAI_API_KEY", "XAI_API_KEY", "/tasks, /help") {
		if !strings.Contains(say, want) {
			t.Errorf("the no-model reply does not name %s: %q", want, say)
		}
	}
}

// A write that waits for approvers is named in the POST /v1/messages
// reply (approvals: id, tool, status) as in the turn's record.
func TestReplyNamesTheApprovalItCreated(t *testing.T) {
	model := llmtest.NewServer(llmtest.ServerConfig{})
	t.Cleanup(model.Close)
	yaml := `models:
  - {name: fake, kind: openai, base_url: "` + model.URL + `", model: m, api_key: sk-x}
tenants:
  - id: acme
    roles: {owner: {tools: ["*"]}, staff: {tools: ["*"]}}
    users:
      - {id: dmitry, role: owner, keys: [{token: k-dmitry, scopes: [read, "write:safe", "write:full"]}]}
      - {id: sveta, role: staff, keys: [{token: k-sveta-01, scopes: [read, "write:safe", "write:full"]}]}
tools:
  http:
    - name: refund
      description: Refund a payment; staff approve it first.
      url: http://127.0.0.1:1/refund
      risk: "write:full"
      approve: [staff]
      input_schema: {type: object, additionalProperties: false, required: [amount], properties: {amount: {type: integer}}}
`
	s := servertest.New(t, yaml, server.Builtin(), model, func(string) string { return "" })
	s.Decide("refund", `{"amount":990}`)
	status, r := s.Post("k-dmitry", `{"conversation_id":"c1","text":"refund 990 please"}`)
	approvals, _ := r["approvals"].([]any)
	if status != 200 || len(approvals) != 1 {
		t.Fatalf("reply %d %v, want one approval", status, r)
	}
	a := approvals[0].(map[string]any)
	if a["tool"] != "refund" || a["status"] != "proposed" || a["id"] == "" {
		t.Errorf("approval %v", a)
	}
	_, rec := s.Do("GET", "/v1/turns/"+r["turn_id"].(string), "k-dmitry", "")
	recorded, _ := rec["approvals"].([]any)
	if len(recorded) != 1 || recorded[0].(map[string]any)["id"] != a["id"] {
		t.Errorf("the record's approvals %v, the reply's %v", recorded, approvals)
	}
	if _, list := s.Do("GET", "/v1/approvals?status=proposed", "k-sveta-01", ""); len(list["approvals"].([]any)) != 1 || list["approvals"].([]any)[0].(map[string]any)["id"] != a["id"] {
		t.Errorf("the approver's list %v does not hold the reply's id", list)
	}
	_, r = s.Post("k-dmitry", `{"conversation_id":"c1","text":"/help"}`)
	if got, ok := r["approvals"].([]any); !ok || len(got) != 0 {
		t.Errorf("a turn without approvals: approvals = %v, want []", r["approvals"])
	}
}

// A section made in Go is decoded as a file's: a setting the kind lacks is
// an error naming the kind (no line: there is no file), and what is not a
// mapping of settings is refused when it is made.
func TestSectionOfErrors(t *testing.T) {
	if _, err := server.SectionOf([]string{"a"}); err == nil || !strings.Contains(err.Error(), "not a list") {
		t.Errorf("SectionOf(a list) = %v", err)
	}
	n, err := server.SectionOf(map[string]any{"suffix": "!", "volume": 3})
	if err != nil {
		t.Fatal(err)
	}
	var set shoutSettings
	err = server.Section{Kind: "shout", Node: &n}.Decode(&set)
	if err == nil || !strings.HasPrefix(err.Error(), "shout: ") || !strings.Contains(err.Error(), "volume") {
		t.Errorf("Decode with an unknown setting = %v", err)
	}
}

// A model on an endpoint of its own whose price no configuration names
// has an unknown cost: GET /v1/turns says so (the Turns page shows
// "unknown"), not 0.
func TestTurnsListSaysCostUnknown(t *testing.T) {
	s := newcomerServer(t, "tools: {taskboard: {}}\n")
	s.Model.Enqueue(llmtest.HTTPReply{Content: `{"say":"Hello!","tool":null,"args":null,"done":false,"newTopic":false,"buttons":[]}`,
		Usage: &llmtest.WireUsage{PromptTokens: 100, CompletionTokens: 10, TotalTokens: 110}})
	s.Post("k-dmitry", `{"conversation_id":"c1","text":"hello"}`)
	s.Post("k-dmitry", `{"conversation_id":"c1","text":"/tasks"}`)
	_, list := s.Do("GET", "/v1/turns", "k-dmitry", "")
	turns, _ := list["turns"].([]any)
	if len(turns) != 2 {
		t.Fatalf("turns %v", list)
	}
	model, command := turns[1].(map[string]any), turns[0].(map[string]any)
	if model["cost_unknown"] != true || command["cost_unknown"] != nil {
		t.Errorf("cost_unknown: the model's turn %v, the command's %v; want true and absent", model["cost_unknown"], command["cost_unknown"])
	}
}

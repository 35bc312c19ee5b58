package server_test

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/arbiterhq/arbiter/config"
	"github.com/arbiterhq/arbiter/llm/llmtest"
	"github.com/arbiterhq/arbiter/server"
	"github.com/arbiterhq/arbiter/server/servertest"
)

const requiresYAML = `models:
  - {name: fake, kind: openai, protocol: tools, base_url: "MODEL_URL", model: m, api_key: sk-x}
tenants:
  - id: acme
    roles: {owner: {tools: ["*"]}}
    users:
      - {id: anna, name: Анна, role: owner, trello: {member: anna_t, token_env: ANNA_TRELLO}, google: {email: anna@example.org}, keys: [{token: "k-anna-01", scopes: [read, "write:safe"]}]}
      - {id: boris, name: Борис, role: owner, keys: [{token: "k-boris-01", scopes: [read, "write:safe"]}]}
tools:
  taskboard: {disabled: true}
  trello: {api_base_url: "TRELLO_URL", key_env: TRELLO_KEY, board: BoArD123, requires: trello}
  calendar: {requires: google}
`

// The built-in Trello and calendar kinds declare requires like HTTP
// tools: a user who has not connected Trello (or Google) is never offered
// their tools, a call of one named anyway does not run, and no token but
// the connected user's own ever reaches Trello.
func TestBuiltinKindsRequireConnection(t *testing.T) {
	var mu sync.Mutex
	var tokens seen
	trelloAPI := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tokens.add(r.URL.Query().Get("token"))
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.HasSuffix(r.URL.Path, "/lists"):
			w.Write([]byte(`[{"id":"5f1e0c7a2b3c4d5e6f7a0001","name":"To do","closed":false,"pos":1}]`))
		case strings.HasPrefix(r.URL.Path, "/1/boards/") && !strings.Contains(strings.TrimPrefix(r.URL.Path, "/1/boards/"), "/"):
			w.Write([]byte(`{"id":"5f1e0c7a2b3c4d5e6f7a0000","shortLink":"BoArD123","name":"Team","closed":false,"url":"https://trello.com/b/BoArD123/team"}`))
		default:
			w.Write([]byte(`[]`))
		}
	}))
	defer trelloAPI.Close()
	var offered [][]string
	model := llmtest.NewServer(llmtest.ServerConfig{Respond: func(r *llmtest.ChatRequest) llmtest.HTTPReply {
		var names []string
		for _, tl := range r.Tools {
			names = append(names, tl.Function.Name)
		}
		mu.Lock()
		offered = append(offered, names)
		mu.Unlock()
		return llmtest.HTTPReply{ToolCalls: []llmtest.WireToolCall{{Name: "list_my_tasks", Arguments: `{}`}}}
	}})
	defer model.Close()
	env := map[string]string{"TRELLO_KEY": "trello-key-1", "ANNA_TRELLO": "anna-token", "TRELLO_TOKEN": "deployment-token"}
	getenv := func(k string) string { return env[k] }
	yaml := strings.NewReplacer("MODEL_URL", model.URL, "TRELLO_URL", trelloAPI.URL).Replace(requiresYAML)
	e := servertest.New(t, yaml, server.Builtin(), model, getenv)

	status, body := e.Post("k-boris-01", `{"conversation_id":"c1","text":"какие у меня задачи"}`)
	mu.Lock()
	if status != 200 || len(offered) != 1 {
		t.Fatalf("boris: %d %v, %d model calls", status, body, len(offered))
	}
	for _, name := range []string{"list_my_tasks", "create_task", "create_event", "schedule_team_meeting"} {
		if slices.Contains(offered[0], name) {
			t.Errorf("boris, connected to nothing, is offered %s: %v", name, offered[0])
		}
	}
	if got := tokens.list(); len(got) != 0 {
		t.Errorf("Trello was called for boris with tokens %q", got)
	}
	mu.Unlock()
	if ex, _ := body["executed"].([]any); len(ex) != 0 {
		t.Errorf("a tool ran for boris: %v", ex)
	}

	if status, body := e.Post("k-anna-01", `{"conversation_id":"c1","text":"какие у меня задачи"}`); status != 200 {
		t.Fatalf("anna: %d %v", status, body)
	}
	mu.Lock()
	defer mu.Unlock()
	last := offered[len(offered)-1]
	for _, name := range []string{"list_my_tasks", "create_task", "create_event", "schedule_team_meeting"} {
		if !slices.Contains(last, name) {
			t.Errorf("anna, connected, is not offered %s: %v", name, last)
		}
	}
	got := tokens.list()
	if len(got) == 0 {
		t.Error("anna's call did not reach Trello")
	}
	for _, tok := range got {
		if tok != "anna-token" {
			t.Errorf("Trello got token %q, want only anna's own", tok)
		}
	}
}

// A board that requires a connection has no default token to act with,
// and every connected user brings their own.
func TestRequiresConfigErrors(t *testing.T) {
	env := map[string]string{"TRELLO_KEY": "k", "TRELLO_TOKEN": "t", "ANNA_TRELLO": "a"}
	for _, c := range []struct{ from, to, want string }{
		{"board: BoArD123, requires: trello", "board: BoArD123, requires: trello, token_env: TRELLO_TOKEN", "tools.trello.token_env"},
		{"trello: {member: anna_t, token_env: ANNA_TRELLO}", "trello: {member: anna_t}", "users.anna.trello.token_env"},
		{"calendar: {requires: google}", "calendar: {requires: gmail}", "tools.calendar.requires"},
		{"requires: trello}", "requires: jira}", "tools.trello.requires"},
	} {
		yaml := strings.Replace(requiresYAML, c.from, c.to, 1)
		_, err := config.Parse(strings.NewReader(yaml), func(k string) string { return env[k] })
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one at %s", c.to, err, c.want)
		}
	}
}

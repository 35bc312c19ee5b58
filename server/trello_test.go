package server_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/llm/llmtest"
	"github.com/arbiterhq/arbiter/server"
	"github.com/arbiterhq/arbiter/server/servertest"
)

// TestForwardedTrelloLink is the seed system's incident over the HTTP API:
// "о чем эта задача", then a message whose evidence is a forwarded Trello
// card link. The answer comes from GET /1/cards/<shortLink>, with no model
// call for that turn and no task proposed.
func TestForwardedTrelloLink(t *testing.T) {
	var paths seen
	trelloAPI := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths.add(r.Method + " " + r.URL.Path)
		if r.URL.Query().Get("key") != "trello-key-1" {
			http.Error(w, "invalid key", http.StatusUnauthorized)
			return
		}
		switch r.URL.Path {
		case "/1/cards/Ab12Cd34":
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{
				"id": "5f1e0c7a2b3c4d5e6f7a8b9c", "shortLink": "Ab12Cd34", "name": "Проверить форму регистрации",
				"desc": "Поля e-mail и телефон, мобильная вёрстка", "due": "2026-12-04T09:00:00.000Z", "dueComplete": false,
				"closed": false, "url": "https://trello.com/c/Ab12Cd34/17-proverit-formu", "shortUrl": "https://trello.com/c/Ab12Cd34",
				"idList": "5f1e0c7a2b3c4d5e6f7a0001", "idBoard": "5f1e0c7a2b3c4d5e6f7a0000", "idMembers": []string{},
			})
		default:
			// Board reads (lists, members) for the live context.
			w.Header().Set("Content-Type", "application/json")
			if strings.HasSuffix(r.URL.Path, "/lists") {
				w.Write([]byte(`[{"id":"5f1e0c7a2b3c4d5e6f7a0001","name":"To do","closed":false,"pos":1}]`))
				return
			}
			if strings.HasPrefix(r.URL.Path, "/1/boards/") && !strings.Contains(strings.TrimPrefix(r.URL.Path, "/1/boards/"), "/") {
				w.Write([]byte(`{"id":"5f1e0c7a2b3c4d5e6f7a0000","shortLink":"BoArD123","name":"Team","closed":false,"url":"https://trello.com/b/BoArD123/team"}`))
				return
			}
			w.Write([]byte(`[]`))
		}
	}))
	defer trelloAPI.Close()
	model := llmtest.NewServer(llmtest.ServerConfig{})
	defer model.Close()
	model.Enqueue(llmtest.HTTPReply{Content: `{"say":"О какой задаче речь?","tool":null,"args":null,"done":false,"newTopic":false,"buttons":[]}`})

	yaml := `models:
  - {name: fake, kind: openai, base_url: "` + model.URL + `", model: m, api_key: sk-x}
tenants:
  - id: acme
    roles: {owner: {tools: ["*"]}}
    users:
      - {id: dmitry, name: Дмитрий, role: owner, trello: {member: dmitry_t}, keys: [{token: "k-dmitry", scopes: [read, "write:safe"]}]}
tools:
  taskboard: {disabled: true}
  trello: {api_base_url: "` + trelloAPI.URL + `", key_env: TRELLO_KEY, token_env: TRELLO_TOKEN, board: BoArD123}
`
	env := map[string]string{"TRELLO_KEY": "trello-key-1", "TRELLO_TOKEN": "trello-token-1"}
	getenv := func(k string) string { return env[k] }
	e := servertest.New(t, yaml, server.Builtin(), model, getenv)

	if status, body := e.Post("k-dmitry", `{"conversation_id":"c1","text":"о чем эта задача"}`); status != 200 || model.Count() != 1 {
		t.Fatalf("question: %d %v", status, body)
	}
	status, body := e.Post("k-dmitry", `{"conversation_id":"c1","evidence":[{"kind":"forward","text":"https://trello.com/c/Ab12Cd34/17-proverit-formu","source":"Ольга"}]}`)
	if status != 200 {
		t.Fatalf("forward: %d %v", status, body)
	}
	if model.Count() != 1 {
		t.Errorf("the model was asked about the forwarded link (%d calls)", model.Count())
	}
	say, _ := body["say"].(string)
	for _, want := range []string{"Проверить форму регистрации", "мобильная вёрстка", "trello.com/c/Ab12Cd34"} {
		if !strings.Contains(say, want) {
			t.Errorf("reply %q lacks %q", say, want)
		}
	}
	if body["pending"] != nil {
		t.Errorf("a task was proposed: %v", body["pending"])
	}
	// Trello's kind brings /tasks too, but no pages of an embedded board.
	if _, help := e.Post("k-dmitry", `{"conversation_id":"c2","text":"/help"}`); !strings.Contains(help["say"].(string), "/tasks — my tasks") {
		t.Errorf("/help with Trello: %v", help["say"])
	}
	if status, _ := e.Do("GET", "/v1/board", "k-dmitry", ""); status != 404 {
		t.Errorf("GET /v1/board with Trello: %d, want 404", status)
	}
	found := false
	for _, p := range paths.list() {
		found = found || p == "GET /1/cards/Ab12Cd34"
		if strings.HasPrefix(p, "POST") || strings.HasPrefix(p, "PUT") {
			t.Errorf("a write reached Trello: %s", p)
		}
	}
	if !found {
		t.Errorf("the card was not read from Trello: %v", paths.list())
	}
}

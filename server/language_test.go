package server_test

import (
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/llm/llmtest"
	"github.com/arbiterhq/arbiter/server"
	"github.com/arbiterhq/arbiter/server/servertest"
)

// TestNoLanguageMeansEnglish: a configuration that names no language
// answers in English everywhere — the engine's texts, the tools' replies,
// the board's columns and what /v1/me tells a client — as the local setup
// does; a tenant sets its own.
func TestNoLanguageMeansEnglish(t *testing.T) {
	model := llmtest.NewServer(llmtest.ServerConfig{APIKey: "sk-x"})
	t.Cleanup(model.Close)
	yaml := `models:
  - {name: fake, kind: openai, base_url: "` + model.URL + `", model: m, api_key: sk-x}
tenants:
  - id: acme
    roles: {owner: {tools: ["*"]}}
    users: [{id: dmitry, name: Дмитрий, role: owner, keys: [{token: k-dmitry-en, scopes: [read, "write:safe"]}]}]
tools:
  taskboard: {confirm: {create_task: always}}
`
	e := servertest.New(t, yaml, server.Builtin(), model, func(string) string { return "" })

	_, me := e.Do("GET", "/v1/me", "k-dmitry-en", "")
	if me["language"] != "en" {
		t.Errorf("/v1/me language = %v, want en", me["language"])
	}
	e.Decide("create_task", `{"title":"Проверить форму"}`)
	_, r := e.Post("k-dmitry-en", `{"conversation_id":"c1","text":"создай задачу проверить форму"}`)
	say, _ := r["say"].(string)
	if !strings.HasPrefix(say, "Please confirm: Create a task\n") || !strings.HasSuffix(say, "Go ahead?") {
		t.Errorf("confirmation %q, want it in English", say)
	}
	if b, _ := r["buttons"].([]any); len(b) != 2 || b[0].(map[string]any)["label"] != "✅ Yes" {
		t.Errorf("buttons %v", r["buttons"])
	}
	_, r = e.Post("k-dmitry-en", `{"conversation_id":"c1","text":"да"}`)
	if say, _ := r["say"].(string); !strings.HasPrefix(say, "Created task") {
		t.Errorf("the tool's reply %q, want it in English", say)
	}
	_, r = e.Post("k-dmitry-en", `{"conversation_id":"c1","text":"/help"}`)
	if say, _ := r["say"].(string); !strings.HasPrefix(say, "Write what you need in your own words.") || !strings.Contains(say, "/tasks — my tasks") {
		t.Errorf("/help %q", say)
	}
	_, board := e.Do("GET", "/v1/board", "k-dmitry-en", "")
	cols, _ := board["columns"].([]any)
	if len(cols) != 3 || cols[0].(map[string]any)["name"] != "Inbox" {
		t.Errorf("board columns %v, want Inbox, In progress, Done", cols)
	}
}

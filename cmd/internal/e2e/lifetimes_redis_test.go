package e2e

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/cmd/internal/kinds"
	"github.com/arbiterhq/arbiter/llm/llmtest"
	"github.com/arbiterhq/arbiter/server"
	"github.com/arbiterhq/arbiter/server/servertest"
	"github.com/arbiterhq/arbiter/store/storetest"
)

// TestLifetimesOnRedis: on the Redis store, with the server's clock moved
// on, an interview answered 20 hours after its question continues, and
// the conversation's case outlives the memory's 30 minutes: another case
// two days later is still 409.
func TestLifetimesOnRedis(t *testing.T) {
	port := redisPort(t)
	redis := startRedis(t, port)
	t.Cleanup(func() { _ = redis.Process.Kill(); _ = redis.Wait() })

	model := llmtest.NewServer(llmtest.ServerConfig{})
	t.Cleanup(model.Close)
	yaml := fmt.Sprintf(`store: {kind: redis, url: "redis://127.0.0.1:%d/0"}
journal: {kind: sqlite, path: %q}
models:
  - {name: fake, kind: openai, protocol: tools, base_url: %q, model: m, api_key: sk-x}
assistants:
  iv: {mode: interview, prompt: "Ты — эксперт-исполнитель."}
tenants:
  - id: acme
    language: ru
    assistant: iv
    roles: {user: {tools: []}}
    users:
      - {id: desk, role: user, keys: [{token: k-desk-0001, scopes: [read, "context:bind"]}]}
`, port, filepath.Join(t.TempDir(), "journal.db"), model.URL)
	clock := storetest.NewClock(time.Date(2026, 11, 30, 18, 0, 0, 0, time.UTC))
	e := servertest.NewWith(t, yaml, kinds.All(), model, server.Options{Now: clock.Now})
	model.Enqueue(
		llmtest.HTTPReply{ToolCalls: []llmtest.WireToolCall{{ID: "q1", Name: "ask_user", Arguments: `{"question":"Какая версия?","reasoning":"r"}`}}},
		llmtest.HTTPReply{ToolCalls: []llmtest.WireToolCall{{ID: "q2", Name: "ask_user", Arguments: `{"question":"Какая база?","reasoning":"r"}`}}},
	)
	post := func(text, ticket string) (int, map[string]any) {
		return e.Post("k-desk-0001", fmt.Sprintf(`{"conversation_id":"c1","text":%q,"context":{"ticket_id":%q}}`, text, ticket))
	}
	if status, body := post("оптимизируй функцию", "T-1"); status != 200 || body["say"] != "Какая версия?" {
		t.Fatalf("first question: %d %v", status, body)
	}
	clock.Advance(20 * time.Hour)
	if status, body := post("Laravel 11", "T-1"); status != 200 || body["say"] != "Какая база?" {
		t.Fatalf("the answer 20 hours later: %d %v", status, body)
	}
	msgs := model.Requests()[1].Messages
	if last := msgs[len(msgs)-1]; last.Role != "tool" || last.ToolCallID != "q1" {
		t.Errorf("the answer went as %+v: the interview did not continue", last)
	}
	clock.Advance(2 * 24 * time.Hour)
	status, body := post("другой вопрос", "T-2")
	if e, _ := body["error"].(map[string]any); status != 409 || e["code"] != "case_conflict" {
		t.Errorf("another case two days later: %d %v; want 409", status, body)
	}
	if n := len(model.Requests()); n != 2 {
		t.Errorf("%d model calls: the refused message reached the model", n)
	}
}

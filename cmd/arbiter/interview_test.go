package main

import (
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/llm/llmtest"
)

// An interview waits for the user's answer across a restart of the server
// process: the question, the call it came from and the count are in the
// store, and the next process goes on from them.
func TestInterviewAcrossAProcessRestart(t *testing.T) {
	bin := slowBinary(t, "builds and restarts the binary")
	model := llmtest.NewServer(llmtest.ServerConfig{})
	t.Cleanup(model.Close)
	model.Enqueue(
		llmtest.HTTPReply{ToolCalls: []llmtest.WireToolCall{{ID: "q1", Name: "ask_user",
			Arguments: `{"question":"Какую версию Laravel вы используете?","reasoning":"the API differs","options":["Laravel 10","Laravel 11","Не знаю"]}`}}},
		llmtest.HTTPReply{ToolCalls: []llmtest.WireToolCall{{ID: "f", Name: "deliver_final_result",
			Arguments: `{"content":"Оптимизированная функция для Laravel 11","confidence_score":0.9}`}}},
	)
	cfg := fmt.Sprintf(`listen: 127.0.0.1:0
store: {kind: sqlite, path: %q}
models:
  - {name: fake, kind: openai, protocol: tools, base_url: %q, model: fake-model, api_key: sk-interview-test}
log: {level: warn}
assistants:
  iv: {mode: interview}
tenants:
  - id: acme
    language: ru
    assistant: iv
    roles: {owner: {tools: []}}
    users:
      - {id: u1, name: User, role: owner, keys: [{token: "k-crash-test", scopes: [read]}]}
`, filepath.Join(t.TempDir(), "arbiter.db"), model.URL)
	client := &http.Client{Timeout: 30 * time.Second}

	in := startInstance(t, bin, cfg)
	reply, err := postMessage(client, in.addr, "c1", "m1", "оптимизируй функцию")
	if err != nil || reply["say"] != "Какую версию Laravel вы используете?" {
		t.Fatalf("question: %v %v", reply, err)
	}
	in.kill()

	in = startInstance(t, bin, cfg)
	defer in.kill()
	reply, err = postMessage(client, in.addr, "c1", "m2", "Laravel 11")
	if err != nil || reply["say"] != "Оптимизированная функция для Laravel 11" {
		t.Fatalf("after the restart: %v %v", reply, err)
	}
	msgs := model.Requests()[1].Messages
	if n := len(msgs); n != 4 || msgs[2].ToolCalls[0].ID != "q1" || msgs[3].ToolCallID != "q1" || msgs[3].Content != "Laravel 11" {
		t.Errorf("the second process sent %+v", msgs)
	}
}

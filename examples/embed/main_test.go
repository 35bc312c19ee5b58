package main

import (
	"os"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/llm/llmtest"
	"github.com/arbiterhq/arbiter/server/servertest"
)

// TestShoutThroughTheServer: arbiter.yaml as shipped, the model from the
// environment (a fake speaking the OpenAI wire format) proposing shout; the
// HTTP API runs the program's own tool.
func TestShoutThroughTheServer(t *testing.T) {
	model := llmtest.NewServer(llmtest.ServerConfig{})
	t.Cleanup(model.Close)
	yaml, err := os.ReadFile("arbiter.yaml")
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"OPENAI_API_KEY": "sk-embed-test", "OPENAI_BASE_URL": model.URL}
	s := servertest.New(t, string(yaml), kinds(), model, func(k string) string { return env[k] })
	s.Decide("shout", `{"text":"abc"}`)
	status, reply := s.Post("k-embed-01", `{"conversation_id":"c1","text":"shout abc"}`)
	ex, _ := reply["executed"].([]any)
	if status != 200 || len(ex) != 1 || !strings.Contains(ex[0].(map[string]any)["result"].(string), "ABC") {
		t.Fatalf("reply %d %v, want the shout tool's ABC", status, reply)
	}
}

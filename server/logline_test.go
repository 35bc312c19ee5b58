package server_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/arbiterhq/arbiter/llm/llmtest"
	"github.com/arbiterhq/arbiter/server"
	"github.com/arbiterhq/arbiter/server/servertest"
)

// The service's one log line per turn shows what the task assistant's
// operators read first: the wait for the turn's lock, the turn's whole
// duration, whether the provider chain fell back, and which model
// decided — as the turn record has them.
func TestTurnLogLine(t *testing.T) {
	down := llmtest.NewServer(llmtest.ServerConfig{})
	t.Cleanup(down.Close)
	up := llmtest.NewServer(llmtest.ServerConfig{})
	t.Cleanup(up.Close)
	yaml := "log: {format: json}\nmodels:\n" +
		"  - {name: first, kind: openai, base_url: \"" + down.URL + "\", model: m-first, api_key: sk-x}\n" +
		"  - {name: second, kind: openai, base_url: \"" + up.URL + "\", model: m-second, api_key: sk-x}\n" +
		"tenants:\n  - id: acme\n    roles: {owner: {tools: []}}\n    users:\n      - {id: u, role: owner, keys: [{token: k-log-01, scopes: [read]}]}\n"
	var mu sync.Mutex
	var logs bytes.Buffer
	e := servertest.NewWith(t, yaml, server.Builtin(), up, server.Options{Getenv: func(string) string { return "" }, LogOut: writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return logs.Write(p)
	})})
	down.Enqueue(llmtest.HTTPReply{Status: 400, ErrorType: "invalid_request_error", ErrorMessage: "unsupported"})
	up.Enqueue(llmtest.HTTPReply{Content: `{"say":"hi","tool":null,"args":null,"done":false,"newTopic":false,"buttons":[]}`})
	_, body := e.Post("k-log-01", `{"conversation_id":"c","text":"hi"}`)
	_, rec := e.Do("GET", "/v1/turns/"+body["turn_id"].(string), "k-log-01", "")

	mu.Lock()
	defer mu.Unlock()
	var line map[string]any
	for _, l := range strings.Split(logs.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == "turn" && m["turn"] == body["turn_id"] {
			line = m
		}
	}
	if line == nil {
		t.Fatalf("no log line of the turn in\n%s", logs.String())
	}
	if line["lock_wait_ms"] != rec["lock_wait_ms"] || line["duration_ms"] != rec["duration_ms"] {
		t.Errorf("log line %v: lock wait and duration differ from the record's %v, %v", line, rec["lock_wait_ms"], rec["duration_ms"])
	}
	if line["fallback"] != true || line["decided_by"] != "second/m-second" {
		t.Errorf("log line %v: want the fallback to second/m-second", line)
	}
}

type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

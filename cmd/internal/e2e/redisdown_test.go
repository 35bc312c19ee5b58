package e2e

import (
	"fmt"
	"net"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/cmd/internal/kinds"
	"github.com/arbiterhq/arbiter/config"
	"github.com/arbiterhq/arbiter/llm/llmtest"
	"github.com/arbiterhq/arbiter/server"
	"github.com/arbiterhq/arbiter/server/servertest"
)

// redisPort is a free loopback port for a private redis-server; it skips
// the test where redis-server is not installed.
func redisPort(t *testing.T) int {
	t.Helper()
	needCommand(t, "redis-server")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startRedis runs a private redis-server on port (from redisPort).
func startRedis(t *testing.T, port int) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("redis-server", "--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for range 100 {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			c.Close()
			return cmd
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("redis-server did not start")
	return nil
}

// TestRedisDownFailsClosed: with the Redis store unreachable, a message is
// refused with a retryable 503 and nothing runs; once Redis is back, the
// retry with the same message id is processed, once.
func TestRedisDownFailsClosed(t *testing.T) {
	port := redisPort(t)
	redis := startRedis(t, port)

	model := llmtest.NewServer(llmtest.ServerConfig{})
	defer model.Close()
	yaml := fmt.Sprintf(`store: {kind: redis, url: "redis://127.0.0.1:%d/0", lock_wait: 2s}
journal: {kind: sqlite, path: %q}
models:
  - {name: fake, kind: openai, base_url: %q, model: m, api_key: sk-x}
tenants:
  - id: acme
    roles: {owner: {tools: ["*"]}}
    users:
      - {id: u, name: U, role: owner, keys: [{token: "k-user-0001", scopes: [read]}]}
`, port, filepath.Join(t.TempDir(), "journal.db"), model.URL)
	cfg, err := config.Parse(strings.NewReader(yaml), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	a, err := server.Build(cfg, kinds.All(), server.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	api := httptest.NewServer(a.HTTP)
	defer api.Close()
	e := &servertest.Server{T: t, Server: a, API: api, Model: model}

	_ = redis.Process.Kill()
	_ = redis.Wait()
	msg := `{"conversation_id":"c1","message_id":"m1","text":"привет"}`
	status, body := e.Post("k-user-0001", msg)
	if status != 503 || model.Count() != 0 {
		t.Fatalf("with Redis down: %d %v, %d model calls; want 503 and none", status, body, model.Count())
	}

	redis = startRedis(t, port)
	defer func() { _ = redis.Process.Kill(); _ = redis.Wait() }()
	model.Enqueue(llmtest.HTTPReply{Content: `{"say":"Привет!","tool":null,"args":null,"done":false,"newTopic":false,"buttons":[]}`})
	var ok bool
	for range 50 { // the store reconnects on its own
		if status, body = e.Post("k-user-0001", msg); status == 200 {
			ok = true
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !ok || body["say"] != "Привет!" || body["duplicate"] != false {
		t.Fatalf("after Redis returned: %d %v", status, body)
	}
	if status, body = e.Post("k-user-0001", msg); status != 200 || body["duplicate"] != true || model.Count() != 1 {
		t.Errorf("redelivery: %d %v, %d model calls; want the first reply, marked duplicate, and one call", status, body, model.Count())
	}
}

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/arbiterhq/arbiter/config"
	"github.com/arbiterhq/arbiter/llm/llmtest"
	"github.com/arbiterhq/arbiter/server"
	"github.com/arbiterhq/arbiter/server/servertest"
)

// capture is a fake model that answers every router call with nothing and
// every answer with words, and keeps the router's requests as they came
// over the wire.
type capture struct {
	mu     sync.Mutex
	routes []*llmtest.ChatRequest
}

func (c *capture) respond(r *llmtest.ChatRequest) llmtest.HTTPReply {
	for _, t := range r.Tools {
		if t.Function.Name == "respond" {
			return llmtest.HTTPReply{ToolCalls: []llmtest.WireToolCall{{Name: "respond", Arguments: `{"text":"Понятно."}`}}}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.routes = append(c.routes, r)
	if strings.Contains(r.Messages[len(r.Messages)-1].Content, "пост") {
		return llmtest.HTTPReply{ToolCalls: []llmtest.WireToolCall{{Name: "create_post_draft", Arguments: `{"topic":"осень"}`}}}
	}
	return llmtest.HTTPReply{Content: "no tool"}
}

// serveExample builds the server of arbiter.yaml as it is, over model.
func serveExample(t *testing.T, model *capture) *servertest.Server {
	srv := llmtest.NewServer(llmtest.ServerConfig{Respond: model.respond})
	t.Cleanup(srv.Close)
	raw, err := os.ReadFile("arbiter.yaml")
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"OPENAI_BASE_URL": srv.URL, "OPENAI_API_KEY": "sk-test"}
	cfg, err := config.Parse(strings.NewReader(string(raw)), func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	cfg.Store.Path = filepath.Join(t.TempDir(), "router.db")
	s, err := server.Build(cfg, kinds(), server.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return &servertest.Server{T: t, Server: s, API: servertest.Serve(t, s), Model: srv}
}

// The router's own parameters, as its model call sends them: temperature
// 0, at most 500 tokens, tool_choice auto, the last 6 messages of the
// conversation after its instructions and its view of the moment — and,
// after a draft was shown, that view says so, while the tools that
// publish a draft are never offered to it.
func TestRouterRequest(t *testing.T) {
	model := &capture{}
	e := serveExample(t, model)
	for i := 1; i <= 5; i++ {
		if status, _ := e.Post("k-router-01", fmt.Sprintf(`{"conversation_id":"p","text":"сообщение %d"}`, i)); status != 200 {
			t.Fatalf("message %d: status %d", i, status)
		}
	}
	e.Post("k-router-01", `{"conversation_id":"p","text":"напиши пост про осень"}`)
	e.Post("k-router-01", `{"conversation_id":"p","text":"сообщение 7"}`)

	model.mu.Lock()
	defer model.mu.Unlock()
	if len(model.routes) != 7 {
		t.Fatalf("%d router calls, want 7", len(model.routes))
	}
	r := model.routes[6]
	if r.Temperature == nil || *r.Temperature != 0 {
		t.Errorf("temperature %v, want 0 sent", r.Temperature)
	}
	if r.MaxTokens == nil || *r.MaxTokens != 500 {
		t.Errorf("max_tokens %v, want 500", r.MaxTokens)
	}
	if string(r.ToolChoice) != `"auto"` {
		t.Errorf("tool_choice %s, want \"auto\"", r.ToolChoice)
	}
	// The router's instructions, its context, then the conversation's
	// last 6 messages of the 13 there are by then.
	if n := len(r.Messages) - 2; n != 6 {
		t.Errorf("%d conversation messages sent to the router, want 6:\n%v", n, r.Messages)
	}
	if r.Messages[0].Role != "system" || !strings.Contains(r.Messages[1].Content, "<router_context>") {
		t.Errorf("the router's instructions and context are not first: %v", r.Messages[:2])
	}
	if last := r.Messages[len(r.Messages)-1]; last.Content != "сообщение 7" {
		t.Errorf("the newest message sent is %q", last.Content)
	}
	for _, m := range r.Messages[2:] {
		if m.Content == "сообщение 1" || m.Content == "сообщение 2" {
			t.Errorf("an old message reached the router: %q", m.Content)
		}
	}
	if !strings.Contains(r.Messages[1].Content, "draft shown: yes") || !strings.Contains(model.routes[5].Messages[1].Content, "draft shown: no") {
		t.Errorf("draft shown is not what the user sees:\nbefore: %s\nafter: %s", model.routes[5].Messages[1].Content, r.Messages[1].Content)
	}
	var offered []string
	for _, tl := range r.Tools {
		offered = append(offered, tl.Function.Name)
	}
	for _, name := range []string{"publish_post", "publish_sell_card"} {
		if slices.Contains(offered, name) {
			t.Errorf("%s is offered to the router: %v", name, offered)
		}
	}
	for _, name := range []string{"create_post_draft", "page_stats", "site_visits", "ad_revenue", "counter_settings", "use_skill"} {
		if !slices.Contains(offered, name) {
			t.Errorf("%s is not offered to the router: %v", name, offered)
		}
	}
}

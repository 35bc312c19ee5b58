package server_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/config"
	"github.com/arbiterhq/arbiter/llm/llmtest"
	"github.com/arbiterhq/arbiter/server"
	"github.com/arbiterhq/arbiter/server/servertest"
)

func interviewYAML(modelURL string) string {
	return `models:
  - {name: fake, kind: openai, protocol: tools, base_url: "` + modelURL + `", model: m, api_key: sk-x}
assistants:
  iv: {mode: interview, prompt: "Ты — эксперт-исполнитель."}
tenants:
  - id: acme
    language: ru
    assistant: iv
    roles: {user: {tools: []}}
    users:
      - {id: anna, role: user, keys: [{token: k-anna-01, scopes: [read]}]}
      - {id: olga, role: user, keys: [{token: k-audit-01, scopes: [read, "turns:read_all"]}]}
`
}

func askReply(id, question string, options ...string) llmtest.HTTPReply {
	args := `{"question":"` + question + `","reasoning":"internal","options":["` + strings.Join(options, `","`) + `"]}`
	return llmtest.HTTPReply{ToolCalls: []llmtest.WireToolCall{{ID: id, Name: "ask_user", Arguments: args}}}
}

// Over the wire: three questions with tool_choice "required", then the
// request that names deliver_final_result, and the result in "final".
func TestInterviewOverHTTP(t *testing.T) {
	model := llmtest.NewServer(llmtest.ServerConfig{})
	t.Cleanup(model.Close)
	e := servertest.New(t, interviewYAML(model.URL), server.Builtin(), model, func(string) string { return "" })
	model.Enqueue(
		askReply("q1", "Какой стек?", "PHP", "Go"),
		askReply("q2", "Какая база?"),
		askReply("q3", "Какие сроки?"),
		llmtest.HTTPReply{ToolCalls: []llmtest.WireToolCall{{ID: "f", Name: "deliver_final_result", Arguments: `{"content":"План сайта: …","confidence_score":0.6}`}}},
	)
	status, body := e.Post("k-anna-01", `{"conversation_id":"c1","text":"сделай мне сайт"}`)
	if status != 200 || body["say"] != "Какой стек?" || len(body["buttons"].([]any)) != 2 || strings.Contains(toJSON(body), "internal") {
		t.Fatalf("first question: %d %v", status, body)
	}
	for _, answer := range []string{"Go", "Postgres", "месяц"} {
		status, body = e.Post("k-anna-01", `{"conversation_id":"c1","text":"`+answer+`"}`)
		if status != 200 {
			t.Fatalf("answer %s: %d %v", answer, status, body)
		}
	}
	final, _ := body["final"].(map[string]any)
	if final == nil || final["content"] != "План сайта: …" || final["confidence_score"] != 0.6 || body["say"] != "План сайта: …" {
		t.Fatalf("final: %v", body)
	}
	reqs := model.Requests()
	for i, want := range []string{`"required"`, `"required"`, `"required"`, `{"type":"function","function":{"name":"deliver_final_result"}}`} {
		if got := string(reqs[i].ToolChoice); got != want {
			t.Errorf("request %d tool_choice = %s, want %s", i+1, got, want)
		}
	}
	if last := reqs[3].Messages[len(reqs[3].Messages)-1]; last.Role != "tool" || last.ToolCallID != "q3" || last.Content != "месяц" {
		t.Errorf("the third answer went as %+v", last)
	}
}

// A restart between questions loses nothing: the next process continues
// the interview from the store.
func TestInterviewSurvivesARestart(t *testing.T) {
	model := llmtest.NewServer(llmtest.ServerConfig{})
	t.Cleanup(model.Close)
	dir := t.TempDir()
	start := func() *servertest.Server {
		cfg, err := config.Parse(strings.NewReader(interviewYAML(model.URL)), func(string) string { return "" })
		if err != nil {
			t.Fatal(err)
		}
		cfg.Store.Path = filepath.Join(dir, "arbiter.db")
		s, err := server.Build(cfg, server.Builtin(), server.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return &servertest.Server{T: t, Server: s, API: servertest.Serve(t, s), Model: model}
	}
	first := start()
	model.Enqueue(askReply("q1", "Какую версию Laravel вы используете?", "Laravel 10", "Laravel 11", "Не знаю"))
	status, body := first.Post("k-anna-01", `{"conversation_id":"c1","text":"оптимизируй функцию"}`)
	if status != 200 || body["say"] != "Какую версию Laravel вы используете?" {
		t.Fatalf("question: %d %v", status, body)
	}
	pressed := body["buttons"].([]any)[1].(map[string]any)["value"].(string)
	first.API.Close()
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}

	second := start()
	t.Cleanup(func() { second.Close() })
	model.Enqueue(llmtest.HTTPReply{ToolCalls: []llmtest.WireToolCall{{ID: "f", Name: "deliver_final_result", Arguments: `{"content":"Готово для Laravel 11","confidence_score":0.9}`}}})
	status, body = second.Post("k-anna-01", `{"conversation_id":"c1","button":"`+pressed+`"}`)
	if status != 200 || body["say"] != "Готово для Laravel 11" {
		t.Fatalf("after the restart: %d %v", status, body)
	}
	msgs := model.Requests()[1].Messages
	if len(msgs) != 4 || msgs[1].Content != "оптимизируй функцию" || msgs[2].ToolCalls[0].ID != "q1" || msgs[3].ToolCallID != "q1" || msgs[3].Content != "Laravel 11" {
		t.Errorf("the restarted process sent %+v", msgs)
	}
}

// The interviewer's reasoning is never readable with the interviewed
// user's own key: their turn's record says it is hidden; a key with
// turns:read_all reads it.
func TestInterviewReasoningHiddenFromTheUser(t *testing.T) {
	model := llmtest.NewServer(llmtest.ServerConfig{})
	t.Cleanup(model.Close)
	e := servertest.New(t, interviewYAML(model.URL), server.Builtin(), model, func(string) string { return "" })
	model.Enqueue(askReply("q1", "Какой стек?", "PHP", "Go"))
	status, body := e.Post("k-anna-01", `{"conversation_id":"c1","text":"сделай мне сайт"}`)
	if status != 200 || body["say"] != "Какой стек?" {
		t.Fatalf("question: %d %v", status, body)
	}
	turnID := body["turn_id"].(string)
	status, own := e.Do("GET", "/v1/turns/"+turnID, "k-anna-01", "")
	iv, _ := own["interview"].(map[string]any)
	if status != 200 || iv == nil || iv["reasoning_hidden"] != true || strings.Contains(toJSON(own), "internal") {
		t.Errorf("the user's own key reads %d %v", status, own)
	}
	status, audit := e.Do("GET", "/v1/turns/"+turnID, "k-audit-01", "")
	iv, _ = audit["interview"].(map[string]any)
	if status != 200 || iv == nil || iv["reasoning"] != "internal" || iv["reasoning_hidden"] != nil {
		t.Errorf("a turns:read_all key reads %d %v", status, audit)
	}
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

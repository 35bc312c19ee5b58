package server_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/llm/llmtest"
	"github.com/arbiterhq/arbiter/server"
	"github.com/arbiterhq/arbiter/server/servertest"
	"github.com/arbiterhq/arbiter/store/storetest"
)

// An interview waits for its answer as long as its assistant's policy
// says (a day), not the memory's 30 minutes: on the interviewer example's
// own configuration, over the HTTP API, an answer 20 hours after the
// question continues the interview; one more than a day after the next
// question starts a new one.
func TestInterviewResumesAfter20Hours(t *testing.T) {
	yaml, err := os.ReadFile(filepath.Join("..", "examples", "interviewer", "arbiter.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	model := llmtest.NewServer(llmtest.ServerConfig{})
	t.Cleanup(model.Close)
	clock := storetest.NewClock(time.Date(2026, 11, 30, 18, 0, 0, 0, time.UTC))
	env := map[string]string{"OPENAI_BASE_URL": model.URL, "OPENAI_API_KEY": "sk-test"}
	e := servertest.NewWith(t, string(yaml), server.Builtin(), model,
		server.Options{Getenv: func(k string) string { return env[k] }, Now: clock.Now})
	model.Enqueue(
		askReply("q1", "Какую версию Laravel вы используете?", "Laravel 10", "Laravel 11"),
		askReply("q2", "Какая база данных?", "MySQL", "PostgreSQL"),
		askReply("q3", "Что оптимизировать?"),
	)
	post := func(text string) map[string]any {
		t.Helper()
		status, body := e.Post("k-interview-01", `{"conversation_id":"c1","text":"`+text+`"}`)
		if status != 200 {
			t.Fatalf("%q: %d %v", text, status, body)
		}
		return body
	}
	if body := post("оптимизируй функцию"); body["say"] != "Какую версию Laravel вы используете?" {
		t.Fatalf("first question: %v", body)
	}
	clock.Advance(20 * time.Hour)
	if body := post("Laravel 11"); body["say"] != "Какая база данных?" {
		t.Fatalf("the answer 20 hours later: %v", body)
	}
	reqs := model.Requests()
	second := reqs[1].Messages
	if last := second[len(second)-1]; last.Role != "tool" || last.ToolCallID != "q1" || last.Content != "Laravel 11" {
		t.Errorf("the answer went as %+v: the interview did not continue", last)
	}
	if first := second[1]; first.Role != "user" || first.Content != reqs[0].Messages[1].Content {
		t.Errorf("the continued interview starts with %+v, not the request", first)
	}

	clock.Advance(24*time.Hour + time.Minute)
	post("PostgreSQL")
	third := model.Requests()[2].Messages
	if len(third) != 2 || third[1].Role != "user" {
		t.Errorf("an answer past the interview's day went as %d messages (%+v); want a new interview", len(third), third)
	}
}

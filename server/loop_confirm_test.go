package server_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/llm/llmtest"
	"github.com/arbiterhq/arbiter/server/servertest"
)

// A loop task goes on after the user's yes. Three writes the model
// proposes at once are one confirmation listing every call; the yes runs
// each exactly once under its own key, and the model reads their results
// as tool results. It then reads the board, and its next write waits for
// a yes of its own, which runs it once; the model answers from what ran.
func TestLoopTaskGoesOnAfterConfirmedWrites(t *testing.T) {
	model, e := newDesk(t, `{mode: loop, prompt: You keep the team's board in order., tools: ["*"]}`,
		`[read, "write:safe", "write:full"]`, `{columns: [Inbox, Doing, Done], confirm: {create_task: always, complete_task: always}}`)
	create := func(id, title string) llmtest.WireToolCall {
		return llmtest.WireToolCall{ID: id, Name: "create_task", Arguments: `{"title":"` + title + `","assignee":"Dmitry"}`}
	}
	model.Enqueue(llmtest.HTTPReply{ToolCalls: []llmtest.WireToolCall{create("call_a", "Alpha"), create("call_b", "Beta"), create("call_c", "Gamma")}})
	status, body := e.Post("k-dmitry", `{"conversation_id":"c1","message_id":"m1","text":"Create tasks Alpha, Beta and Gamma for me, then close Alpha."}`)
	say, _ := body["say"].(string)
	if status != 200 || body["pending"] == nil || !strings.Contains(say, "Please confirm 3 actions:") ||
		!strings.Contains(say, "1. ") || !strings.Contains(say, "Alpha") || !strings.Contains(say, "Beta") || !strings.Contains(say, "Gamma") ||
		len(body["executed"].([]any)) != 0 {
		t.Fatalf("the batch: %d %v", status, body)
	}

	// The yes: three creations, then the task goes on.
	model.Enqueue(
		llmtest.HTTPReply{ToolCalls: []llmtest.WireToolCall{{ID: "call_d", Name: "list_my_tasks", Arguments: `{}`}}},
		llmtest.HTTPReply{ToolCalls: []llmtest.WireToolCall{{ID: "call_e", Name: "complete_task", Arguments: `{"card":"Alpha"}`}}},
	)
	status, body = e.Post("k-dmitry", `{"conversation_id":"c1","message_id":"m2","text":"yes"}`)
	rec := turnRecord(t, e, body)
	keys := map[string]string{}
	for _, x := range rec.Executed {
		if x.Tool == "create_task" {
			keys[x.IdempotencyKey] = x.Status
		}
	}
	if status != 200 || len(keys) != 3 || body["pending"] == nil || !strings.Contains(body["say"].(string), "Please confirm: ") {
		t.Fatalf("after the yes: %d %v\nexecuted %+v", status, body, rec.Executed)
	}
	for k, st := range keys {
		if st != "ok" || !strings.HasPrefix(k, "pending:") {
			t.Errorf("creation under key %q: %s", k, st)
		}
	}
	reqs := model.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests, want 3: the task did not go on", len(reqs))
	}
	// The confirmed calls, as the model made them, answered by their
	// results after the user's yes.
	msgs := reqs[1].Messages
	if len(msgs) < 4 {
		t.Fatalf("request after the yes: %+v", msgs)
	}
	asked, answers := msgs[len(msgs)-4], msgs[len(msgs)-3:]
	if asked.Role != "assistant" || len(asked.ToolCalls) != 3 {
		t.Fatalf("the confirmed calls in the transcript: %+v", asked)
	}
	for i, title := range []string{"Alpha", "Beta", "Gamma"} {
		c, r := asked.ToolCalls[i], answers[i]
		if c.Function.Name != "create_task" || !strings.Contains(c.Function.Arguments, title) || r.Role != "tool" || r.ToolCallID != c.ID ||
			!strings.Contains(r.Content, `"status":"ok"`) || !strings.Contains(r.Content, `"title":"`+title+`"`) {
			t.Errorf("call %d: %+v answered by %+v", i+1, c, r)
		}
	}
	// The board holds each task once.
	last := lastMessage(reqs[2])
	if last.Role != "tool" || last.ToolCallID != "call_d" {
		t.Errorf("the read's result as the model got it: %+v", last)
	}
	for _, title := range []string{"Alpha", "Beta", "Gamma"} {
		if n := strings.Count(last.Content, `"title":"`+title+`"`); n != 1 {
			t.Errorf("%s is on the board %d times: %s", title, n, last.Content)
		}
	}

	// The same yes delivered again is the same turn: nothing runs twice.
	before := model.Count()
	status, again := e.Post("k-dmitry", `{"conversation_id":"c1","message_id":"m2","text":"yes"}`)
	if status != 200 || again["duplicate"] != true || again["turn_id"] != body["turn_id"] || model.Count() != before {
		t.Fatalf("the yes redelivered: %d %v", status, again)
	}

	// The second write waited; its yes runs it once, and the model answers.
	model.Enqueue(llmtest.HTTPReply{Content: "Alpha, Beta and Gamma are on the board; Alpha is done."})
	status, body = e.Post("k-dmitry", `{"conversation_id":"c1","message_id":"m3","text":"yes"}`)
	rec = turnRecord(t, e, body)
	if status != 200 || body["say"] != "Alpha, Beta and Gamma are on the board; Alpha is done." || body["pending"] != nil ||
		len(rec.Executed) != 1 || rec.Executed[0].Tool != "complete_task" || rec.Executed[0].Status != "ok" || keys[rec.Executed[0].IdempotencyKey] != "" {
		t.Fatalf("the second write: %d %v\nexecuted %+v", status, body, rec.Executed)
	}
	if n := model.Count(); n != 4 {
		t.Errorf("%d model requests in all, want 4", n)
	}

	// A third yes has nothing to run.
	status, body = e.Post("k-dmitry", `{"conversation_id":"c1","message_id":"m4","text":"yes"}`)
	if status != 200 || len(body["executed"].([]any)) != 0 || model.Count() != 4 {
		t.Errorf("a yes with nothing pending: %d %v", status, body)
	}
}

type execRecord struct {
	Tool           string `json:"tool"`
	IdempotencyKey string `json:"idempotency_key"`
	Status         string `json:"status"`
}

type turnRec struct {
	Executed []execRecord `json:"executed"`
}

func turnRecord(t *testing.T, e *servertest.Server, body map[string]any) turnRec {
	t.Helper()
	id, _ := body["turn_id"].(string)
	_, rec := e.Do("GET", "/v1/turns/"+id, "k-dmitry", "")
	raw, _ := json.Marshal(rec)
	var out turnRec
	_ = json.Unmarshal(raw, &out)
	return out
}

func lastMessage(r *llmtest.ChatRequest) llmtest.ChatMessage { return r.Messages[len(r.Messages)-1] }

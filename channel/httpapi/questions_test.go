package httpapi

import (
	"context"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/arbiterhq/arbiter/chat"
)

// askingHandler is a turn that asks its user one question and replies
// with the answer.
type askingHandler struct{ recorder }

func (h *askingHandler) HandleTurn(ctx context.Context, in chat.Inbound) (chat.Outbound, error) {
	live := in.Live
	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	a, err := live.Ask(actx, chat.Question{Text: "Разрешить?", FreeText: true,
		Choices: []chat.Button{{Label: "Да", Value: "accept"}, {Label: "Нет", Value: "decline"}}})
	if err != nil {
		return chat.Outbound{Say: "no answer: " + err.Error()}, nil
	}
	return chat.Outbound{Say: "answer: " + a.Choice + a.Text}, nil
}

// TestQuestionsWhileATurnWaits: the client sees the open question of its
// running turn, answers it, and the turn's reply carries the answer;
// other users and malformed answers are refused. In a bubble, so the
// question is open once every goroutine there is blocked (synctest.Wait).
func TestQuestionsWhileATurnWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newTestAPI(t, nil)
		s.cfg.Handler = &askingHandler{}
		replies := make(chan map[string]any, 1)
		go func() {
			_, body := serve(t, s, http.MethodPost, "/v1/messages", "k-alice-123", `{"conversation_id":"c1","text":"run"}`)
			replies <- body
		}()
		synctest.Wait()
		answerTheQuestion(t, s, replies)
	})
}

// answerTheQuestion checks what the asking turn's user, and only that
// user, sees of its question, and answers it.
func answerTheQuestion(t *testing.T, s *Server, replies <-chan map[string]any) {
	status, body := serve(t, s, http.MethodGet, "/v1/questions", "k-alice-123", "")
	qs, _ := body["questions"].([]any)
	if status != http.StatusOK || len(qs) != 1 {
		t.Fatalf("GET /v1/questions = %d %v, want the one open question", status, body)
	}
	q := qs[0].(map[string]any)
	qid := q["id"].(string)
	if q["question"].(map[string]any)["text"] != "Разрешить?" {
		t.Fatalf("question = %v", q)
	}
	if _, body := serve(t, s, http.MethodGet, "/v1/questions", "k-bob-12345", ""); len(body["questions"].([]any)) != 0 {
		t.Errorf("another user sees the question: %v", body)
	}
	if _, body := serve(t, s, http.MethodGet, "/v1/questions?conversation_id=c2", "k-alice-123", ""); len(body["questions"].([]any)) != 0 {
		t.Errorf("another conversation's list shows the question: %v", body)
	}
	if _, body := serve(t, s, http.MethodGet, "/v1/questions?conversation_id=c1", "k-alice-123", ""); len(body["questions"].([]any)) != 1 ||
		body["questions"].([]any)[0].(map[string]any)["conversation_id"] != "c1" {
		t.Errorf("the conversation's list = %v", body)
	}
	for _, tc := range []struct {
		token, body string
		status      int
	}{
		{"", `{"choice":"accept"}`, http.StatusUnauthorized},
		{"k-bob-12345", `{"choice":"accept"}`, http.StatusNotFound},
		{"k-alice-123", `{"choice":"maybe"}`, http.StatusBadRequest},
		{"k-alice-123", `{"choice":"accept","text":"x"}`, http.StatusBadRequest},
		{"k-alice-123", `{"choice":"accept","extra":1}`, http.StatusBadRequest},
		{"k-alice-123", `not json`, http.StatusBadRequest},
	} {
		if status, body := serve(t, s, http.MethodPost, "/v1/questions/"+qid, tc.token, tc.body); status != tc.status {
			t.Errorf("answer %s as %q = %d %v, want %d", tc.body, tc.token, status, body, tc.status)
		}
	}
	if status, body := serve(t, s, http.MethodPost, "/v1/questions/"+qid, "k-alice-123", `{"choice":"accept"}`); status != http.StatusOK {
		t.Fatalf("answer = %d %v", status, body)
	}
	select {
	case body := <-replies:
		if body["say"] != "answer: accept" {
			t.Errorf("reply = %v", body)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the turn never replied")
	}
	if status, _ := serve(t, s, http.MethodPost, "/v1/questions/"+qid, "k-alice-123", `{"choice":"decline"}`); status != http.StatusNotFound {
		t.Errorf("a second answer = %d, want 404", status)
	}
}

package telegram

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/arbiterhq/arbiter/chat"
)

// pressUpdate is a press of a button with data in the private chat of
// userID.
func pressUpdate(updateID, userID int64, queryID, data string) string {
	return mustJSON(map[string]any{"update_id": updateID, "callback_query": map[string]any{
		"id": queryID, "chat_instance": "42", "data": data,
		"message": map[string]any{"message_id": 5001, "date": 1714557801, "text": "?",
			"from": map[string]any{"id": 7000000001, "is_bot": true, "first_name": "Arbiter"},
			"chat": map[string]any{"id": userID, "type": "private"}},
		"from": map[string]any{"id": userID, "is_bot": false, "first_name": "U", "language_code": "ru"},
	}})
}

// questionMessage waits for the question's message and returns the
// callback data of its buttons.
func questionMessage(t *testing.T, h *harness, text string) []string {
	t.Helper()
	var call apiCall
	waitFor(t, "the question "+text, func() bool {
		for _, c := range h.api.callsOf("sendMessage") {
			if s, _ := c.params["text"].(string); strings.Contains(s, text) {
				call = c
				return true
			}
		}
		return false
	})
	var data []string
	kb, _ := call.params["reply_markup"].(map[string]any)
	rows, _ := kb["inline_keyboard"].([]any)
	for _, row := range rows {
		for _, b := range row.([]any) {
			data = append(data, b.(map[string]any)["callback_data"].(string))
		}
	}
	return data
}

// TestLiveProgressAndQuestions: a turn's tool progress is one status
// message edited in place; its questions are answered by a button press
// or a typed message that reach the waiting turn at once instead of
// queueing behind it; a press on a closed question is told so.
func TestLiveProgressAndQuestions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		answers := make(chan []chat.Answer, 1)
		h.h.reply = func(in chat.Inbound) chat.Outbound { return chat.Outbound{Say: "готово"} }
		handler := &liveHandler{recorder: h.h, answers: answers}
		h.ch.cfg.Handler = handler
		h.start()

		h.deliver(textUpdate(1, 1001, 1001, 10, "запусти долгую операцию"))
		waitFor(t, "the status message", func() bool { return len(h.api.callsOf("sendMessage")) >= 1 })
		data := questionMessage(t, h, "Разрешить?")
		if len(data) != 2 || !strings.HasPrefix(data[0], questionPrefix) {
			t.Fatalf("question buttons = %v", data)
		}
		h.deliver(pressUpdate(2, 1002, "olga-press", data[0])) // another user: not their question
		h.deliver(pressUpdate(3, 1001, "ivan-press", data[0]))
		questionMessage(t, h, "Как назвать?")
		h.deliver(textUpdate(4, 1001, 1001, 11, "Отчёт за ноябрь"))

		var got []chat.Answer
		select {
		case got = <-answers:
		case <-time.After(5 * time.Second):
			t.Fatal("the turn never got its answers")
		}
		if len(got) != 2 || got[0].Choice != "accept" || got[1].Text != "Отчёт за ноябрь" {
			t.Fatalf("answers = %+v", got)
		}
		waitFor(t, "the reply", func() bool {
			for _, s := range h.api.sentTexts() {
				if s == "готово" {
					return true
				}
			}
			return false
		})
		// The answers were not queued as turns of their own.
		if n := len(h.h.inbounds()); n != 1 {
			t.Errorf("%d turns ran, want 1", n)
		}
		// Progress: one status message, then edits in place, the last one
		// showing the final state.
		var status []string
		for _, c := range h.api.callsOf("sendMessage") {
			if s, _ := c.params["text"].(string); strings.HasPrefix(s, "⏳") {
				status = append(status, s)
			}
		}
		edits := h.api.callsOf("editMessageText")
		if len(status) != 1 || len(edits) == 0 || edits[len(edits)-1].params["text"] != "⏳ Отчёт: 100% — done" {
			t.Errorf("status sent %v, edits %v", status, edits)
		}
		for _, c := range append(h.api.callsOf("sendMessage"), edits...) {
			if !previewOff(c) {
				t.Errorf("%s without link previews off: %v", c.method, c.params)
			}
		}
		// The presses were answered: Olga's as another user's button, Ivan's
		// silently;
		// the question keyboards were removed.
		for _, c := range h.api.callsOf("answerCallbackQuery") {
			switch c.params["callback_query_id"] {
			case "olga-press":
				if c.params["text"] != say("ru", txtForeignButton) {
					t.Errorf("Olga's press answered %v", c.params)
				}
			case "ivan-press":
				if c.params["text"] != nil {
					t.Errorf("Ivan's press answered %v", c.params)
				}
			}
		}
		if n := len(h.api.callsOf("editMessageReplyMarkup")); n != 2 {
			t.Errorf("%d keyboards removed, want 2", n)
		}
		// A late press of the closed question.
		h.deliver(pressUpdate(5, 1001, "late-press", data[1]))
		waitFor(t, "the late press answered", func() bool {
			for _, c := range h.api.callsOf("answerCallbackQuery") {
				if c.params["callback_query_id"] == "late-press" {
					return c.params["text"] == say("ru", txtQuestionClosed)
				}
			}
			return false
		})
	})
}

// liveHandler is a turn that reports progress and asks two questions.
type liveHandler struct {
	*recorder
	answers chan []chat.Answer
}

func (l *liveHandler) HandleTurn(ctx context.Context, in chat.Inbound) (chat.Outbound, error) {
	live := in.Live
	if live == nil {
		return chat.Outbound{}, context.Canceled
	}
	live.Progress(chat.Progress{Step: "Отчёт", Done: 1, Total: 4})
	time.Sleep(100 * time.Millisecond) // the first status goes out at once
	for i := 2; i <= 4; i++ {
		live.Progress(chat.Progress{Step: "Отчёт", Done: float64(i), Total: 4})
	}
	live.Progress(chat.Progress{Step: "Отчёт", Done: 4, Total: 4, Message: "done"})
	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	a1, err1 := live.Ask(actx, chat.Question{Text: "Разрешить?", Choices: []chat.Button{{Label: "Да", Value: "accept"}, {Label: "Нет", Value: "decline"}}})
	a2, err2 := live.Ask(actx, chat.Question{Text: "Как назвать?", FreeText: true, Choices: []chat.Button{{Label: "Отмена", Value: "cancel"}}})
	if err1 == nil && err2 == nil {
		l.answers <- []chat.Answer{a1, a2}
	}
	return l.recorder.HandleTurn(ctx, in)
}

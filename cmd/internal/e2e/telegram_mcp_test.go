package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/cmd/internal/kinds"
	"github.com/arbiterhq/arbiter/server/servertest"
	"github.com/arbiterhq/arbiter/store"
)

// TestTelegramMCPProgressAndQuestions runs the reference MCP server behind
// the Telegram channel: a long call's progress is one status message
// edited in place, and a server's elicitation is a message with buttons
// whose press reaches the waiting call — not a turn of its own.
func TestTelegramMCPProgressAndQuestions(t *testing.T) {
	tg := servertest.NewTelegram(t, kinds.All(), everythingTools(t, `        elicitation: true
        ask_timeout: 10s
        tools:
          trigger-*: {risk: read}
`))
	const from = `"from":{"id":1001,"is_bot":false,"first_name":"Иван","language_code":"ru"},"chat":{"id":1001,"first_name":"Иван","type":"private"},"date":1764400000`
	decide := tg.Decide

	decide("everything.trigger-long-running-operation", `{"duration":2.5,"steps":5}`)
	tg.Update(300, `"message":{"message_id":20,`+from+`,"text":"запусти долгую операцию"}`)
	sent := tg.WaitSent(2)
	if !strings.HasPrefix(sent[0], "⏳ ") || !strings.Contains(sent[1], "Long running operation completed") {
		t.Fatalf("sent %q", sent)
	}
	var statusID float64
	var edits []string
	for i, c := range tg.Bot.Calls() {
		switch {
		case c.Method == "sendMessage" && statusID == 0:
			statusID = float64(5000 + i + 1) // the fake numbers messages by call
		case c.Method == "editMessageText" && c.Body["message_id"] == statusID:
			edits = append(edits, fmt.Sprint(c.Body["text"]))
		}
	}
	if len(edits) == 0 || !strings.HasPrefix(edits[len(edits)-1], "⏳ ") {
		t.Errorf("status edits = %q", edits)
	}

	decide("everything.trigger-elicitation-request", `{}`)
	tg.Update(301, `"message":{"message_id":21,`+from+`,"text":"заполни форму"}`)
	sent = tg.WaitSent(3)
	if !strings.Contains(sent[2], "«everything»") || len(tg.Bot.LastKeyboard()) != 3 {
		t.Fatalf("question %q with keyboard %v", sent[2], tg.Bot.LastKeyboard())
	}
	decline := tg.Bot.LastKeyboard()[1]
	tg.Update(302, fmt.Sprintf(`"callback_query":{"id":"cb-q","from":{"id":1001,"is_bot":false,"first_name":"Иван"},"message":{"message_id":5003,"date":1764400001,"chat":{"id":1001,"type":"private"},"text":"..."},"chat_instance":"42","data":%q}`, decline))
	sent = tg.WaitSent(4)
	if !strings.Contains(sent[3], "decline") {
		t.Errorf("after declining: %q", sent[3])
	}
	turns, err := tg.Journal.(store.TurnLister).ListTurns(context.Background(), "acme", store.TurnFilter{})
	if err != nil || len(turns) != 2 {
		t.Errorf("%d turns journaled (%v), want 2: the press answered the waiting call", len(turns), err)
	}
}

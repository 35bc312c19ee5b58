package server_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/llm/llmtest"
	"github.com/arbiterhq/arbiter/server"
	"github.com/arbiterhq/arbiter/server/servertest"
)

// TestTelegramEndToEnd: a real update payload through the webhook, the
// model's proposal as an inline keyboard, the confirmation as a callback
// query, and the forwarded-link incident answered from the card with no
// model call.
func TestTelegramEndToEnd(t *testing.T) {
	tg := servertest.NewTelegram(t, server.Builtin(), `
tools:
  taskboard: {confirm: {create_task: always}}
`)
	a, api, bot, model, update, waitSent := tg.Server, tg.API, tg.Bot, tg.Model, tg.Update, tg.WaitSent
	const from = `"from":{"id":1001,"is_bot":false,"first_name":"Иван","last_name":"Петров","language_code":"ru"},"chat":{"id":1001,"first_name":"Иван","type":"private"},"date":1764400000`

	// A wrong secret is refused and nothing is processed.
	req, _ := http.NewRequest("POST", api.URL+"/telegram/webhook", strings.NewReader(`{"update_id":1,"message":{"message_id":1,`+from+`,"text":"hi"}}`))
	req.Header.Set("X-Telegram-Bot-Api-Secret-Token", "s3cret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Errorf("a prefix of the secret got %d, want 401", resp.StatusCode)
	}

	model.Enqueue(llmtest.HTTPReply{Content: `{"say":"","tool":"create_task","args":{"title":"Оплатить хостинг","description":"Счёт на 1200 ₽"},"done":false,"newTopic":false,"buttons":[]}`})
	update(200, `"message":{"message_id":10,`+from+`,"text":"Создай задачу оплатить хостинг"}`)
	sent := waitSent(1)
	if !strings.Contains(sent[0], "Создать задачу") || len(bot.LastKeyboard()) != 2 {
		t.Fatalf("confirmation: %q, keyboard %v", sent[0], bot.LastKeyboard())
	}
	confirm := bot.LastKeyboard()[0]
	update(201, fmt.Sprintf(`"callback_query":{"id":"cb1","from":{"id":1001,"is_bot":false,"first_name":"Иван"},"message":{"message_id":5001,"date":1764400001,"chat":{"id":1001,"type":"private"},"text":"..."},"chat_instance":"42","data":%q}`, confirm))
	sent = waitSent(2)
	if !strings.Contains(sent[1], "Создана задача «Оплатить хостинг»") {
		t.Fatalf("after the button: %q", sent[1])
	}
	cards, _ := a.Board.Cards(context.Background(), "acme")
	if len(cards) != 1 {
		t.Fatalf("%d cards", len(cards))
	}

	// The seed's incident: a question, then a forwarded card link.
	model.Enqueue(llmtest.HTTPReply{Content: `{"say":"О какой задаче речь?","tool":null,"args":null,"done":false,"newTopic":false,"buttons":[]}`})
	update(202, `"message":{"message_id":11,`+from+`,"text":"о чем эта задача"}`)
	waitSent(3)
	calls := model.Count()
	update(203, `"message":{"message_id":12,`+from+`,"forward_origin":{"type":"user","date":1764300000,"sender_user":{"id":2002,"is_bot":false,"first_name":"Ольга"}},"text":"`+cards[0].URL+`"}`)
	sent = waitSent(4)
	if !strings.Contains(sent[3], "Счёт на 1200 ₽") || model.Count() != calls {
		t.Errorf("forwarded link: %q, model calls %d -> %d", sent[3], calls, model.Count())
	}
}

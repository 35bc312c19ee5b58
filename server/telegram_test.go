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
	cards, _ := a.TestBoard().Cards(context.Background(), "acme")
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

// A button whose value is longer than Telegram's 64 bytes of callback_data
// (a 107-byte member name) reaches Telegram, like every suggested button,
// behind a short reference to its offer, and comes back, on the press, as
// the whole value.
func TestTelegramLongButtonSurvives(t *testing.T) {
	long := "Александра Константиновна Преображенская-Рождественская"
	tg := servertest.NewTelegram(t, server.Builtin(), `
tools:
  taskboard:
    confirm: {create_task: always}
    members:
      acme:
        - {id: alex1, name: Александра Константиновна Преображенская-Воскресенская}
        - {id: alex2, name: `+long+`}
`)
	bot, model, update, waitSent := tg.Bot, tg.Model, tg.Update, tg.WaitSent
	const from = `"from":{"id":1001,"is_bot":false,"first_name":"Иван","language_code":"ru"},"chat":{"id":1001,"first_name":"Иван","type":"private"},"date":1764400000`
	model.Enqueue(llmtest.HTTPReply{Content: `{"say":"","tool":"create_task","args":{"title":"Сверить договор","assignee":"Александра"},"done":false,"newTopic":false,"buttons":[]}`})
	update(300, `"message":{"message_id":30,`+from+`,"text":"Поставь Александре задачу сверить договор"}`)
	waitSent(1)
	keys := bot.LastKeyboard()
	if len(keys) != 2 {
		t.Fatalf("keyboard %v", keys)
	}
	for _, k := range keys {
		if len(k) > 64 || !strings.HasPrefix(k, "opt:") {
			t.Errorf("callback_data %q", k)
		}
	}
	model.Enqueue(llmtest.HTTPReply{Content: `{"say":"","tool":"create_task","args":{"title":"Сверить договор","assignee":"` + long + `"},"done":false,"newTopic":false,"buttons":[]}`})
	update(301, fmt.Sprintf(`"callback_query":{"id":"cb2","from":{"id":1001,"is_bot":false,"first_name":"Иван"},"message":{"message_id":5002,"date":1764400001,"chat":{"id":1001,"type":"private"},"text":"..."},"chat_instance":"42","data":%q}`, keys[1]))
	sent := waitSent(2)
	reqs := model.Requests()
	last := reqs[len(reqs)-1].Messages
	if got := fmt.Sprint(last[len(last)-1].Content); !strings.Contains(got, long) {
		t.Errorf("the press reached the model as %q", got)
	}
	if !strings.Contains(sent[1], long+" (alex2)") {
		t.Errorf("confirmation %q", sent[1])
	}
}

// A quick reply a model suggests whose value is a command reaches
// Telegram as a reference, and its press is the option's text for the
// model: "/reset" resets nothing.
func TestTelegramSuggestedCommandIsText(t *testing.T) {
	tg := servertest.NewTelegram(t, server.Builtin(), "")
	bot, model, update, waitSent := tg.Bot, tg.Model, tg.Update, tg.WaitSent
	const from = `"from":{"id":1001,"is_bot":false,"first_name":"Иван","language_code":"ru"},"chat":{"id":1001,"first_name":"Иван","type":"private"},"date":1764400000`
	model.Enqueue(llmtest.HTTPReply{Content: `{"say":"Что дальше?","tool":null,"args":null,"done":false,"newTopic":false,"buttons":[{"label":"Сбросить","value":"/reset"},{"label":"Да","value":"да"}]}`})
	update(400, `"message":{"message_id":40,`+from+`,"text":"помоги с задачами"}`)
	waitSent(1)
	keys := bot.LastKeyboard()
	if len(keys) != 2 || !strings.HasPrefix(keys[0], "opt:") || !strings.HasPrefix(keys[1], "opt:") {
		t.Fatalf("keyboard %v: want references, not the values", keys)
	}
	model.Enqueue(llmtest.HTTPReply{Content: `{"say":"Вы выбрали сброс — что именно сбросить?","tool":null,"args":null,"done":false,"newTopic":false,"buttons":[]}`})
	calls := model.Count()
	update(401, fmt.Sprintf(`"callback_query":{"id":"cb4","from":{"id":1001,"is_bot":false,"first_name":"Иван"},"message":{"message_id":5004,"date":1764400001,"chat":{"id":1001,"type":"private"},"text":"..."},"chat_instance":"42","data":%q}`, keys[0]))
	sent := waitSent(2)
	if model.Count() != calls+1 || !strings.Contains(sent[1], "Вы выбрали сброс") {
		t.Fatalf("the press: model calls %d -> %d, sent %q", calls, model.Count(), sent[1])
	}
	reqs := model.Requests()
	msgs := reqs[len(reqs)-1].Messages
	if got := msgs[len(msgs)-1].Content; !strings.Contains(got, "/reset") || !strings.Contains(fmt.Sprint(msgs), "помоги с задачами") {
		t.Errorf("the model got %q after a history of %d messages: the press was not the option's text, or the memory was reset", got, len(msgs))
	}
}

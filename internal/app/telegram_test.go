package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/llm/llmtest"
	"github.com/arbiterhq/arbiter/store"
)

// botAPI is a loopback fake of the Telegram Bot API: it records the calls
// the bot makes and answers them in the documented shape.
type botAPI struct {
	mu    sync.Mutex
	calls []botCall
}

type botCall struct {
	Method string
	Body   map[string]any
}

func (b *botAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	method := r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:]
	var body map[string]any
	raw, _ := io.ReadAll(r.Body)
	_ = json.Unmarshal(raw, &body)
	b.mu.Lock()
	b.calls = append(b.calls, botCall{method, body})
	n := len(b.calls)
	b.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch method {
	case "getMe":
		fmt.Fprint(w, `{"ok":true,"result":{"id":777,"is_bot":true,"first_name":"Arbiter","username":"arbiter_test_bot"}}`)
	case "sendMessage":
		fmt.Fprintf(w, `{"ok":true,"result":{"message_id":%d,"date":1764400000,"chat":{"id":1001,"type":"private"},"text":"ok"}}`, 5000+n)
	default:
		fmt.Fprint(w, `{"ok":true,"result":true}`)
	}
}

func (b *botAPI) sent() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, c := range b.calls {
		if c.Method == "sendMessage" {
			out = append(out, fmt.Sprint(c.Body["text"]))
		}
	}
	return out
}

func (b *botAPI) lastKeyboard() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := len(b.calls) - 1; i >= 0; i-- {
		c := b.calls[i]
		if c.Method != "sendMessage" || c.Body["reply_markup"] == nil {
			continue
		}
		var values []string
		rows, _ := c.Body["reply_markup"].(map[string]any)["inline_keyboard"].([]any)
		for _, row := range rows {
			for _, btn := range row.([]any) {
				values = append(values, fmt.Sprint(btn.(map[string]any)["callback_data"]))
			}
		}
		return values
	}
	return nil
}

// telegramE2E is the app with the Telegram channel in webhook mode against
// a fake Bot API, one user (Иван, Telegram id 1001) and a fake model.
type telegramE2E struct {
	*e2e
	bot *botAPI
}

// newTelegramE2E builds and runs it with tools, a YAML "tools:" section.
func newTelegramE2E(t *testing.T, tools string) *telegramE2E {
	t.Helper()
	bot := &botAPI{}
	botSrv := httptest.NewServer(bot)
	t.Cleanup(botSrv.Close)
	model := llmtest.NewServer(llmtest.ServerConfig{})
	t.Cleanup(model.Close)
	yaml := fmt.Sprintf(`models:
  - {name: fake, kind: openai, base_url: %q, model: m, api_key: sk-x}
tenants:
  - id: acme
    language: ru
    roles: {owner: {tools: ["*"]}}
    users:
      - {id: ivan, name: Иван Петров, role: owner, telegram_ids: [1001]}
channels:
  telegram: {token_env: TG_TOKEN, mode: webhook, secret_token_env: TG_SECRET, api_base_url: %q, public_url: "https://bot.example", tenant: acme}
`, model.URL, botSrv.URL) + tools
	env := map[string]string{"TG_TOKEN": "123456:TEST-token", "TG_SECRET": "s3cret-value"}
	e := newE2EWith(t, yaml, model, func(k string) string { return env[k] })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); e.app.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return &telegramE2E{e2e: e, bot: bot}
}

// update posts one update to the webhook with the right secret.
func (tg *telegramE2E) update(id int, msg string) {
	tg.t.Helper()
	body := fmt.Sprintf(`{"update_id":%d,%s}`, id, msg)
	req, _ := http.NewRequest("POST", tg.api.URL+"/telegram/webhook", strings.NewReader(body))
	req.Header.Set("X-Telegram-Bot-Api-Secret-Token", "s3cret-value")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tg.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		tg.t.Fatalf("webhook answered %d", resp.StatusCode)
	}
}

// waitSent waits until the bot sent at least n messages and returns them.
func (tg *telegramE2E) waitSent(n int) []string {
	tg.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if s := tg.bot.sent(); len(s) >= n {
			return s
		}
		time.Sleep(20 * time.Millisecond)
	}
	tg.t.Fatalf("the bot sent %v, want %d messages", tg.bot.sent(), n)
	return nil
}

// TestTelegramEndToEnd: a real update payload through the webhook, the
// model's proposal as an inline keyboard, the confirmation as a callback
// query, and the forwarded-link incident answered from the card with no
// model call.
func TestTelegramEndToEnd(t *testing.T) {
	tg := newTelegramE2E(t, `
tools:
  taskboard: {confirm: {create_task: always}}
`)
	a, api, bot, model, update, waitSent := tg.app, tg.api, tg.bot, tg.model, tg.update, tg.waitSent
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
	if !strings.Contains(sent[0], "Создать задачу") || len(bot.lastKeyboard()) != 2 {
		t.Fatalf("confirmation: %q, keyboard %v", sent[0], bot.lastKeyboard())
	}
	confirm := bot.lastKeyboard()[0]
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

// TestTelegramMCPProgressAndQuestions runs the reference MCP server behind
// the Telegram channel: a long call's progress is one status message
// edited in place, and a server's elicitation is a message with buttons
// whose press reaches the waiting call — not a turn of its own.
func TestTelegramMCPProgressAndQuestions(t *testing.T) {
	entry := everythingServer(t)
	tg := newTelegramE2E(t, fmt.Sprintf(`
tools:
  mcp:
    servers:
      - name: everything
        command: [node, %q, stdio]
        inherit_env: [PATH, HOME]
        elicitation: true
        ask_timeout: 10s
        tools:
          trigger-*: {risk: read}
`, entry))
	const from = `"from":{"id":1001,"is_bot":false,"first_name":"Иван","language_code":"ru"},"chat":{"id":1001,"first_name":"Иван","type":"private"},"date":1764400000`
	decide := tg.decide

	decide("everything.trigger-long-running-operation", `{"duration":2.5,"steps":5}`)
	tg.update(300, `"message":{"message_id":20,`+from+`,"text":"запусти долгую операцию"}`)
	sent := tg.waitSent(2)
	if !strings.HasPrefix(sent[0], "⏳ ") || !strings.Contains(sent[1], "Long running operation completed") {
		t.Fatalf("sent %q", sent)
	}
	tg.bot.mu.Lock()
	var statusID float64
	var edits []string
	for i, c := range tg.bot.calls {
		switch {
		case c.Method == "sendMessage" && statusID == 0:
			statusID = float64(5000 + i + 1) // the fake numbers messages by call
		case c.Method == "editMessageText" && c.Body["message_id"] == statusID:
			edits = append(edits, fmt.Sprint(c.Body["text"]))
		}
	}
	tg.bot.mu.Unlock()
	if len(edits) == 0 || !strings.HasPrefix(edits[len(edits)-1], "⏳ ") {
		t.Errorf("status edits = %q", edits)
	}

	decide("everything.trigger-elicitation-request", `{}`)
	tg.update(301, `"message":{"message_id":21,`+from+`,"text":"заполни форму"}`)
	sent = tg.waitSent(3)
	if !strings.Contains(sent[2], "«everything»") || len(tg.bot.lastKeyboard()) != 3 {
		t.Fatalf("question %q with keyboard %v", sent[2], tg.bot.lastKeyboard())
	}
	decline := tg.bot.lastKeyboard()[1]
	tg.update(302, fmt.Sprintf(`"callback_query":{"id":"cb-q","from":{"id":1001,"is_bot":false,"first_name":"Иван"},"message":{"message_id":5003,"date":1764400001,"chat":{"id":1001,"type":"private"},"text":"..."},"chat_instance":"42","data":%q}`, decline))
	sent = tg.waitSent(4)
	if !strings.Contains(sent[3], "decline") {
		t.Errorf("after declining: %q", sent[3])
	}
	turns, err := tg.app.Journal.(store.TurnLister).ListTurns(context.Background(), "acme", store.TurnFilter{})
	if err != nil || len(turns) != 2 {
		t.Errorf("%d turns journaled (%v), want 2: the press answered the waiting call", len(turns), err)
	}
}

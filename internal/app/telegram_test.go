package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/internal/config"
	"github.com/arbiterhq/arbiter/llm/llmtest"
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

// TestTelegramEndToEnd: a real update payload through the webhook, the
// model's proposal as an inline keyboard, the confirmation as a callback
// query, and the forwarded-link incident answered from the card with no
// model call.
func TestTelegramEndToEnd(t *testing.T) {
	bot := &botAPI{}
	botSrv := httptest.NewServer(bot)
	defer botSrv.Close()
	model := llmtest.NewServer(llmtest.ServerConfig{})
	defer model.Close()
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
tools:
  taskboard: {confirm: {create_task: always}}
`, model.URL, botSrv.URL)
	env := map[string]string{"TG_TOKEN": "123456:TEST-token", "TG_SECRET": "s3cret-value"}
	getenv := func(k string) string { return env[k] }
	cfg, err := config.Parse(strings.NewReader(yaml), getenv)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Store.Path = filepath.Join(t.TempDir(), "arbiter.db")
	a, err := Build(cfg, Options{Getenv: getenv})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	api := httptest.NewServer(a.HTTP)
	defer api.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go a.Run(ctx)

	update := func(id int, msg string) {
		t.Helper()
		body := fmt.Sprintf(`{"update_id":%d,%s}`, id, msg)
		req, _ := http.NewRequest("POST", api.URL+"/telegram/webhook", strings.NewReader(body))
		req.Header.Set("X-Telegram-Bot-Api-Secret-Token", "s3cret-value")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("webhook answered %d", resp.StatusCode)
		}
	}
	waitSent := func(n int) []string {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			if s := bot.sent(); len(s) >= n {
				return s
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatalf("the bot sent %v, want %d messages", bot.sent(), n)
		return nil
	}
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

package browsertest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/server"
	"github.com/arbiterhq/arbiter/server/servertest"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// slowModel answers in JSON decisions written a few bytes at a time: a
// question about the order proposes the order lookup, anything else gets
// a greeting that waits for hold after its first sentence.
type slowModel struct {
	hold chan struct{}
}

const (
	greeting      = "Здравствуйте! Чем помочь с заказом?"
	greetingFirst = "Здравствуйте!"
)

func (m *slowModel) Name() string  { return "slow" }
func (m *slowModel) Model() string { return "slow-1" }

func (m *slowModel) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	last := req.Messages[len(req.Messages)-1].Content
	text := `{"tool":"lookup_order","say":"","args":{},"done":false,"newTopic":false,"buttons":[]}`
	if !strings.Contains(last, "заказ") {
		text = `{"tool":null,"say":"` + greeting + `","args":null,"done":false,"newTopic":false,"buttons":[]}`
	}
	resp := llm.Response{Text: text, Protocol: llm.ProtocolJSON, Provider: "slow", Model: "slow-1"}
	if req.OnText == nil {
		return resp, nil
	}
	holdAt := strings.Index(text, greetingFirst) + len(greetingFirst) + 1
	for i := 0; i < len(text); i += 4 {
		req.OnText(text[i:min(i+4, len(text))])
		if holdAt > len(greetingFirst) && i < holdAt && i+4 >= holdAt {
			select {
			case <-m.hold:
			case <-ctx.Done():
				return llm.Response{}, ctx.Err()
			}
		}
	}
	return resp, nil
}

// TestBrowserStream: the real server with a slow model and a slow order
// system. While the lookup runs, its chip is in the typing line; while
// the model writes, the draft shows the first sentence; each reply then
// replaces what streamed, with the text the JSON reply of the same
// message has.
func TestBrowserStream(t *testing.T) {
	needBrowser(t)
	const token = "k-stream-test-0123456789"
	orders := make(chan struct{})
	system := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-orders:
		case <-r.Context().Done():
			return
		}
		_, _ = io.WriteString(w, `{"order":"A-17","status":"в пути"}`)
	}))
	t.Cleanup(system.Close)
	model := &slowModel{hold: make(chan struct{})}
	yaml := servertest.OwnerTenantYAML("http://127.0.0.1:9", "ru") + fmt.Sprintf(`      - {id: ann, name: Ann, role: owner, keys: [{token: %q, scopes: [read]}]}
tools:
  http:
    - name: lookup_order
      title: Поиск заказа
      description: The user's last order.
      url: %s/orders
      input_schema: {type: object, properties: {}, additionalProperties: false}
      risk: read
      chip: {ru: "Ищу ваш заказ…"}
`, token, system.URL)
	srv := servertest.NewWith(t, yaml, server.Builtin(), nil, server.Options{Model: model})
	b := launchBrowser(t)
	b.signIn(srv.API.URL, token)

	b.do("ask about the order", chromedp.SendKeys(chromedp.ID("message-input"), "где мой заказ?"+kb.Enter))
	b.wait("the lookup's chip while it runs", `(document.querySelector('#typing .step-chip') || {}).textContent === 'Ищу ваш заказ…'`)
	b.check("no reply yet", `document.querySelectorAll('.message.assistant:not(.draft)').length === 0`)
	close(orders)
	b.wait("the lookup's reply", `document.querySelectorAll('.message.assistant:not(.draft)').length === 1`)
	b.check("the chip is gone", `!document.querySelector('#typing .step-chip')`)
	b.sameAsJSON(srv, token, "где мой заказ?")

	b.do("say hello", chromedp.SendKeys(chromedp.ID("message-input"), "привет"+kb.Enter))
	b.wait("the first sentence while the model writes", `(document.querySelector('.message.draft .text') || {}).textContent === `+jsString(greetingFirst+" "))
	b.check("the draft is not yet a reply", `document.querySelectorAll('.message.assistant:not(.draft)').length === 1`)
	close(model.hold)
	b.wait("the reply replaces the draft", `document.querySelectorAll('.message.assistant:not(.draft)').length === 2 && !document.querySelector('.message.draft')`)
	b.sameAsJSON(srv, token, "привет")
	b.consoleClean()
}

// sameAsJSON checks that the last reply on the page reads as the JSON
// reply to text in a conversation of its own.
func (b *browser) sameAsJSON(srv *servertest.Server, token, text string) {
	b.t.Helper()
	status, reply := srv.Post(token, fmt.Sprintf(`{"conversation_id":"json-%d","text":%q}`, len(b.texts("replies", ".message.assistant")), text))
	if status != http.StatusOK {
		b.t.Fatalf("JSON reply to %q: %d %v", text, status, reply)
	}
	var shown string
	b.eval("the last reply's text", `[...document.querySelectorAll('.message.assistant:not(.draft) .text')].pop().textContent`, &shown)
	if say, _ := reply["say"].(string); strings.ReplaceAll(say, "\n", "") != shown {
		raw, _ := json.Marshal(reply)
		b.t.Errorf("%q: the page shows %q, the JSON reply %s", text, shown, raw)
	}
}

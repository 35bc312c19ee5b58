// Package servertest runs a built server over loopback HTTP for end-to-end
// tests of a configuration: a fresh store per test, a fake model speaking
// the OpenAI wire format (llm/llmtest), helpers to post messages and read
// replies, and a fake Telegram Bot API. Programs that embed arbiter use it
// to test their own kinds the way arbiter tests its own.
package servertest

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

	"github.com/arbiterhq/arbiter/config"
	"github.com/arbiterhq/arbiter/llm/llmtest"
	"github.com/arbiterhq/arbiter/server"
	"github.com/arbiterhq/arbiter/turn/turntest"
)

// Server is a built server serving its HTTP API on loopback.
type Server struct {
	T *testing.T
	*server.Server
	API   *httptest.Server
	Model *llmtest.Server
}

// New builds the server of the configuration yaml with kinds, on a store
// in a temporary directory, with model as its fake provider (the yaml names
// model.URL), and serves it until the test ends.
func New(t *testing.T, yaml string, kinds server.Kinds, model *llmtest.Server, getenv func(string) string) *Server {
	t.Helper()
	return NewWith(t, yaml, kinds, model, server.Options{Getenv: getenv})
}

// NewWith is New with the server's options: a clock (Options.Now) that
// the engine and the store share, so a test can let days pass between
// two messages; the configuration's environment is opts.Getenv.
func NewWith(t *testing.T, yaml string, kinds server.Kinds, model *llmtest.Server, opts server.Options) *Server {
	t.Helper()
	if opts.Getenv == nil {
		opts.Getenv = func(string) string { return "" }
	}
	cfg, err := config.Parse(strings.NewReader(yaml), opts.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Store.Path = filepath.Join(t.TempDir(), "arbiter.db")
	s, err := server.Build(cfg, kinds, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return &Server{T: t, Server: s, API: Serve(t, s), Model: model}
}

// Serve serves s's HTTP handler on loopback until the test ends.
func Serve(t *testing.T, s *server.Server) *httptest.Server {
	api := httptest.NewServer(s.HTTP)
	t.Cleanup(api.Close)
	return api
}

// OwnerTenantYAML starts a configuration: the fake model at modelURL and
// tenant acme (language lang) whose owner role sees every tool; the caller
// adds its users below the returned "users:" line.
func OwnerTenantYAML(modelURL, lang string) string {
	return fmt.Sprintf(`models:
  - {name: fake, kind: openai, base_url: %q, model: m, api_key: sk-x}
tenants:
  - id: acme
    language: %s
    roles: {owner: {tools: ["*"]}}
    users:
`, modelURL, lang)
}

// Decide scripts the model's next decision: run tool with args (JSON).
func (s *Server) Decide(tool, args string) {
	s.Model.Enqueue(llmtest.HTTPReply{Content: turntest.Decision(tool, args)})
}

// Post sends a message body to POST /v1/messages as token's user.
func (s *Server) Post(token, body string) (int, map[string]any) {
	s.T.Helper()
	return s.Do("POST", "/v1/messages", token, body)
}

// Do makes a request of the API and decodes its JSON answer.
func (s *Server) Do(method, path, token, body string) (int, map[string]any) {
	s.T.Helper()
	req, _ := http.NewRequest(method, s.API.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.T.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		s.T.Fatalf("not JSON: %q", raw)
	}
	return resp.StatusCode, m
}

// BotAPI is a loopback fake of the Telegram Bot API: it records the calls
// the bot makes and answers them in the documented shape. Safe for
// concurrent use.
type BotAPI struct {
	mu    sync.Mutex
	calls []BotCall
	files map[string][]byte // by file_id, served by getFile and the file endpoint
	// called is closed at the next call, for those who wait for one; nil
	// while no one waits.
	called chan struct{}
}

// record keeps call and tells those waiting for one. Called with mu held.
func (b *BotAPI) record(call BotCall) {
	b.calls = append(b.calls, call)
	if b.called != nil {
		close(b.called)
		b.called = nil
	}
}

// sentSoFar returns the texts sent so far and a channel closed at the
// next call.
func (b *BotAPI) sentSoFar() ([]string, <-chan struct{}) {
	sent := b.Sent()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.called == nil {
		b.called = make(chan struct{})
	}
	return sent, b.called
}

// AddFile makes a file the bot can download: getFile answers its path and
// size, the file endpoint serves data.
func (b *BotAPI) AddFile(fileID string, data []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.files == nil {
		b.files = map[string][]byte{}
	}
	b.files[fileID] = data
}

// serveFile answers the Bot API's file endpoint, /file/bot<token>/<path>.
func (b *BotAPI) serveFile(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:]
	b.mu.Lock()
	data, ok := b.files[id]
	b.record(BotCall{Method: "file", Body: map[string]any{"file_id": id}})
	b.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	_, _ = w.Write(data)
}

// BotCall is one call the bot made.
type BotCall struct {
	Method string
	Body   map[string]any
}

func (b *BotAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/file/") {
		b.serveFile(w, r)
		return
	}
	method := r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:]
	var body map[string]any
	raw, _ := io.ReadAll(r.Body)
	_ = json.Unmarshal(raw, &body)
	b.mu.Lock()
	b.record(BotCall{method, body})
	n := len(b.calls)
	b.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch method {
	case "getMe":
		fmt.Fprint(w, `{"ok":true,"result":{"id":777,"is_bot":true,"first_name":"Arbiter","username":"arbiter_test_bot"}}`)
	case "sendMessage":
		fmt.Fprintf(w, `{"ok":true,"result":{"message_id":%d,"date":1764400000,"chat":{"id":1001,"type":"private"},"text":"ok"}}`, 5000+n)
	case "getFile":
		id, _ := body["file_id"].(string)
		b.mu.Lock()
		data, ok := b.files[id]
		b.mu.Unlock()
		if !ok {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"ok":false,"error_code":400,"description":"Bad Request: invalid file_id"}`)
			return
		}
		fmt.Fprintf(w, `{"ok":true,"result":{"file_id":%q,"file_size":%d,"file_path":"files/%s"}}`, id, len(data), id)
	default:
		fmt.Fprint(w, `{"ok":true,"result":true}`)
	}
}

// Calls returns the calls made so far.
func (b *BotAPI) Calls() []BotCall {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]BotCall(nil), b.calls...)
}

// Sent returns the texts of the messages sent so far.
func (b *BotAPI) Sent() []string {
	var out []string
	for _, c := range b.Calls() {
		if c.Method == "sendMessage" {
			out = append(out, fmt.Sprint(c.Body["text"]))
		}
	}
	return out
}

// LastKeyboard returns the callback data of the buttons of the last
// message sent with a keyboard.
func (b *BotAPI) LastKeyboard() []string {
	calls := b.Calls()
	for i := len(calls) - 1; i >= 0; i-- {
		c := calls[i]
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

// Telegram is a Server with the Telegram channel in webhook mode against a
// fake Bot API, one user (Иван Петров, Telegram id 1001, tenant acme,
// language ru) and a fake model; its channel loop runs until the test ends.
type Telegram struct {
	*Server
	Bot *BotAPI
}

// NewTelegram builds and runs it with kinds and more configuration (a
// "tools:" section, say) appended to its YAML.
func NewTelegram(t *testing.T, kinds server.Kinds, more string) *Telegram {
	t.Helper()
	bot := &BotAPI{}
	botSrv := httptest.NewServer(bot)
	t.Cleanup(botSrv.Close)
	model := llmtest.NewServer(llmtest.ServerConfig{})
	t.Cleanup(model.Close)
	yaml := OwnerTenantYAML(model.URL, "ru") + fmt.Sprintf(`      - {id: ivan, name: Иван Петров, role: owner, telegram_ids: [1001]}
channels:
  telegram: {token_env: TG_TOKEN, mode: webhook, secret_token_env: TG_SECRET, api_base_url: %q, public_url: "https://bot.example", tenant: acme}
`, botSrv.URL) + more
	env := map[string]string{"TG_TOKEN": "123456:TEST-token", "TG_SECRET": TelegramSecret}
	s := New(t, yaml, kinds, model, func(k string) string { return env[k] })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return &Telegram{Server: s, Bot: bot}
}

// TelegramSecret is the webhook secret of NewTelegram's server.
const TelegramSecret = "s3cret-value"

// Update posts one update (its fields after update_id) to the webhook with
// the right secret.
func (tg *Telegram) Update(id int, fields string) {
	tg.T.Helper()
	body := fmt.Sprintf(`{"update_id":%d,%s}`, id, fields)
	req, _ := http.NewRequest("POST", tg.API.URL+"/telegram/webhook", strings.NewReader(body))
	req.Header.Set("X-Telegram-Bot-Api-Secret-Token", TelegramSecret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tg.T.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		tg.T.Fatalf("webhook answered %d", resp.StatusCode)
	}
}

// WaitSent waits until the bot sent at least n messages and returns them;
// it looks again at each call the bot makes, and gives up after 10s.
func (tg *Telegram) WaitSent(n int) []string {
	tg.T.Helper()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	for {
		sent, called := tg.Bot.sentSoFar()
		if len(sent) >= n {
			return sent
		}
		select {
		case <-called:
		case <-deadline.C:
			tg.T.Fatalf("the bot sent %v, want %d messages", sent, n)
			return nil
		}
	}
}

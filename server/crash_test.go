package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/config"
	"github.com/arbiterhq/arbiter/llm/llmtest"
	"github.com/arbiterhq/arbiter/server"
	"github.com/arbiterhq/arbiter/server/servertest"
)

// TestTelegramRedeliveryAfterCrashPaysOnce: an instance accepts a Telegram
// update into its durable inbox and dies (here: stops being heard from)
// while the write it decided — a payment on a service that cannot
// deduplicate, run without confirmation — is in flight. The next instance
// on the same store processes the inbox item again: it asks no model,
// makes no second payment, and tells the user the outcome is unknown.
func TestTelegramRedeliveryAfterCrashPaysOnce(t *testing.T) {
	var payments seen
	arrived, hang := make(chan struct{}, 4), make(chan struct{})
	pay := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var args struct{ Memo string }
		_ = json.NewDecoder(r.Body).Decode(&args)
		payments.add(args.Memo)
		arrived <- struct{}{}
		select {
		case <-hang:
		case <-r.Context().Done():
		}
		http.Error(w, "gone", http.StatusBadGateway)
	}))
	defer pay.Close()
	defer close(hang)
	var asked atomic.Int64
	model := llmtest.NewServer(llmtest.ServerConfig{SkipRecording: true, Respond: func(*llmtest.ChatRequest) llmtest.HTTPReply {
		n := asked.Add(1)
		return llmtest.HTTPReply{Content: fmt.Sprintf(`{"say":"","tool":"pay","args":{"amount":100,"memo":"rent for May #%d"},"done":false,"newTopic":false,"buttons":[]}`, n)}
	}})
	defer model.Close()
	bot := &servertest.BotAPI{}
	botSrv := httptest.NewServer(bot)
	defer botSrv.Close()
	yaml := servertest.OwnerTenantYAML(model.URL, "en") + fmt.Sprintf(`      - {id: ivan, name: Ivan, role: owner, telegram_ids: [1001], channel_scopes: [read, "write:safe", "write:full"]}
channels:
  telegram: {token_env: TG_TOKEN, mode: webhook, secret_token_env: TG_SECRET, api_base_url: %q, public_url: "https://bot.example", tenant: acme}
tools:
  http:
    - name: pay
      title: Pay
      description: Pay an amount.
      url: %q
      risk: "write:full"
      confirm: never
      idempotent: false
      timeout: 60s
      input_schema:
        type: object
        required: [amount, memo]
        properties: {amount: {type: integer, minimum: 1}, memo: {type: string}}
`, botSrv.URL, pay.URL)
	env := map[string]string{"TG_TOKEN": "123456:TEST-token", "TG_SECRET": "s3cret-value"}
	getenv := func(k string) string { return env[k] }
	path := filepath.Join(t.TempDir(), "arbiter.db")
	start := func(next bool) (*server.Server, *httptest.Server, context.CancelFunc) {
		cfg, err := config.Parse(strings.NewReader(yaml), getenv)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Store.Path = path
		// The next instance stands for a process started after the first
		// died, whose claim on the file would have ended with it.
		a, err := server.Build(cfg, server.Builtin(), server.Options{Getenv: getenv, NoStoreClaim: next})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		go a.Run(ctx)
		return a, servertest.Serve(t, a), cancel
	}

	first, api, stopFirst := start(false)
	defer first.Close()
	defer stopFirst()
	body := `{"update_id":300,"message":{"message_id":30,"from":{"id":1001,"is_bot":false,"first_name":"Ivan"},"chat":{"id":1001,"type":"private"},"date":1764400000,"text":"pay the rent"}}`
	req, _ := http.NewRequest("POST", api.URL+"/telegram/webhook", strings.NewReader(body))
	req.Header.Set("X-Telegram-Bot-Api-Secret-Token", "s3cret-value")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	select {
	case <-arrived:
	case <-time.After(10 * time.Second):
		t.Fatal("the payment never reached the service")
	}

	// The first instance is gone for good; the next one starts on the same
	// store and finds the accepted update.
	second, _, stopSecond := start(true)
	defer second.Close()
	defer stopSecond()
	deadline := time.Now().Add(10 * time.Second)
	for len(bot.Sent()) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	sent := bot.Sent()
	if len(sent) != 1 || !strings.Contains(sent[0], "unknown") {
		t.Errorf("the user was told %q, want one message saying the outcome is unknown", sent)
	}
	got := payments.list()
	if len(got) != 1 || asked.Load() != 1 {
		t.Errorf("payments %q after %d model calls; want exactly one payment and no second decision", got, asked.Load())
	}
}

package telegram

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/arbiterhq/arbiter/chat"
)

func TestNewValidates(t *testing.T) {
	api := newFakeAPI(t)
	base := Config{Token: testToken, APIBaseURL: fakeAPIURL, HTTPClient: api.client, Handler: newRecorder(), Inbox: newFakeInbox(), Identify: identify}
	tests := []struct {
		name string
		mod  func(*Config)
		ok   bool
	}{
		{"polling by default", func(c *Config) {}, true},
		{"webhook", func(c *Config) { c.PublicURL, c.SecretToken = "https://x.example", "abc_DEF-1" }, true},
		{"webhook without secret", func(c *Config) { c.PublicURL = "https://x.example" }, false},
		{"secret with bad characters", func(c *Config) { c.PublicURL, c.SecretToken = "https://x.example", "a b" }, false},
		{"secret too long", func(c *Config) { c.PublicURL, c.SecretToken = "https://x.example", strings.Repeat("a", 257) }, false},
		{"webhook without URL", func(c *Config) { c.Mode, c.SecretToken = ModeWebhook, "abc" }, false},
		{"unknown mode", func(c *Config) { c.Mode = "push" }, false},
		{"no token", func(c *Config) { c.Token = "" }, false},
		{"token with slash", func(c *Config) { c.Token = "1:a/b" }, false},
		{"no handler", func(c *Config) { c.Handler = nil }, false},
		{"no inbox", func(c *Config) { c.Inbox = nil }, false},
		{"no identify", func(c *Config) { c.Identify = nil }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := base
			tt.mod(&cfg)
			_, err := New(cfg)
			if (err == nil) != tt.ok {
				t.Errorf("New: err = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

func TestWebhookSecret(t *testing.T) {
	h := newHarness(t, nil)
	body := fixture(t, "text")
	for _, tt := range []struct {
		name    string
		headers []string
	}{
		{"missing", nil},
		{"empty", []string{""}},
		{"wrong", []string{"not-the-secret"}},
		{"prefix", []string{testSecret[:len(testSecret)-1]}},
		{"longer", []string{testSecret + "x"}},
		{"other case", []string{strings.ToUpper(testSecret)}},
		{"two headers", []string{testSecret, testSecret}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if status := h.webhook(http.MethodPost, body, tt.headers...); status != http.StatusUnauthorized {
				t.Errorf("status %d, want 401", status)
			}
		})
	}
	if n := h.inbox.count(); n != 0 {
		t.Fatalf("%d items accepted without the secret", n)
	}
	h.deliver(body)
	if got := h.inbox.pendingIDs(); len(got) != 1 || got[0] != "1001:100001" {
		t.Fatalf("pending = %q, want [1001:100001]", got)
	}
}

func TestWebhookRejectsBadBodies(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxBodyBytes = 2048 })
	big := textUpdate(1, 1001, 1001, 1, strings.Repeat("я", 2000))
	tests := []struct {
		name   string
		body   string
		status int
	}{
		{"oversized", big, 400},
		{"not JSON", "update please", 400},
		{"truncated", `{"update_id": 5, "message": {"text": "hi"`, 400},
		{"array", `[{"update_id": 5}]`, 400},
		{"no update_id", `{"message": {"message_id": 1, "text": "hi"}}`, 400},
		{"trailing data", fixture(t, "text") + `{"update_id": 6}`, 400},
		{"wrong types", `{"update_id": "five"}`, 400},
		{"empty", "", 400},
		{"deeply nested", strings.Repeat(`{"message":{"reply_to_message":`, 200) + "{}", 400},
		// Well-formed updates the channel does not handle: 200, ignored.
		{"channel post", `{"update_id": 7, "channel_post": {"message_id": 1, "date": 1, "chat": {"id": -100, "type": "channel"}, "text": "x"}}`, 200},
		{"service message", `{"update_id": 8, "message": {"message_id": 2, "date": 1, "chat": {"id": -100, "type": "group", "title": "g"}, "from": {"id": 1001, "is_bot": false, "first_name": "I"}, "new_chat_members": [{"id": 5, "is_bot": false, "first_name": "N"}]}}`, 200},
		{"from a bot", `{"update_id": 9, "message": {"message_id": 3, "date": 1, "chat": {"id": 1001, "type": "private"}, "from": {"id": 1001, "is_bot": true, "first_name": "B"}, "text": "x"}}`, 200},
		{"inline button", `{"update_id": 10, "callback_query": {"id": "q", "from": {"id": 1001, "is_bot": false, "first_name": "I"}, "inline_message_id": "AAA", "chat_instance": "1", "data": "x"}}`, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := h.post(tt.body, testSecret); got != tt.status {
				t.Errorf("status %d, want %d", got, tt.status)
			}
		})
	}
	if n := h.inbox.count(); n != 0 {
		t.Errorf("%d items accepted from bad or ignored bodies", n)
	}
	if status := h.webhook(http.MethodGet, "", testSecret); status != http.StatusMethodNotAllowed {
		t.Errorf("GET: status %d, want 405", status)
	}
}

func TestWebhookDisabledWhenPolling(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, func(c *Config) { c.Mode = ModePolling })
		if got := h.post(fixture(t, "text"), testSecret); got != http.StatusNotFound {
			t.Errorf("status %d, want 404", got)
		}
	})
}

func TestDuplicateUpdateSequential(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		h.start()
		body := fixture(t, "text")
		h.deliver(body)
		waitFor(t, "the reply", func() bool { return len(h.api.sentTexts()) == 1 })
		h.deliver(body) // Telegram redelivers after a lost 200
		h.wantOneTurn(t)
	})
}

func TestDuplicateUpdateConcurrent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		h.start()
		body := fixture(t, "text")
		var wg sync.WaitGroup
		codes := make([]int, 12)
		for i := range codes {
			wg.Go(func() { codes[i] = h.post(body, testSecret) })
		}
		wg.Wait()
		for i, c := range codes {
			if c != http.StatusOK {
				t.Errorf("delivery %d: status %d, want 200", i, c)
			}
		}
		waitFor(t, "the reply", func() bool { return len(h.api.sentTexts()) >= 1 })
		h.wantOneTurn(t)
	})
}

func TestWebhookAnswersWhileTurnRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, func(c *Config) { c.TypingDelay = 30 * time.Millisecond })
		release := make(chan struct{})
		h.h.block = func(chat.Inbound) { <-release }
		h.start()
		defer close(release)
		for i := range 3 {
			start := time.Now()
			h.deliver(textUpdate(int64(200+i), 1001, 1001, int64(10+i), fmt.Sprintf("сообщение %d", i)))
			if d := time.Since(start); d > 500*time.Millisecond {
				t.Errorf("webhook took %v while a turn was running, want well under 1 s", d)
			}
		}
		waitFor(t, "typing while the turn runs", func() bool { return len(h.api.callsOf("sendChatAction")) > 0 })
		a := h.api.callsOf("sendChatAction")[0]
		if a.params["action"] != "typing" || a.params["chat_id"] != float64(1001) {
			t.Errorf("sendChatAction params = %v", a.params)
		}
	})
}

func TestWebhookInboxDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		h.start()
		h.inbox.mu.Lock()
		h.inbox.acceptErrs = 1
		h.inbox.mu.Unlock()
		body := fixture(t, "text")
		if got := h.post(body, testSecret); got != http.StatusServiceUnavailable {
			t.Fatalf("status %d with the inbox down, want 503", got)
		}
		h.deliver(body) // Telegram's retry
		h.deliver(body) // and one more, answered 200 and ignored
		waitFor(t, "the reply", func() bool { return len(h.api.sentTexts()) == 1 })
		h.wantOneTurn(t)
	})
}

func TestRunRegistersWebhook(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		h.start()
		waitFor(t, "setWebhook", func() bool { return len(h.api.callsOf("setWebhook")) == 1 })
		p := h.api.callsOf("setWebhook")[0].params
		if p["url"] != "https://bot.example.com/telegram/webhook" || p["secret_token"] != testSecret {
			t.Errorf("setWebhook params = %v", p)
		}
		if got := fmt.Sprint(p["allowed_updates"]); got != "[message edited_message callback_query]" {
			t.Errorf("allowed_updates = %s", got)
		}
	})
}

func TestRunFailsOnRejectedWebhook(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		h.api.failNext("setWebhook", 401)
		done := make(chan error, 1)
		go func() { done <- h.ch.Run(t.Context()) }()
		select {
		case err := <-done:
			if err == nil || strings.Contains(err.Error(), testToken) {
				t.Errorf("Run = %v; want an error without the token", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Run did not return on a rejected setWebhook")
		}
	})
}

func TestPolling(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, func(c *Config) { c.Mode, c.PublicURL = ModePolling, "" })
		h.api.mu.Lock()
		h.api.updates = append(h.api.updates, []byte(fixture(t, "text")), []byte(textUpdate(100002, 1001, 1001, 1366, "и ещё")))
		h.api.mu.Unlock()
		h.start()
		waitFor(t, "two replies", func() bool { return len(h.api.sentTexts()) == 2 })
		if len(h.api.callsOf("deleteWebhook")) == 0 {
			t.Error("polling started without deleteWebhook")
		}
		waitFor(t, "the offset to move on", func() bool {
			for _, c := range h.api.callsOf("getUpdates") {
				if c.params["offset"] == float64(100003) {
					return true
				}
			}
			return false
		})
		if n := h.h.sideEffects(); n != 2 {
			t.Errorf("handler ran %d turns, want 2", n)
		}
	})
}

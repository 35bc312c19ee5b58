package trello

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/internal/wait"
	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/tool/tooltest"
)

// sleeps records the waits between retries instead of sleeping.
type sleeps struct {
	mu    sync.Mutex
	waits []time.Duration
}

// recordSleeps makes c record its waits in the sleeps returned.
func recordSleeps(c *Client) *sleeps {
	s := &sleeps{}
	c.sleep = func(ctx context.Context, d time.Duration) error {
		s.mu.Lock()
		s.waits = append(s.waits, d)
		s.mu.Unlock()
		return ctx.Err()
	}
	return s
}

func (s *sleeps) list() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.waits...)
}

func TestRetry429HonoursRetryAfter(t *testing.T) {
	f := newFake(t)
	c := f.client(nil)
	sl := recordSleeps(c)
	f.addFault(fault{method: http.MethodGet, path: "/1/cards/AbCd1234", times: 1, status: 429,
		body: `{"error":"API_TOKEN_LIMIT_EXCEEDED","message":"Rate limit exceeded"}`, header: map[string]string{"Retry-After": "2"}})
	res, _ := c.ReadLink(context.Background(), dmitry, "https://trello.com/c/AbCd1234")
	tooltest.WantStatus(t, res, tool.StatusOK)
	if w := sl.list(); len(w) != 1 || w[0] != 2*time.Second {
		t.Errorf("waits = %v, want [2s]", w)
	}
	if n := len(f.requests(http.MethodGet, "/1/cards/AbCd1234")); n != 2 {
		t.Errorf("%d card reads, want 2", n)
	}
	// A rate-limited POST was not applied, so it is retried too.
	f.addFault(fault{method: http.MethodPost, path: "/1/cards", times: 1, status: 429,
		body: `{"error":"API_KEY_LIMIT_EXCEEDED","message":"Rate limit exceeded"}`})
	tooltest.WantStatus(t, run(t, c, ActionCreate, dmitry, `{"title":"После лимита"}`, ""), tool.StatusOK)
	if n := f.countCards("После лимита"); n != 1 {
		t.Errorf("%d cards", n)
	}
	if w := sl.list(); len(w) != 2 || w[1] < backoffBase || w[1] > backoffMax {
		t.Errorf("waits = %v, want a back-off without Retry-After", w)
	}
}

func TestRetriesBounded(t *testing.T) {
	f := newFake(t)
	c := f.client(nil)
	f.addFault(fault{method: http.MethodGet, path: "/1/boards/" + boardSL + "/lists", times: 100, status: 503, body: "Service Unavailable"})
	res := run(t, c, ActionListMine, dmitry, `{}`, "")
	tooltest.WantStatus(t, res, tool.StatusError)
	if n := len(f.requests(http.MethodGet, "/1/boards/"+boardSL+"/lists")); n != DefaultMaxRetries+1 {
		t.Errorf("%d list reads, want %d", n, DefaultMaxRetries+1)
	}
	if !strings.Contains(res.Error, "GET /1/boards/Brd12345/lists: status 503: Service Unavailable") {
		t.Errorf("error = %q", res.Error)
	}
	// 429 until the end: a rate-limit error.
	f2 := newFake(t)
	c2 := f2.client(func(cfg *Config) { cfg.MaxRetries = 1 })
	f2.addFault(fault{method: http.MethodGet, path: "/1/cards/AbCd1234", times: 100, status: 429,
		body: `{"error":"API_TOKEN_LIMIT_EXCEEDED","message":"Rate limit exceeded"}`})
	res, _ = c2.ReadLink(context.Background(), dmitry, "https://trello.com/c/AbCd1234")
	tooltest.WantStatus(t, res, tool.StatusError)
	if n := len(f2.requests(http.MethodGet, "/1/cards/AbCd1234")); n != 2 {
		t.Errorf("%d reads with MaxRetries 1, want 2", n)
	}
	if !strings.Contains(res.Error, "Rate limit exceeded (API_TOKEN_LIMIT_EXCEEDED)") || !strings.Contains(res.Text, "ограничил частоту") {
		t.Errorf("error %q, text %q", res.Error, res.Text)
	}
	// No retries at all.
	f3 := newFake(t)
	c3 := f3.client(func(cfg *Config) { cfg.MaxRetries = -1 })
	f3.addFault(fault{method: http.MethodGet, path: "/1/cards/AbCd1234", times: 100, status: 500, body: "oops"})
	c3.ReadLink(context.Background(), dmitry, "https://trello.com/c/AbCd1234")
	if n := len(f3.requests(http.MethodGet, "/1/cards/AbCd1234")); n != 1 {
		t.Errorf("%d reads with no retries", n)
	}
}

func TestRetryAfterBoundedByDeadline(t *testing.T) {
	f := newFake(t)
	c := f.client(nil)
	sl := recordSleeps(c)
	f.addFault(fault{method: http.MethodGet, path: "/1/cards/AbCd1234", times: 1, status: 429,
		body: `{"error":"API_TOKEN_LIMIT_EXCEEDED","message":"Rate limit exceeded"}`, header: map[string]string{"Retry-After": "20"}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	res, _ := c.ReadLink(ctx, dmitry, "https://trello.com/c/AbCd1234")
	tooltest.WantStatus(t, res, tool.StatusError)
	if len(sl.list()) != 0 || !strings.Contains(res.Error, "would pass the deadline") {
		t.Errorf("waits %v, error %q", sl.list(), res.Error)
	}
	// Far beyond any reasonable wait: not waited for either.
	f.addFault(fault{method: http.MethodGet, path: "/1/cards/AbCd1234", times: 1, status: 429,
		body: "rate limited", header: map[string]string{"Retry-After": "3600"}})
	res, _ = c.ReadLink(context.Background(), dmitry, "https://trello.com/c/AbCd1234")
	tooltest.WantStatus(t, res, tool.StatusError)
	if len(sl.list()) != 0 || !strings.Contains(res.Error, "not waiting that long") {
		t.Errorf("waits %v, error %q", sl.list(), res.Error)
	}
	// The real sleep ends with the context: cancelled while it waits, the
	// read gives up rather than retrying.
	f.addFault(fault{method: http.MethodGet, path: "/1/cards/AbCd1234", times: 1, status: 503, body: "busy", header: map[string]string{"Retry-After": "1"}})
	ctx2, cancel2 := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel2()
	var waited []time.Duration
	c.sleep = func(ctx context.Context, d time.Duration) error {
		waited = append(waited, d)
		cancel2()
		return wait.Sleep(ctx, d)
	}
	res, _ = c.ReadLink(ctx2, dmitry, "https://trello.com/c/AbCd1234")
	tooltest.WantStatus(t, res, tool.StatusError)
	if !slices.Equal(waited, []time.Duration{time.Second}) {
		t.Errorf("waits %v, want the one Retry-After asked for", waited)
	}
}

func TestNotFoundDistinctFromErrors(t *testing.T) {
	f := newFake(t)
	c := f.client(nil)
	res := run(t, c, ActionComplete, dmitry, `{"card":"https://trello.com/c/Zzzz9999"}`, "")
	tooltest.WantStatus(t, res, tool.StatusNotFound)
	f.addFault(fault{method: http.MethodGet, path: "/1/cards/AbCd1234", times: 3, status: 502, body: "Bad Gateway"})
	res = run(t, c, ActionComplete, dmitry, `{"card":"https://trello.com/c/AbCd1234"}`, "")
	tooltest.WantStatus(t, res, tool.StatusError)
	// A timeout is an error, never not found: the fake answers only once the
	// caller has given up.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	f.mu.Lock()
	f.before = func(method, path string) { <-ctx.Done() }
	f.mu.Unlock()
	res, _ = c.ReadLink(ctx, dmitry, "https://trello.com/c/AbCd1234")
	tooltest.WantStatus(t, res, tool.StatusError)
	if !strings.Contains(res.Error, "did not answer in time") {
		t.Errorf("error = %q", res.Error)
	}
}

func TestCredentialsNeverLeak(t *testing.T) {
	f := newFake(t)
	c := f.client(func(cfg *Config) {
		cfg.UserTokens = func(tenant, user string) (string, bool) { return userToken, user == "u3" }
	})
	leaks := func(t *testing.T, what string, texts ...string) {
		t.Helper()
		for _, s := range texts {
			for _, secret := range []string{testKey, testToken, userToken} {
				if strings.Contains(s, secret) {
					t.Errorf("%s leaks a credential: %s", what, s)
				}
			}
		}
	}
	encoded := func(r tool.Result) string { b, _ := json.Marshal(r); return string(b) }

	// 401 and 403: "Trello refused the credentials".
	f.addFault(fault{method: http.MethodGet, path: "/1/boards/" + boardSL + "/members", times: 1, status: 401, body: "invalid token"})
	res := run(t, c, ActionCreate, olga, `{"title":"x"}`, "")
	tooltest.WantStatus(t, res, tool.StatusError)
	if res.Error != "Trello refused the credentials (status 401)" {
		t.Errorf("error = %q", res.Error)
	}
	leaks(t, "401", encoded(res))
	f.addFault(fault{method: http.MethodGet, path: "/1/cards/AbCd1234", times: 1, status: 403, body: "unauthorized card permission requested"})
	res = run(t, c, ActionComment, dmitry, `{"card":"AbCd1234","text":"x"}`, "")
	if res.Error != "Trello refused the credentials (status 403)" {
		t.Errorf("error = %q", res.Error)
	}

	// An error body echoing the credentials is scrubbed.
	f.addFault(fault{method: http.MethodGet, path: "/1/cards/AbCd1234", times: 1, status: 400,
		body: "invalid value for token: " + userToken + " key=" + testKey})
	res = run(t, c, ActionComment, olga, `{"card":"AbCd1234","text":"x"}`, "")
	tooltest.WantStatus(t, res, tool.StatusError)
	if !strings.Contains(res.Error, "invalid value for token: [redacted] key=[redacted]") {
		t.Errorf("error = %q", res.Error)
	}
	leaks(t, "echoed body", encoded(res))

	// A transport failure: Go's error names the full URL, query included.
	f.srv.Close()
	res = run(t, c, ActionListMine, olga, `{}`, "")
	tooltest.WantStatus(t, res, tool.StatusError)
	if !strings.Contains(res.Error, "GET /1/boards/Brd12345/") {
		t.Errorf("error = %q", res.Error)
	}
	leaks(t, "transport error", encoded(res))
	_, err := c.LiveContext(context.Background(), dmitry, testNow)
	if err == nil {
		t.Fatal("LiveContext on a closed server succeeded")
	}
	leaks(t, "LiveContext error", err.Error())
	res, _ = c.ReadLink(context.Background(), olga, "https://trello.com/c/AbCd1234")
	leaks(t, "ReadLink error", encoded(res))
}

func TestNewValidates(t *testing.T) {
	ok := Config{Key: "k", Token: "t", Board: "Brd12345"}
	for name, edit := range map[string]func(*Config){
		"no key":        func(c *Config) { c.Key = "" },
		"no board":      func(c *Config) { c.Board = " " },
		"bad board":     func(c *Config) { c.Board = "a/b" },
		"no connection": func(c *Config) { c.Token = "" },
		"bad base":      func(c *Config) { c.APIBaseURL = "ftp://api.trello.com" },
		"base with key": func(c *Config) { c.APIBaseURL = "https://api.trello.com/?key=x" },
		"bad action":    func(c *Config) { c.Confirm = map[string]tool.Confirm{"delete_task": tool.ConfirmAlways} },
		"bad policy":    func(c *Config) { c.Confirm = map[string]tool.Confirm{ActionUpdate: "sometimes"} },
	} {
		cfg := ok
		edit(&cfg)
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: New accepted %+v", name, cfg)
		}
	}
	cfg := ok
	cfg.Board = "https://trello.com/b/Brd12345/team"
	cfg.Confirm = map[string]tool.Confirm{ActionComment: tool.ConfirmAlways}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if c.board != "Brd12345" || c.base != DefaultAPIBaseURL || c.maxRetries != DefaultMaxRetries || c.Name() != "trello" {
		t.Errorf("client = %+v", c)
	}
	for _, tl := range c.Tools() {
		s := tl.Spec()
		want := tool.ConfirmNever
		if s.Name == ActionCreate || s.Name == ActionComplete || s.Name == ActionComment {
			want = tool.ConfirmAlways
		}
		if s.Confirm != want || s.Idempotent != s.Risk.Writes() {
			t.Errorf("%s: confirm %s idempotent %v", s.Name, s.Confirm, s.Idempotent)
		}
	}
}

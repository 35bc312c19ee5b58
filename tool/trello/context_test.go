package trello

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestLiveContext(t *testing.T) {
	f := newFake(t)
	var mu sync.Mutex
	now := testNow
	c := f.client(func(cfg *Config) {
		cfg.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	})
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	ctx := context.Background()

	sections, err := c.LiveContext(ctx, dmitry, testNow)
	if err != nil {
		t.Fatal(err)
	}
	if len(sections) != 3 {
		t.Fatalf("sections = %+v", sections)
	}
	members := strings.Join(sections[0].Lines, "\n")
	for _, want := range []string{"Дмитрий Иванов (@dima) — the caller", "Ольга Смирнова (@olga)", "Alena Kim (@alenakim) a.k.a. Алёна Ким"} {
		if !strings.Contains(members, want) {
			t.Errorf("members lack %q:\n%s", want, members)
		}
	}
	if got := sections[1].Lines[0]; got != "Входящие → В работе → Ревью → Готово (complete_task moves a card to «Готово»)" {
		t.Errorf("lists = %q", got)
	}
	cards := strings.Join(sections[2].Lines, "\n")
	for _, want := range []string{"AbCd1234 «Проверить форму регистрации» — В работе, assignee the caller, due 2026-11-25 12:00", "EfGh5678 «Обновить лендинг» — Входящие, assignee the caller"} {
		if !strings.Contains(cards, want) {
			t.Errorf("cards lack %q:\n%s", want, cards)
		}
	}
	if strings.Contains(cards, "Старая задача") || strings.Contains(cards, "Сделанная") {
		t.Errorf("archived or done cards shown:\n%s", cards)
	}
	reads := func() int { return len(f.requests(http.MethodGet, "/1/boards/")) }
	if reads() != 3 {
		t.Errorf("%d board reads, want lists, members and cards", reads())
	}

	// Within the TTL: no request, for any user of the tenant.
	if _, err := c.LiveContext(ctx, olga, testNow); err != nil || reads() != 3 {
		t.Errorf("cached read: %v, %d requests", err, reads())
	}
	other, _ := c.LiveContext(ctx, olga, testNow)
	// Every open card: hers first, then the others with their assignees.
	if lines := strings.Join(other[2].Lines, "\n"); !strings.HasPrefix(lines, "IjKl9012 «Обновить лендинг для партнёров» — Входящие, assignee the caller, due 2026-11-19 12:00 (overdue)") ||
		!strings.Contains(lines, "AbCd1234 «Проверить форму регистрации» — В работе, assignee Дмитрий Иванов (@dima)") {
		t.Errorf("olga's cards = %v", other[2].Lines)
	}
	// After the TTL: read again.
	advance(DefaultContextTTL)
	c.LiveContext(ctx, dmitry, testNow)
	if reads() != 6 {
		t.Errorf("%d requests after the TTL, want 6", reads())
	}
	// A write drops the state.
	run(t, c, ActionComplete, dmitry, `{"card":"AbCd1234"}`, "")
	before := reads()
	sections, _ = c.LiveContext(ctx, dmitry, testNow)
	if reads() != before+3 || strings.Contains(strings.Join(sections[2].Lines, "\n"), "AbCd1234") {
		t.Errorf("state not refreshed after a write: %d→%d %v", before, reads(), sections[2].Lines)
	}

	// A caller without a Trello link gets no cards of their own.
	sections, _ = c.LiveContext(ctx, nobody, testNow)
	if !strings.Contains(sections[2].Lines[0], "not linked") {
		t.Errorf("unlinked caller: %v", sections[2].Lines)
	}

	// No connection for the caller: an error, even with a warm cache.
	c2 := f.client(func(cfg *Config) {
		cfg.Token = ""
		cfg.UserTokens = func(tenant, user string) (string, bool) { return userToken, user == "u3" }
	})
	if _, err := c2.LiveContext(ctx, olga, testNow); err != nil {
		t.Fatalf("own connection: %v", err)
	}
	if _, err := c2.LiveContext(ctx, dmitry, testNow); err == nil {
		t.Error("a caller without a connection got the context")
	}
	// Failure: an error, not the stale state.
	advance(DefaultContextTTL)
	f.addFault(fault{method: http.MethodGet, path: "/1/boards/" + boardSL + "/members", times: 10, status: 500, body: "Internal Server Error"})
	if s, err := c.LiveContext(ctx, dmitry, testNow); err == nil || s != nil {
		t.Errorf("LiveContext = %v, %v; want an error", s, err)
	} else if !strings.Contains(err.Error(), "status 500") {
		t.Errorf("error = %v", err)
	}
}

func TestLiveContextConcurrent(t *testing.T) {
	f := newFake(t)
	c := f.client(nil)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			caller := dmitry
			if i%2 == 0 {
				caller = olga
			}
			if _, err := c.LiveContext(context.Background(), caller, testNow); err != nil {
				t.Error(err)
			}
			if i%3 == 0 {
				c.cache.invalidate("acme")
			}
		})
	}
	wg.Wait()
}

package sqlitestore

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/store"
	"github.com/arbiterhq/arbiter/store/storetest"
)

func testItem(id string) store.ChannelItem {
	return store.ChannelItem{Channel: "telegram", ID: id, OrderKey: "chat-1", Payload: json.RawMessage(`{"id":"` + id + `"}`)}
}

func accept(t *testing.T, s *Store, id string) bool {
	t.Helper()
	fresh, err := s.Accept(t.Context(), testItem(id))
	if err != nil {
		t.Fatalf("Accept(%s): %v", id, err)
	}
	return fresh
}

func pendingIDs(t *testing.T, s *Store) string {
	t.Helper()
	items, err := s.Pending(t.Context(), "telegram", 100)
	if err != nil {
		t.Fatalf("Pending: %v", err)
	}
	var ids []string
	for _, it := range items {
		ids = append(ids, it.ID)
	}
	return strings.Join(ids, ",")
}

func TestChannelDedupeOption(t *testing.T) {
	for _, tt := range []struct{ set, want time.Duration }{
		{0, 24 * time.Hour}, {time.Hour, 24 * time.Hour}, {-time.Hour, 24 * time.Hour}, {48 * time.Hour, 48 * time.Hour},
	} {
		if got := (Options{ChannelDedupe: tt.set}).withDefaults().ChannelDedupe; got != tt.want {
			t.Errorf("ChannelDedupe %v became %v, want %v", tt.set, got, tt.want)
		}
	}
}

// TestChannelCleanup: a done id is forgotten once the window passed and
// the cleanup ran, measured from when it was marked done; a pending item is
// never dropped.
func TestChannelCleanup(t *testing.T) {
	for _, window := range []time.Duration{time.Hour, 48 * time.Hour} {
		t.Run(fmt.Sprint(window), func(t *testing.T) {
			effective := max(window, 24*time.Hour)
			clock := storetest.NewClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
			s := openTest(t, Options{Now: clock.Now, ChannelDedupe: window})
			ctx := t.Context()
			for _, id := range []string{"early", "late", "open"} {
				accept(t, s, id)
			}
			if err := s.Done(ctx, "telegram", "early"); err != nil {
				t.Fatal(err)
			}
			clock.Advance(time.Hour)
			if err := s.Done(ctx, "telegram", "late"); err != nil {
				t.Fatal(err)
			}
			// One minute before the early id's window ends, and a minute
			// after: the next call's cleanup removes it, the late one stays.
			clock.Advance(effective - time.Hour - time.Minute)
			if accept(t, s, "early") || accept(t, s, "late") || accept(t, s, "open") {
				t.Fatalf("an id was forgotten within the %v window", effective)
			}
			clock.Advance(2 * time.Minute)
			accept(t, s, "other")
			if !accept(t, s, "early") {
				t.Errorf("an id done %v ago is still deduplicated after the cleanup", effective+time.Minute)
			}
			if accept(t, s, "late") {
				t.Errorf("an id done %v ago was forgotten", effective-59*time.Minute)
			}
			clock.Advance(30 * 24 * time.Hour)
			accept(t, s, "other2")
			if accept(t, s, "open") {
				t.Error("a pending item's id was forgotten")
			}
			if got := pendingIDs(t, s); got != "open,other,early,other2" {
				t.Errorf("pending = %s, want open,other,early,other2", got)
			}
		})
	}
}

// TestChannelReopen: pending items, done ids and the order survive Close
// and Open, and items accepted later come after the earlier ones even
// when the newest rows were cleaned up.
func TestChannelReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	clock := storetest.NewClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	open := func() *Store {
		t.Helper()
		s, err := Open(path, Options{Now: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := open()
	for _, id := range []string{"a", "b", "c"} {
		accept(t, s, id)
	}
	if err := s.Done(t.Context(), "telegram", "c"); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open()
	if accept(t, s, "a") || accept(t, s, "c") {
		t.Error("an id was forgotten across reopen")
	}
	if got := pendingIDs(t, s); got != "a,b" {
		t.Errorf("pending after reopen = %s, want a,b", got)
	}
	// c, the newest row, goes; d must still be numbered after a and b.
	clock.Advance(25 * time.Hour)
	accept(t, s, "d")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open()
	defer s.Close()
	accept(t, s, "e")
	if got := pendingIDs(t, s); got != "a,b,d,e" {
		t.Errorf("pending after cleanup and reopen = %s, want a,b,d,e", got)
	}
}

// TestAcceptRestoresSynchronous: Accept syncs its own insert only; the
// store's connection goes back to synchronous=NORMAL for the turns.
func TestAcceptRestoresSynchronous(t *testing.T) {
	s := openTest(t, Options{})
	accept(t, s, "a")
	accept(t, s, "a")
	if err := s.acquireConn(t.Context()); err != nil {
		t.Fatal(err)
	}
	var mode int
	err := s.conn.QueryRowContext(t.Context(), `PRAGMA synchronous`).Scan(&mode)
	s.releaseConn()
	if err != nil || mode != 1 {
		t.Errorf("synchronous after Accept = %d, %v; want 1 (NORMAL)", mode, err)
	}
}

func TestChannelErrors(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "s.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	for _, it := range []store.ChannelItem{{Channel: "telegram"}, {ID: "1"}} {
		if _, err := s.Accept(ctx, it); err == nil || errors.Is(err, store.ErrUnavailable) {
			t.Errorf("Accept(%+v) = %v, want a plain error", it, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Accept(ctx, testItem("a")); !errors.Is(err, store.ErrUnavailable) || !strings.Contains(err.Error(), "telegram/a") {
		t.Errorf("Accept after Close: %v, want ErrUnavailable naming the item", err)
	}
	if _, err := s.Pending(ctx, "telegram", 1); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Pending after Close: %v, want ErrUnavailable", err)
	}
	if err := s.Done(ctx, "telegram", "a"); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Done after Close: %v, want ErrUnavailable", err)
	}
	if _, err := s.ListTurns(ctx, "t1", store.TurnFilter{}); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("ListTurns after Close: %v, want ErrUnavailable", err)
	}
}

// TestQueryPlans checks that the channel inbox and ListTurns read along
// the indexes meant for them, without sorting whole tables.
func TestQueryPlans(t *testing.T) {
	s := openTest(t, Options{})
	ctx := t.Context()
	// Some rows and ANALYZE, so the planner sees a realistic table.
	now := time.Now()
	for i := range 200 {
		rec := store.TurnRecord{TurnID: fmt.Sprint("turn-", i), Tenant: fmt.Sprint("t", i%4), Chat: fmt.Sprint("c", i%20),
			UserID: "u", Status: "ok", StartedAt: now.Add(time.Duration(i) * time.Second),
			LLMCalls: []store.LLMCall{{Provider: fmt.Sprint("p", i%5)}}}
		if err := s.AppendTurn(ctx, rec); err != nil {
			t.Fatal(err)
		}
		// Most items done, as in life.
		accept(t, s, fmt.Sprint(i))
		if i%20 != 0 {
			if err := s.Done(ctx, "telegram", fmt.Sprint(i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := s.db.ExecContext(ctx, `ANALYZE`); err != nil {
		t.Fatal(err)
	}
	before := now.Add(time.Minute)
	type planCase struct {
		name, index, query string
		args               []any
		sorts              bool // may sort what it read: a turn's few calls
	}
	tests := []planCase{
		{"pending items", "channel_inbox_pending",
			`SELECT id, order_key, accepted_at, payload FROM channel_inbox WHERE channel = ?1 AND done = 0 ORDER BY seq LIMIT ?2`,
			[]any{"telegram", 10}, false},
		{"cleanup", "channel_inbox_expiry", `DELETE FROM channel_inbox WHERE done = 1 AND expires_at < ?1`, []any{1}, false},
		// A month of conversations (their case bindings) is not scanned
		// every minute.
		{"conversations cleanup", "conversations_expiry", `DELETE FROM conversations WHERE expires_at < ?`, []any{1}, false},
		// The calls' views read a turn's calls through its row's key, for
		// one turn or a page of them, never the whole journal.
		{"a turn's model calls", "sqlite_autoindex_turns_1",
			`SELECT provider FROM llm_calls WHERE turn_id = ?1 ORDER BY seq`, []any{"turn-1"}, true},
		{"a page's tool calls", "sqlite_autoindex_turns_1",
			`SELECT turn_id, tool FROM tool_calls WHERE turn_id IN (?1, ?2) ORDER BY turn_id, seq`, []any{"turn-1", "turn-2"}, true},
	}
	for _, f := range []store.TurnFilter{
		{}, {Before: before}, {Status: "ok", Provider: "p1"}, {Chat: "c1", UserID: "u"}, {Chat: "c1", UserID: "u", Before: before},
	} {
		q, args := listQuery("t1", f)
		index := "turns_by_tenant"
		if f.Chat != "" {
			index = "turns_by_conversation"
		}
		tests = append(tests, planCase{fmt.Sprintf("list turns %+v", f), index, q, args, false})
	}
	for _, tt := range tests {
		rows, err := s.db.QueryContext(ctx, `EXPLAIN QUERY PLAN `+tt.query, tt.args...)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, notused int
			var detail string
			if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		p := strings.Join(plan, "\n")
		scansTurns := slices.ContainsFunc(plan, func(step string) bool { return step == "SCAN turns" || step == "SCAN t" })
		if !strings.Contains(p, "INDEX "+tt.index) || (!tt.sorts && strings.Contains(p, "TEMP B-TREE FOR ORDER BY")) || scansTurns {
			t.Errorf("%s: the plan does not read along %s:\n%s", tt.name, tt.index, p)
		} else {
			t.Logf("%s:\n%s", tt.name, p)
		}
	}
}

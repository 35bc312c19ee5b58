package redisstore

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/store"
	"github.com/arbiterhq/arbiter/store/storetest"
)

// TestMain quiets go-redis's own log: the outage tests make it report
// every refused dial.
func TestMain(m *testing.M) {
	redis.SetLogger(quiet{})
	os.Exit(m.Run())
}

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

// testURL is the server the tests use: $ARBITER_TEST_REDIS_URL, or the
// local default. Each test works under a prefix of its own and deletes its
// keys afterwards, so the database may be shared.
func testURL() string {
	if u := os.Getenv("ARBITER_TEST_REDIS_URL"); u != "" {
		return u
	}
	return "redis://127.0.0.1:6379/0"
}

// needRedis skips the test when the test server does not answer; the
// server is asked once per test binary.
func needRedis(t testing.TB) {
	t.Helper()
	if err := redisReachable(); err != nil {
		t.Skipf("no Redis at %s (%v); set ARBITER_TEST_REDIS_URL to run these tests", redactURL(testURL()), err)
	}
}

var redisReachable = sync.OnceValue(func() error {
	opt, err := redis.ParseURL(testURL())
	if err != nil {
		return err
	}
	opt.DialerRetries = 1
	c := redis.NewClient(opt)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return c.Ping(ctx).Err()
})

// openTest opens a store on the test server, under a fresh prefix unless
// opts names one (a second process sharing the first one's data), and
// deletes the prefix's keys when the test ends.
func openTest(t testing.TB, opts Options) *Store {
	t.Helper()
	needRedis(t)
	opts.URL = testURL()
	if opts.Prefix == "" {
		opts.Prefix = "arbiter-test:" + rand.Text() + ":"
	}
	s, err := Open(t.Context(), opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		dropPrefix(t, opts.Prefix)
	})
	return s
}

// dropPrefix deletes every key under prefix on the test server.
func dropPrefix(t testing.TB, prefix string) {
	t.Helper()
	opt, err := redis.ParseURL(testURL())
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opt)
	defer c.Close()
	ctx := context.Background()
	iter := c.Scan(ctx, 0, prefix+"*", 500).Iterator()
	var keys []string
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Errorf("scan %s*: %v", prefix, err)
		return
	}
	if len(keys) > 0 {
		if err := c.Unlink(ctx, keys...).Err(); err != nil {
			t.Errorf("delete %d keys under %s: %v", len(keys), prefix, err)
		}
	}
}

// stall stops the renewal of a lease of this package.
func stall(l store.Lease) { l.(*lease).paused.Store(true) }

func TestConformance(t *testing.T) {
	needRedis(t)
	storetest.Run(t, func(t *testing.T, clock *storetest.Clock, opts storetest.Options) storetest.Backend {
		s := openTest(t, Options{
			Now:             clock.Now,
			LockWait:        opts.LockWait,
			LockTTL:         opts.LockTTL,
			ConversationTTL: opts.ConversationTTL,
		})
		return storetest.Backend{State: s, Locker: s, Stall: stall, Waiters: s.queued}
	})
}

// queued reports how many Lock calls wait for the lock name.
func (s *Store) queued(name string) (int, error) {
	n, err := s.rdb.ZCard(context.Background(), s.lockKeys(name).lock[2]).Result()
	return int(n), err
}

func TestOptionsDefaults(t *testing.T) {
	o := Options{InboxTTL: time.Hour}.withDefaults()
	if o.Prefix != DefaultPrefix || o.LockWait != DefaultLockWait || o.LockTTL != DefaultLockTTL ||
		o.ConversationTTL != DefaultConversationTTL || o.PendingGrace != DefaultPendingGrace ||
		o.ExecutionTTL != DefaultExecutionTTL || o.Now == nil {
		t.Errorf("defaults = %+v", o)
	}
	if o.InboxTTL != 24*time.Hour {
		t.Errorf("InboxTTL of 1h became %v, want it raised to 24h", o.InboxTTL)
	}
	if got := (Options{}).FenceTTL(); got != MinFenceTTL {
		t.Errorf("default FenceTTL = %v, want %v", got, MinFenceTTL)
	}
	if got := (Options{InboxTTL: 30 * 24 * time.Hour}).FenceTTL(); got != 30*24*time.Hour {
		t.Errorf("FenceTTL with a 30-day inbox = %v, want 30 days", got)
	}
}

// TestKeys checks that distinct lock names and conversation keys never
// share Redis keys and that each name's keys share one hash tag.
func TestKeys(t *testing.T) {
	s := &Store{opts: Options{Prefix: "p:"}}
	names := []string{"a", "a}", "a}:mem", "{a}", "a%7D", "a%", "%", "", "t/c%2Fx/u"}
	seen := map[string]string{}
	for _, n := range names {
		tag := s.tag(n)
		if prev, dup := seen[tag]; dup {
			t.Errorf("names %q and %q share the tag %s", prev, n, tag)
		}
		seen[tag] = n
		// The hash tag is everything between the first '{' and the first
		// '}' after it: it must be the whole escaped name.
		open := len("p:")
		if tag[open] != '{' || tag[len(tag)-1] != '}' {
			t.Errorf("tag %q of %q is not braced", tag, n)
		}
		for i := open + 1; i < len(tag)-1; i++ {
			if tag[i] == '{' || tag[i] == '}' {
				t.Errorf("tag %q of %q has a brace inside", tag, n)
			}
		}
	}
	a := s.execKey("t/1", "k")
	b := s.execKey("t", "1/k")
	if a == b {
		t.Errorf("execution keys of (t/1, k) and (t, 1/k) are both %s", a)
	}
}

// TestCommitTurnRefused: the store is no journal, so a commit carrying a
// turn record fails with ErrNotJournal and writes nothing.
func TestCommitTurnRefused(t *testing.T) {
	s := openTest(t, Options{})
	key := chat.ConversationKey{Tenant: "t", Chat: "c", User: "u"}
	conv := store.Conversation{UpdatedAt: time.Now()}
	err := s.Commit(t.Context(), store.Commit{Key: key, Conversation: &conv, Turn: &store.TurnRecord{TurnID: "turn-1"}})
	if !errors.Is(err, ErrNotJournal) {
		t.Fatalf("Commit with a turn record: %v, want ErrNotJournal", err)
	}
	if _, err := s.LoadConversation(t.Context(), key); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("memory after the refused commit: %v, want ErrNotFound", err)
	}
}

// Memory is written in the compact form; a record written as JSON by an
// earlier version still loads.
func TestMemoryFormats(t *testing.T) {
	s := openTest(t, Options{})
	ctx := t.Context()
	now := time.Now()
	key := chat.ConversationKey{Tenant: "t", Chat: "c", User: "u"}
	conv := store.Conversation{StartedAt: now, UpdatedAt: now,
		Messages: []store.Message{{Role: store.RoleUser, Text: "привет", At: now}},
		Slots:    map[string]json.RawMessage{"skill": json.RawMessage(`"docs"`)}}
	if err := s.Commit(ctx, store.Commit{Key: key, Conversation: &conv}); err != nil {
		t.Fatal(err)
	}
	raw, err := s.rdb.Get(ctx, s.tag(key.String())+":mem").Result()
	if err != nil {
		t.Fatal(err)
	}
	if _, body, _ := strings.Cut(raw, "\n"); strings.HasPrefix(body, "{") {
		t.Errorf("memory stored as JSON: %q", body)
	}
	old := chat.ConversationKey{Tenant: "t", Chat: "old", User: "u"}
	body, _ := json.Marshal(conv)
	exp := strconv.FormatInt(now.Add(time.Hour).UnixMicro(), 10)
	if err := s.rdb.Set(ctx, s.tag(old.String())+":mem", exp+"\n"+string(body), time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	for _, k := range []chat.ConversationKey{key, old} {
		got, err := s.LoadConversation(ctx, k)
		if err != nil || len(got.Messages) != 1 || got.Messages[0].Text != "привет" || string(got.Slots["skill"]) != `"docs"` {
			t.Errorf("%s: %+v, %v", k, got, err)
		}
	}
}

// The memory key lives as long as the conversation's longest-lived part,
// on Redis's own clock too: a case bound for a month keeps the key a month
// (plus the margin), though the messages end in half an hour. Redis 7.0
// has no per-field expiry, so the parts share the key and a read drops
// the ones whose time passed.
func TestMemoryKeyLivesAsLongestPart(t *testing.T) {
	now := time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)
	s := openTest(t, Options{Now: func() time.Time { return now }})
	ctx := t.Context()
	key := chat.ConversationKey{Tenant: "t", Chat: "c", User: "u"}
	month := 30 * 24 * time.Hour
	conv := store.Conversation{UpdatedAt: now, MessagesUntil: now.Add(30 * time.Minute),
		Messages:   []store.Message{{Role: store.RoleUser, Text: "hi", At: now}},
		Slots:      map[string]json.RawMessage{"case": json.RawMessage(`{"ticket_id":"T-1"}`), "draft": json.RawMessage(`{}`)},
		SlotsUntil: map[string]time.Time{"case": now.Add(month), "draft": now.Add(24 * time.Hour)}}
	if err := s.Commit(ctx, store.Commit{Key: key, Conversation: &conv}); err != nil {
		t.Fatal(err)
	}
	ttl, err := s.rdb.PTTL(ctx, s.tag(key.String())+":mem").Result()
	if err != nil || ttl < month || ttl > month+expiryMargin {
		t.Fatalf("memory key PTTL = %v (%v), want the case's month plus at most %v", ttl, err, expiryMargin)
	}
	now = now.Add(7 * 24 * time.Hour)
	got, err := s.LoadConversation(ctx, key)
	if err != nil || len(got.Messages) != 0 || len(got.Slots) != 1 || got.Slots["case"] == nil {
		t.Errorf("a week on: %+v, %v; want only the case", got, err)
	}
}

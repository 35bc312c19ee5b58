// Package storetest is the conformance suite every store backend runs: Run
// opens fresh backends through a caller-supplied constructor and tries to
// break each contract of package store (state, lock and journal, and the
// optional channel inbox and turn listing where a backend offers them),
// using a settable fake Clock for every time decision.
//
// It holds the suite, the fake clock and the comparison helpers the suite
// needs. It holds no backend and no fake of one; backends live in their own
// packages (store/sqlitestore, ...) and call Run from their tests.
package storetest

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/store"
)

// Backend bundles the contracts one backend implements. State and Locker
// must be non-nil.
type Backend struct {
	State  store.State
	Locker store.Locker
	// Journal is nil for a backend that keeps no journal: the journal
	// subtests are skipped, and a Commit carrying a turn record must fail
	// and write nothing.
	Journal store.Journal
	// Stall is for a backend whose leases expire on its own real-time
	// clock (a TTL kept by a server) and renew themselves while held. It
	// stops the renewal of a lease, as if its holder's process had paused,
	// so that the lease runs out; the suite then waits LockTTL in real time
	// as well as advancing the Clock past it. Nil for a backend whose lease
	// expiry is judged on the Clock.
	Stall func(store.Lease)
	// Waiters, when set, reports how many Lock calls wait for key (the
	// holder not counted). The suite uses it to know that a Lock call it
	// started is queued before it starts the next; without it, it spaces
	// such calls out in time.
	Waiters func(key string) (int, error)
	// Inbox is the backend's channel inbox. When nil, State is used if it
	// implements store.ChannelInbox; the ChannelInbox subtests are skipped
	// for a backend with neither.
	Inbox store.ChannelInbox
}

// inbox returns the channel inbox b offers, or nil.
func (b Backend) inbox() store.ChannelInbox {
	if b.Inbox != nil {
		return b.Inbox
	}
	in, _ := b.State.(store.ChannelInbox)
	return in
}

// Options are the durations a backend must be opened with for one subtest.
// Durations not listed here are the backend's documented defaults, and the
// suite relies on them being at least: inbox records kept 24h after the
// claim, pending actions kept 24h past ExpiresAt, channel item ids
// remembered 24h after their acceptance.
type Options struct {
	// LockWait bounds how long Lock waits for a held key. It is real
	// (wall-clock) time: a waiting goroutine cannot be woken by a fake clock.
	LockWait time.Duration
	// LockTTL is how long a lease stays valid. Expiry is judged on the
	// clock; a backend whose storage expires leases on its own real-time
	// clock must also honour it, which is why tests that rely on expiry use
	// a short LockTTL.
	LockTTL time.Duration
	// ConversationTTL is how long a part of a conversation that states no
	// time of its own (Conversation.MessagesUntil, SlotsUntil) is kept,
	// sliding from Conversation.UpdatedAt, judged on the clock.
	ConversationTTL time.Duration
}

// defaultOptions are generous enough that no subtest hits a wait or TTL by
// accident, even under the race detector on a loaded machine.
func defaultOptions() Options {
	return Options{
		LockWait:        10 * time.Second,
		LockTTL:         time.Minute,
		ConversationTTL: 30 * time.Minute,
	}
}

// Run runs the conformance suite. open must return a fresh, empty backend
// that takes every time decision from clock.Now and uses the durations in
// opts; it registers its own cleanup with t.Cleanup. open is called once per
// subtest, possibly from parallel subtests.
//
// Two conventions the suite relies on, which the engine shares: a
// conversation is locked under the key ConversationKey.String(), and Commit
// checks its Fence against the grants of that lock key. Where package store
// leaves a case open, the suite pins it down:
//   - a Commit with Fence 0 is accepted on a key that was never locked (the
//     state subtests commit that way) and refused with ErrFenced while a
//     lease of the key is granted;
//   - FinishExecution of a record never begun returns ErrNotFound;
//   - expiry is inclusive: a record is still there at exactly its TTL;
//   - Lock returns an error wrapping ctx.Err() when ctx ends the wait;
//   - Lock is fair: calls waiting for a key are granted in the order they
//     were made, and a call made while others wait queues behind them.
//
// A journal that implements store.TurnLister runs the ListTurns subtests
// (under Journal); one that does not skips them. A backend whose State (or
// Backend.Inbox) implements store.ChannelInbox runs the ChannelInbox
// subtests, which pin down more open cases:
//   - a channel item's Payload round-trips byte for byte (an empty one
//     comes back empty), and its other fields exactly;
//   - an item accepted with a zero AcceptedAt gets the clock's time;
//   - Pending with n <= 0 returns no items and no error;
//   - a duplicate Accept changes nothing of the stored item.
//
// A backend whose State implements store.Actions runs the Actions
// subtests: round trip, lists newest first by status, exactly one of
// concurrent updates from one status wins, tenants apart.
//
// The Lifetimes subtests check that a conversation's parts live for the
// times their committer states (store.Conversation.MessagesUntil,
// SlotsUntil), with the clock moved across a day, a week and a month, each
// part ending on its own; a backend with store.Actions also keeps an
// action, whatever became of its conversation.
//
// Times in records must round-trip at least to the microsecond; the suite's
// clock starts on a microsecond boundary and moves in whole seconds or more.
func Run(t *testing.T, open func(t *testing.T, clock *Clock, opts Options) Backend) {
	t.Helper()
	suites := []struct {
		name  string
		tests []subtest
	}{
		{"State", stateTests},
		{"Lock", lockTests},
		{"Journal", journalTests},
		{"ChannelInbox", channelTests},
		{"Actions", actionTests},
		{"Lifetimes", lifetimeTests},
	}
	for _, s := range suites {
		t.Run(s.name, func(t *testing.T) {
			for _, st := range s.tests {
				t.Run(st.name, func(t *testing.T) {
					t.Parallel()
					opts := st.options()
					clock := NewClock(startTime)
					b := open(t, clock, opts)
					if b.State == nil || b.Locker == nil {
						t.Fatalf("open returned an incomplete Backend: %+v", b)
					}
					st.run(t, env{s: b.State, l: b.Locker, j: b.Journal, in: b.inbox(), stall: b.Stall,
						waiters: b.Waiters, clock: clock, opts: opts})
				})
			}
		})
	}
}

// subtest is one named check; opts, when set, adjusts the options its
// backend is opened with.
type subtest struct {
	name string
	opts func(*Options)
	run  func(t *testing.T, e env)
}

// options are the defaults as the subtest changes them.
func (st subtest) options() Options {
	opts := defaultOptions()
	if st.opts != nil {
		st.opts(&opts)
	}
	return opts
}

// env is what a subtest works on.
type env struct {
	s       store.State
	l       store.Locker
	j       store.Journal      // nil for a backend without a journal
	in      store.ChannelInbox // nil for a backend without a channel inbox
	stall   func(store.Lease)
	waiters func(key string) (int, error) // nil when the backend cannot tell
	clock   *Clock
	opts    Options
}

// startTime is on a microsecond boundary so that every backend able to keep
// microseconds round-trips the suite's times exactly.
var startTime = time.Date(2026, 3, 14, 9, 26, 53, 589793000, time.UTC)

// Clock is a settable fake clock. Safe for concurrent use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock that reads start until moved.
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

// Now returns the clock's current time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d (backward if d is negative).
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

// testKey returns a conversation key whose parts contain the characters the
// key encoding escapes, so backends that build their own keys are exercised.
func testKey(tenant, chatID string) chat.ConversationKey {
	return chat.ConversationKey{Tenant: tenant, Chat: chatID + "/%x", User: "u-1"}
}

// jsonEqual reports whether a and b hold the same JSON value; two empty
// inputs are equal. Backends may re-encode JSON (key order, whitespace).
func jsonEqual(a, b []byte) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

func checkConversation(t *testing.T, what string, got, want store.Conversation) {
	t.Helper()
	if !got.StartedAt.Equal(want.StartedAt) || !got.UpdatedAt.Equal(want.UpdatedAt) {
		t.Errorf("%s: times = (%v, %v), want (%v, %v)", what, got.StartedAt, got.UpdatedAt, want.StartedAt, want.UpdatedAt)
	}
	if len(got.Messages) != len(want.Messages) {
		t.Fatalf("%s: %d messages, want %d", what, len(got.Messages), len(want.Messages))
	}
	for i := range want.Messages {
		g, w := got.Messages[i], want.Messages[i]
		if g.Role != w.Role || g.Text != w.Text || g.Name != w.Name || g.Source != w.Source || !g.At.Equal(w.At) {
			t.Errorf("%s: message %d = %+v, want %+v", what, i, g, w)
		}
	}
	if len(got.Slots) != len(want.Slots) {
		t.Errorf("%s: %d slots, want %d", what, len(got.Slots), len(want.Slots))
	}
	for k, w := range want.Slots {
		if g, ok := got.Slots[k]; !ok || !jsonEqual(g, w) {
			t.Errorf("%s: slot %q = %s, want %s", what, k, g, w)
		}
	}
}

func checkPending(t *testing.T, what string, got, want store.PendingAction) {
	t.Helper()
	if got.ID != want.ID || got.Key != want.Key || got.Tool != want.Tool ||
		got.ArgsHash != want.ArgsHash || got.IdempotencyKey != want.IdempotencyKey ||
		got.TurnID != want.TurnID || !jsonEqual(got.Args, want.Args) ||
		!got.CreatedAt.Equal(want.CreatedAt) || !got.ExpiresAt.Equal(want.ExpiresAt) {
		t.Errorf("%s: pending = %+v (args %s), want %+v (args %s)", what, got, got.Args, want, want.Args)
	}
}

func checkExecution(t *testing.T, what string, got, want store.ExecutionRecord) {
	t.Helper()
	if got.Tenant != want.Tenant || got.IdempotencyKey != want.IdempotencyKey ||
		got.Tool != want.Tool || got.ArgsHash != want.ArgsHash || got.TurnID != want.TurnID ||
		got.State != want.State || !jsonEqual(got.Result, want.Result) || !jsonEqual(got.Args, want.Args) ||
		got.Key != want.Key || got.MessageID != want.MessageID ||
		!got.StartedAt.Equal(want.StartedAt) || !got.FinishedAt.Equal(want.FinishedAt) {
		t.Errorf("%s: execution = %+v (result %s), want %+v (result %s)", what, got, got.Result, want, want.Result)
	}
}

func checkTurn(t *testing.T, what string, got, want store.TurnRecord) {
	t.Helper()
	if got.TurnID != want.TurnID || got.Tenant != want.Tenant || got.Chat != want.Chat ||
		got.UserID != want.UserID || got.Route != want.Route || got.Status != want.Status ||
		!got.StartedAt.Equal(want.StartedAt) || got.DurationMS != want.DurationMS {
		t.Errorf("%s: turn = %+v, want %+v", what, got, want)
	}
	if !jsonEqual(got.Trace, want.Trace) {
		t.Errorf("%s: trace = %s, want %s", what, got.Trace, want.Trace)
	}
	wantCalls(t, what, "llm call", got.LLMCalls, want.LLMCalls, func(c *store.LLMCall) *time.Time { return &c.At })
	wantCalls(t, what, "tool call", got.ToolCalls, want.ToolCalls, func(c *store.ToolCall) *time.Time { return &c.At })
}

// idsOf lists the ids of items, in order, as id reads them.
func idsOf[T any](items []T, id func(T) string) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = id(it)
	}
	return out
}

// wantIDList checks a list of ids, in order, against want; what names the
// list in the error.
func wantIDList(t *testing.T, what string, got, want []string) {
	t.Helper()
	if len(got) != len(want) || strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("%s %q, want %q", what, got, want)
	}
}

// wantCalls compares a turn's calls of one kind: the same fields, and At
// (reached through at) the same instant, whatever its location.
func wantCalls[C comparable](t *testing.T, what, kind string, got, want []C, at func(*C) *time.Time) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d %ss, want %d", what, len(got), kind, len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		gAt, wAt := *at(&g), *at(&w)
		*at(&g), *at(&w) = time.Time{}, time.Time{}
		if g != w || !gAt.Equal(wAt) {
			t.Errorf("%s: %s %d = %+v at %v, want %+v at %v", what, kind, i, g, gAt, w, wAt)
		}
	}
}

// BenchConversation is the conversation the backends' benchmarks commit:
// sixteen messages, the user's and the assistant's in turn, all at now.
func BenchConversation(now time.Time) store.Conversation {
	conv := store.Conversation{StartedAt: now, UpdatedAt: now}
	for i := range 16 {
		role := store.RoleUser
		if i%2 == 1 {
			role = store.RoleAssistant
		}
		conv.Messages = append(conv.Messages, store.Message{
			Role: role, At: now,
			Text: fmt.Sprintf("message %d: please move the card about the quarterly report to done and tell me what is left", i),
		})
	}
	return conv
}

// WaitQueued waits until queued, the length of a backend's queue of
// grouped writes (what names them), is n, failing the test after 5 s.
func WaitQueued(t *testing.T, what string, n int, queued func() int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		got := queued()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d %s queued, want %d", got, what, n)
		}
	}
}

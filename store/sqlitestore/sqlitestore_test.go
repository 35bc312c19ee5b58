package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/store"
	"github.com/arbiterhq/arbiter/store/storetest"
)

// openTest opens a store with opts on a new file in t's temporary
// directory, closed when the test ends.
func openTest(t testing.TB, opts Options) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "s.db"), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	// Without the cache every read goes to SQLite; with a tiny one entries
	// are evicted all the time.
	for _, cacheBytes := range []int{0, -1, 600} {
		t.Run(fmt.Sprintf("cache=%d", cacheBytes), func(t *testing.T) {
			storetest.Run(t, func(t *testing.T, clock *storetest.Clock, opts storetest.Options) storetest.Backend {
				s, err := Open(filepath.Join(t.TempDir(), "sub", "dir", "arbiter.db"), Options{
					Now:             clock.Now,
					LockWait:        opts.LockWait,
					LockTTL:         opts.LockTTL,
					ConversationTTL: opts.ConversationTTL,
					CacheBytes:      cacheBytes,
				})
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				t.Cleanup(func() {
					if err := s.Close(); err != nil {
						t.Errorf("Close: %v", err)
					}
				})
				return storetest.Backend{State: s, Locker: s, Journal: s}
			})
		})
	}
}

// TestReopen checks that data, the schema and fence monotonicity survive
// Close and Open of the same file.
func TestReopen(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "a?b#c%d.db") // characters a file URI must escape
	clock := storetest.NewClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	open := func() *Store {
		t.Helper()
		s, err := Open(path, Options{Now: clock.Now})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return s
	}
	key := chat.ConversationKey{Tenant: "t1", Chat: "c1", User: "u1"}

	s := open()
	lease, err := s.Lock(ctx, key.String())
	if err != nil {
		t.Fatalf("Lock: %v", err)
	}
	first := lease.Fence()
	conv := store.Conversation{
		Messages:  []store.Message{{Role: store.RoleUser, Text: "hello", At: clock.Now()}},
		StartedAt: clock.Now(), UpdatedAt: clock.Now(),
	}
	if err := s.Commit(ctx, store.Commit{Key: key, Fence: first, Conversation: &conv}); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	for _, msg := range []string{"done", "open", "paying"} {
		if _, _, err := s.ClaimMessage(ctx, key, msg, "turn-"+msg, clock.Now()); err != nil {
			t.Fatalf("ClaimMessage(%s): %v", msg, err)
		}
	}
	// A side effect began for "paying": its claim is durable from then on.
	if _, _, err := s.BeginExecution(ctx, store.ExecutionRecord{Tenant: "t1", IdempotencyKey: "msg-paying-1",
		Tool: "pay", Args: json.RawMessage(`{"amount":5}`), TurnID: "turn-paying", Key: key, MessageID: "paying"}); err != nil {
		t.Fatalf("BeginExecution: %v", err)
	}
	if err := s.Commit(ctx, store.Commit{Key: key, Fence: first, MessageID: "done", Reply: json.RawMessage(`"r"`)}); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if err := s.AppendTurn(ctx, store.TurnRecord{TurnID: "turn-1", Tenant: "t1", StartedAt: clock.Now()}); err != nil {
		t.Fatalf("AppendTurn: %v", err)
	}
	lease.Release()
	// A grant that never commits must not be reissued after reopen either.
	lease, err = s.Lock(ctx, key.String())
	if err != nil {
		t.Fatalf("Lock: %v", err)
	}
	second := lease.Fence()
	lease.Release()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := s.LoadConversation(ctx, key); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("LoadConversation after Close: %v, want ErrUnavailable", err)
	}
	if _, err := s.Lock(ctx, key.String()); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Lock after Close: %v, want ErrUnavailable", err)
	}

	for round := range 2 {
		s = open()
		got, err := s.LoadConversation(ctx, key)
		if err != nil || len(got.Messages) != 1 || got.Messages[0].Text != "hello" {
			t.Fatalf("round %d: LoadConversation after reopen = %+v, %v", round, got, err)
		}
		if _, err := s.GetTurn(ctx, "t1", "turn-1"); err != nil {
			t.Fatalf("round %d: GetTurn after reopen: %v", round, err)
		}
		if rec, claimed, err := s.ClaimMessage(ctx, key, "done", "turn-x", clock.Now()); err != nil || claimed ||
			!rec.Done || rec.TurnID != "turn-done" || string(rec.Reply) != `"r"` {
			t.Errorf("round %d: completed message after reopen = %+v, claimed=%v, %v", round, rec, claimed, err)
		}
		// A claim whose turn began a side effect survives, not done: the
		// redelivery looks for the execution instead of deciding afresh.
		if rec, claimed, err := s.ClaimMessage(ctx, key, "paying", "turn-z", clock.Now()); err != nil || claimed ||
			rec.Done || rec.TurnID != "turn-paying" {
			t.Errorf("round %d: claim of an interrupted write after reopen = %+v, claimed=%v, %v; want turn-paying's, not done", round, rec, claimed, err)
		}
		if rec, err := s.GetExecution(ctx, "t1", "msg-paying-1"); err != nil || string(rec.Args) != `{"amount":5}` ||
			rec.MessageID != "paying" || rec.Key != key || rec.State != store.ExecStarted {
			t.Errorf("round %d: execution after reopen = %+v, %v", round, rec, err)
		}
		// A claim whose turn never committed (nor began a side effect) is
		// not kept across reopen: the message is processed afresh (see inbox).
		if round == 0 {
			if _, claimed, err := s.ClaimMessage(ctx, key, "open", "turn-y", clock.Now()); err != nil || !claimed {
				t.Errorf("uncompleted claim after reopen: claimed=%v, %v; want a fresh claim", claimed, err)
			}
		}
		lease, err := s.Lock(ctx, key.String())
		if err != nil {
			t.Fatalf("round %d: Lock after reopen: %v", round, err)
		}
		if lease.Fence() <= second {
			t.Errorf("round %d: fence after reopen = %d, want > %d", round, lease.Fence(), second)
		}
		second = lease.Fence()
		// The stale fence from before the reopen is refused.
		if err := s.Commit(ctx, store.Commit{Key: key, Fence: first, Conversation: &conv}); !errors.Is(err, store.ErrFenced) {
			t.Errorf("round %d: commit with a fence from before reopen: %v, want ErrFenced", round, err)
		}
		lease.Release()
		if err := s.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
}

// TestStaleFenceAfterRelease commits memory with the fence of a lease that
// was released after a newer one committed: the fence stored with the memory
// refuses it even though the in-memory grant is gone.
func TestStaleFenceAfterRelease(t *testing.T) {
	ctx := t.Context()
	s := openTest(t, Options{})
	key := chat.ConversationKey{Tenant: "t", Chat: "c", User: "u"}
	a, _ := s.Lock(ctx, key.String())
	a.Release()
	b, _ := s.Lock(ctx, key.String())
	conv := store.Conversation{UpdatedAt: time.Now()}
	if err := s.Commit(ctx, store.Commit{Key: key, Fence: b.Fence(), Conversation: &conv}); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	b.Release()
	if err := s.Commit(ctx, store.Commit{Key: key, Fence: a.Fence(), Conversation: &conv}); !errors.Is(err, store.ErrFenced) {
		t.Errorf("commit with a stale fence after release: %v, want ErrFenced", err)
	}
	if n := len(s.locks.keys); n != 0 {
		t.Errorf("%d lock entries left after every lease was released", n)
	}
}

// TestLockStress has many goroutines lock a few keys with short deadlines,
// some of them abandoning their wait; afterwards no lock state is left.
func TestLockStress(t *testing.T) {
	s := openTest(t, Options{LockWait: 20 * time.Millisecond})
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		holders = map[string]int{}
		last    = map[string]int64{}
	)
	for g := range 16 {
		wg.Go(func() {
			for i := range 50 {
				key := fmt.Sprintf("k%d", (g+i)%3)
				ctx, cancel := context.WithTimeout(t.Context(), time.Duration(i%4)*5*time.Millisecond+time.Millisecond)
				lease, err := s.Lock(ctx, key)
				cancel()
				if err != nil {
					if !errors.Is(err, store.ErrLockTimeout) && !errors.Is(err, context.DeadlineExceeded) {
						t.Errorf("Lock: %v", err)
					}
					continue
				}
				mu.Lock()
				holders[key]++
				if holders[key] != 1 {
					t.Errorf("%d holders of %s", holders[key], key)
				}
				if lease.Fence() <= last[key] {
					t.Errorf("fence %d of %s after %d", lease.Fence(), key, last[key])
				}
				last[key] = lease.Fence()
				mu.Unlock()
				time.Sleep(time.Duration(i%3) * time.Millisecond)
				mu.Lock()
				holders[key]--
				mu.Unlock()
				lease.Release()
			}
		})
	}
	wg.Wait()
	s.locks.mu.Lock()
	defer s.locks.mu.Unlock()
	if n := len(s.locks.keys); n != 0 {
		t.Errorf("%d lock entries left after every lease was released", n)
	}
}

func TestCacheEvicts(t *testing.T) {
	var c cache
	c.init(4 * (entryOverhead + 100))
	check := func() {
		t.Helper()
		n, size := 0, 0
		for e := c.lru.next; e != &c.lru; e = e.next {
			if c.m[e.key] != e {
				t.Fatalf("listed entry %v missing from the map", e.key)
			}
			n, size = n+1, size+e.size
		}
		if n != len(c.m) || size != c.size || c.size > c.limit {
			t.Fatalf("%d listed, %d mapped, size %d counted %d, limit %d", n, len(c.m), size, c.size, c.limit)
		}
	}
	key := func(i int) chat.ConversationKey { return chat.ConversationKey{Tenant: "t", Chat: strconv.Itoa(i)} }
	for i := range 10 {
		e := c.put(key(i))
		c.setMemory(e, make([]byte, 100), 1)
		c.setPending(e, nil, 0)
		check()
	}
	if len(c.m) != 4 || c.get(key(9)) == nil || c.get(key(5)) != nil {
		t.Fatalf("after 10 puts the cache holds %d entries; want the last 4", len(c.m))
	}
	// Use 6, then add one: 7, the least recently used, goes.
	c.get(key(6))
	c.setMemory(c.put(key(10)), make([]byte, 100), 1)
	check()
	if c.get(key(7)) != nil || c.get(key(6)) == nil {
		t.Errorf("LRU evicted the wrong entry")
	}
	// An entry too large for the cache is evicted at once; setting it
	// again must not corrupt the accounting.
	big := c.put(key(11))
	c.setMemory(big, make([]byte, c.limit), 1)
	c.setPending(big, &store.PendingAction{Args: make([]byte, 10)}, 1)
	check()
	c.sweep(2)
	check()
	if len(c.m) != 0 {
		t.Errorf("sweep kept %d expired entries", len(c.m))
	}
}

// BenchmarkTurnState measures the store's share of one turn: load a
// 16-message memory, claim the message id, commit the new memory together
// with the inbox completion.
func BenchmarkTurnState(b *testing.B) {
	for _, locked := range []bool{false, true} {
		b.Run(fmt.Sprintf("lock=%v", locked), func(b *testing.B) {
			s := openTest(b, Options{})
			ctx := context.Background()
			key := chat.ConversationKey{Tenant: "tenant-1", Chat: "chat-1", User: "user-1"}
			now := time.Now()
			conv := storetest.BenchConversation(now)
			if err := s.Commit(ctx, store.Commit{Key: key, Conversation: &conv}); err != nil {
				b.Fatal(err)
			}
			reply := json.RawMessage(`{"turn_id":"t","say":"Done: the card is in Done now.","buttons":[],"pending":null,"executed":[],"duplicate":false}`)
			lockKey := key.String()
			b.ReportAllocs()
			// Process CPU (user + system, all threads) is what the budget is
			// about: SQLite's system calls and the GC count, waits do not.
			var cpu0 time.Duration
			i := 0
			for b.Loop() {
				if i++; i == 1 {
					cpu0 = processCPU()
				}
				var fence int64
				var lease store.Lease
				if locked {
					var err error
					if lease, err = s.Lock(ctx, lockKey); err != nil {
						b.Fatal(err)
					}
					fence = lease.Fence()
				}
				c, err := s.LoadConversation(ctx, key)
				if err != nil {
					b.Fatal(err)
				}
				msgID := "m-" + strconv.Itoa(i)
				if _, claimed, err := s.ClaimMessage(ctx, key, msgID, msgID, now); err != nil || !claimed {
					b.Fatal(claimed, err)
				}
				// A new text every turn, as in life: SQLite skips rewriting a
				// row whose bytes did not change.
				c.Messages = append(c.Messages[1:], store.Message{Role: store.RoleUser, Text: "next " + msgID, At: now})
				if err := s.Commit(ctx, store.Commit{Key: key, Fence: fence, Conversation: &c, MessageID: msgID, Reply: reply}); err != nil {
					b.Fatal(err)
				}
				if lease != nil {
					lease.Release()
				}
			}
			if cpu := processCPU() - cpu0; cpu0 > 0 && i > 0 {
				b.ReportMetric(float64(cpu.Nanoseconds())/1e3/float64(i), "cpu-µs/op")
			}
		})
	}
}

// A tenant's actions are listed after a restart too: the index of tenants
// with actions, which answers for a tenant without any, is rebuilt from
// the file.
func TestActionsListedAfterReopen(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "actions.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	a := store.Action{ID: "a1", Tenant: "t1", Tool: "create_refund", Status: store.ActionProposed, CreatedAt: time.Now()}
	if err := s.PutAction(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(path, Options{}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, status := range []string{"", store.ActionProposed} {
		list, err := s.ListActions(ctx, "t1", status, 10)
		if err != nil || len(list) != 1 || list[0].ID != "a1" {
			t.Errorf("status %q: %+v, %v", status, list, err)
		}
	}
	if list, err := s.ListActions(ctx, "t2", "", 10); err != nil || len(list) != 0 {
		t.Errorf("another tenant: %+v, %v", list, err)
	}
}

// BenchmarkBareTransaction is the floor under the store's writes: a
// transaction of the store's own settings (WAL, synchronous=NORMAL) that
// inserts rows rows of a turn's size into a scratch table with one index,
// on one connection — what any durable write of a turn costs at least.
func BenchmarkBareTransaction(b *testing.B) {
	for _, rows := range []int{1, 7} {
		b.Run(fmt.Sprintf("rows=%d", rows), func(b *testing.B) {
			s := openTest(b, Options{})
			ctx := context.Background()
			conn, err := s.DB().Conn(ctx)
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close()
			if _, err := conn.ExecContext(ctx, `CREATE TABLE scratch (id INTEGER PRIMARY KEY, k TEXT, at INTEGER, body TEXT);
				CREATE INDEX scratch_at ON scratch (at)`); err != nil {
				b.Fatal(err)
			}
			body := strings.Repeat("x", 200)
			var cpu0 time.Duration
			i := 0
			for b.Loop() {
				if i++; i == 1 {
					cpu0 = processCPU()
				}
				mustExec(b, conn, `BEGIN IMMEDIATE`)
				for r := range rows {
					mustExec(b, conn, `INSERT INTO scratch (k, at, body) VALUES (?, ?, ?)`, strconv.Itoa(r), i, body)
				}
				mustExec(b, conn, `COMMIT`)
			}
			if cpu := processCPU() - cpu0; cpu0 > 0 && i > 0 {
				b.ReportMetric(float64(cpu.Nanoseconds())/1e3/float64(i), "cpu-µs/op")
			}
		})
	}
}

func mustExec(b *testing.B, conn *sql.Conn, query string, args ...any) {
	if _, err := conn.ExecContext(context.Background(), query, args...); err != nil {
		b.Fatal(err)
	}
}

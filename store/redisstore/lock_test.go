package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/store"
	"github.com/arbiterhq/arbiter/store/storetest"
)

// shortTTL is the lock TTL of tests that let leases expire: real time,
// since Redis expires them on its own clock.
const shortTTL = 300 * time.Millisecond

func waitLost(t *testing.T, what string, l store.Lease, within time.Duration) {
	t.Helper()
	select {
	case <-l.Lost():
	case <-time.After(within):
		t.Fatalf("%s: Lost not closed within %v", what, within)
	}
}

// staleRelease plays a holder A whose lease ran out (its process stalled)
// and was granted to B, and then releases A. It reports whether B still
// holds the lock afterwards.
func staleRelease(t *testing.T, s *Store) error {
	key := fmt.Sprintf("owner-%d", time.Now().UnixNano())
	a := storetest.MustLock(t, s, key)
	stall(a)
	b := storetest.MustLock(t, s, key) // granted once a's TTL ran out
	defer b.Release()
	a.Release()
	ctx, cancel := context.WithTimeout(t.Context(), 2*shortTTL)
	defer cancel()
	if c, err := s.Lock(ctx, key); err == nil {
		c.Release()
		return errors.New("the stale holder's release freed the new holder's lock")
	}
	holder, err := s.rdb.Get(t.Context(), s.tag(key)+":lock").Result()
	if err != nil || holder != b.(*lease).token {
		return fmt.Errorf("lock holds %q (%v), want the new holder's token", holder, err)
	}
	return nil
}

// TestReleaseOwnerOnly: a lease that expired and was granted to B is not
// released by its former holder A. The same scenario with release as a plain
// DEL must fail, which shows the test can tell the two apart.
func TestReleaseOwnerOnly(t *testing.T) {
	s := openTest(t, Options{LockTTL: shortTTL, LockWait: 5 * time.Second})
	if err := staleRelease(t, s); err != nil {
		t.Errorf("compare-and-delete release: %v", err)
	}

	del := openTest(t, Options{LockTTL: shortTTL, LockWait: 5 * time.Second})
	del.releaseScript = redis.NewScript(`return redis.call('DEL', KEYS[1])`)
	if err := staleRelease(t, del); err == nil {
		t.Errorf("a plain DEL release passed the owner-only scenario; the test proves nothing")
	}
}

// TestRenewalKeepsLongTurn holds a lease for many TTLs: it renews itself,
// so nobody else gets the lock, it is not lost and its commit is accepted.
// When the lock disappears (deleted here, as by a takeover after expiry),
// the next renewal notices and Lost closes.
func TestRenewalKeepsLongTurn(t *testing.T) {
	s := openTest(t, Options{LockTTL: shortTTL, LockWait: 4 * shortTTL})
	ck := chat.ConversationKey{Tenant: "t", Chat: "long", User: "u"}
	a := storetest.MustLock(t, s, ck.String())
	defer a.Release()

	start := time.Now()
	_, err := s.Lock(t.Context(), ck.String())
	if !errors.Is(err, store.ErrLockTimeout) {
		t.Fatalf("Lock while a renewing lease is held: %v, want ErrLockTimeout", err)
	}
	if held := time.Since(start); held < 3*shortTTL {
		t.Fatalf("the wait ended after %v, before several TTLs", held)
	}
	select {
	case <-a.Lost():
		t.Fatalf("a renewing lease reports Lost after %v", time.Since(start))
	default:
	}
	pttl, err := s.rdb.PTTL(t.Context(), s.tag(ck.String())+":lock").Result()
	if err != nil || pttl <= 0 || pttl > shortTTL {
		t.Errorf("lock PTTL after %v = %v (%v), want within (0, %v]", time.Since(start), pttl, err, shortTTL)
	}
	conv := store.Conversation{UpdatedAt: time.Now()}
	if err := s.Commit(t.Context(), store.Commit{Key: ck, Fence: a.Fence(), Conversation: &conv}); err != nil {
		t.Errorf("commit of the long turn: %v", err)
	}

	if err := s.rdb.Del(t.Context(), s.tag(ck.String())+":lock").Err(); err != nil {
		t.Fatal(err)
	}
	waitLost(t, "lease whose lock disappeared", a, 2*shortTTL)
}

// TestStalledHolderFenced: holder A (fence 33) stalls past its TTL, B in
// another process takes the lock (fence 34) and commits; A's commit is
// refused with ErrFenced and nothing of it is visible.
func TestStalledHolderFenced(t *testing.T) {
	pa := openTest(t, Options{LockTTL: shortTTL, LockWait: 5 * time.Second})
	pb := openTest(t, Options{LockTTL: shortTTL, LockWait: 5 * time.Second, Prefix: pa.opts.Prefix})
	ctx, now := t.Context(), time.Now()
	ck := chat.ConversationKey{Tenant: "t", Chat: "c", User: "u"}
	if err := pa.rdb.Set(ctx, pa.tag(ck.String())+":fence", 32, 0).Err(); err != nil {
		t.Fatal(err)
	}
	for _, msg := range []string{"m-a", "m-b"} {
		if _, claimed, err := pa.ClaimMessage(ctx, ck, msg, "turn-"+msg, now); err != nil || !claimed {
			t.Fatalf("ClaimMessage(%s) = %v, %v", msg, claimed, err)
		}
	}

	a := storetest.MustLock(t, pa, ck.String())
	defer a.Release()
	if a.Fence() != 33 {
		t.Fatalf("A's fence = %d, want 33", a.Fence())
	}
	stall(a) // A's process pauses
	b := storetest.MustLock(t, pb, ck.String())
	defer b.Release()
	if b.Fence() != 34 {
		t.Fatalf("B's fence = %d, want 34", b.Fence())
	}
	waitLost(t, "A after B took over", a, 2*shortTTL)

	// Each turn commits through its own process's store.
	turn := func(st *Store, who string, fence int64) error {
		conv := store.Conversation{StartedAt: now, UpdatedAt: now,
			Messages: []store.Message{{Role: store.RoleUser, Text: "from " + who, At: now}}}
		p := store.PendingAction{ID: "p-" + who, Tool: "create_card", Args: json.RawMessage(`{}`),
			CreatedAt: now, ExpiresAt: now.Add(time.Minute)}
		return st.Commit(ctx, store.Commit{Key: ck, Fence: fence, Conversation: &conv, PutPending: &p,
			MessageID: "m-" + who, Reply: json.RawMessage(`"reply ` + who + `"`)})
	}
	if err := turn(pb, "b", b.Fence()); err != nil {
		t.Fatalf("B's commit: %v", err)
	}
	if err := turn(pa, "a", a.Fence()); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("A's commit after B's: %v, want ErrFenced", err)
	}

	conv, err := pb.LoadConversation(ctx, ck)
	if err != nil || len(conv.Messages) != 1 || conv.Messages[0].Text != "from b" {
		t.Errorf("memory = %+v, %v; want B's", conv, err)
	}
	if p, err := pb.GetPending(ctx, ck); err != nil || p.ID != "p-b" {
		t.Errorf("pending = %+v, %v; want B's", p, err)
	}
	if rec, _, err := pb.ClaimMessage(ctx, ck, "m-a", "turn-x", now); err != nil || rec.Done {
		t.Errorf("A's inbox record = %+v, %v; want it not completed", rec, err)
	}
	if rec, _, err := pb.ClaimMessage(ctx, ck, "m-b", "turn-x", now); err != nil || !rec.Done || string(rec.Reply) != `"reply b"` {
		t.Errorf("B's inbox record = %+v, %v; want it done with B's reply", rec, err)
	}
}

// TestFenceSurvivesLostCounter: when the fence counter is gone (expired, or
// the server restarted empty), the next grant still gets a fence above
// every earlier one, so an old holder stays fenced.
func TestFenceSurvivesLostCounter(t *testing.T) {
	s := openTest(t, Options{})
	ck := chat.ConversationKey{Tenant: "t", Chat: "c", User: "u"}
	fenceKey := s.tag(ck.String()) + ":fence"
	var old int64
	for range 3 {
		l := storetest.MustLock(t, s, ck.String())
		if l.Fence() <= old {
			t.Fatalf("fence %d after %d", l.Fence(), old)
		}
		old = l.Fence()
		l.Release()
		if err := s.rdb.Del(t.Context(), fenceKey).Err(); err != nil {
			t.Fatal(err)
		}
	}
	l := storetest.MustLock(t, s, ck.String())
	defer l.Release()
	if l.Fence() <= old {
		t.Fatalf("fence after the counter was lost = %d, want > %d", l.Fence(), old)
	}
	conv := store.Conversation{UpdatedAt: time.Now()}
	if err := s.Commit(t.Context(), store.Commit{Key: ck, Fence: old, Conversation: &conv}); !errors.Is(err, store.ErrFenced) {
		t.Errorf("commit with a fence from before the counter was lost: %v, want ErrFenced", err)
	}
	ttl, err := s.rdb.PTTL(t.Context(), fenceKey).Result()
	if err != nil || ttl <= s.opts.LockTTL || ttl > s.fenceTTL {
		t.Errorf("fence counter PTTL = %v (%v), want about %v", ttl, err, s.fenceTTL)
	}
}

// TestLockCanceledAttemptLeavesNothing: a Lock whose context ends while it
// waits leaves no lock behind, so the key is free at once after release.
func TestLockCanceledAttemptLeavesNothing(t *testing.T) {
	s := openTest(t, Options{})
	a := storetest.MustLock(t, s, "k")
	for range 5 {
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
		if l, err := s.Lock(ctx, "k"); err == nil {
			l.Release()
			t.Fatal("Lock of a held key succeeded")
		}
		cancel()
	}
	a.Release()
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	l, err := s.Lock(ctx, "k")
	if err != nil {
		t.Fatalf("Lock after release: %v", err)
	}
	l.Release()
}

// The holder reads what its grant found until it writes; after that its
// reads go to Redis, so it never sees its own taken action or old memory.
func TestGrantSnapshotFollowsTheHoldersWrites(t *testing.T) {
	s := openTest(t, Options{})
	ctx, now := t.Context(), time.Now()
	key := chat.ConversationKey{Tenant: "t", Chat: "c", User: "u"}
	conv := func(text string) *store.Conversation {
		return &store.Conversation{StartedAt: now, UpdatedAt: now, Messages: []store.Message{{Role: store.RoleUser, Text: text, At: now}}}
	}
	p := store.PendingAction{ID: "p-1", Tool: "create_card", Args: json.RawMessage(`{}`), CreatedAt: now, ExpiresAt: now.Add(time.Minute)}
	if err := s.Commit(ctx, store.Commit{Key: key, Conversation: conv("before"), PutPending: &p}); err != nil {
		t.Fatal(err)
	}
	lease := storetest.MustLock(t, s, key.String())
	defer lease.Release()
	var rt roundTrips
	s.rdb.AddHook(&rt)
	if c, err := s.LoadConversation(ctx, key); err != nil || c.Messages[0].Text != "before" {
		t.Fatalf("memory from the grant = %+v, %v", c, err)
	}
	if got, err := s.GetPending(ctx, key); err != nil || got.ID != "p-1" {
		t.Fatalf("pending from the grant = %+v, %v", got, err)
	}
	if n := rt.n.Load(); n != 0 {
		t.Errorf("reads after the grant took %d round trips, want 0", n)
	}
	if _, err := s.TakePending(ctx, key, "p-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetPending(ctx, key); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("pending after the holder took it: %v, want ErrNotFound", err)
	}
	if err := s.Commit(ctx, store.Commit{Key: key, Fence: lease.Fence(), Conversation: conv("after")}); err != nil {
		t.Fatal(err)
	}
	if c, err := s.LoadConversation(ctx, key); err != nil || c.Messages[0].Text != "after" {
		t.Errorf("memory after the holder's commit = %+v, %v; want the commit's", c, err)
	}
	// A commit that releases: the lock is free at once, and the holder's
	// Release costs nothing.
	if err := s.Commit(ctx, store.Commit{Key: key, Fence: lease.Fence(), Conversation: conv("last"), Release: true}); err != nil {
		t.Fatal(err)
	}
	before := rt.n.Load()
	lease.Release()
	if n := rt.n.Load() - before; n != 0 {
		t.Errorf("Release after a releasing commit took %d round trips, want 0", n)
	}
	if held, err := s.rdb.Exists(ctx, s.lockKeys(key.String()).lock[0]).Result(); err != nil || held != 0 {
		t.Errorf("lock key after a releasing commit: exists=%d, %v", held, err)
	}
}

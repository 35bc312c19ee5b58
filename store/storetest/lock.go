package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/store"
)

var lockTests = []subtest{
	{name: "Exclusion", run: testLockExclusion},
	{name: "FenceIncreases", run: testFenceIncreases},
	{name: "WaitBounded", opts: func(o *Options) { o.LockWait = 150 * time.Millisecond }, run: testLockWaitBounded},
	{name: "ContextEndsWait", run: testLockContext},
	{name: "ReleaseTwice", run: testReleaseTwice},
	{name: "DifferentKeys", run: testLockDifferentKeys},
	{name: "TTLTakeover", opts: func(o *Options) { o.LockTTL = 200 * time.Millisecond }, run: testLockTakeover},
	{name: "Extend", opts: func(o *Options) { o.LockTTL = 200 * time.Millisecond }, run: testLockExtend},
	{name: "CommitFenced", run: testCommitFenced},
	{name: "SerializedTurns", run: testSerializedTurns},
	{name: "FIFO", run: testLockFIFO},
}

// patience bounds how long the suite waits for something that should happen
// promptly; it is generous for slow, race-instrumented runs.
const patience = 5 * time.Second

// calm is how long the suite watches for something that must not happen.
const calm = 100 * time.Millisecond

// spacing separates Lock calls that must reach a backend in a given order,
// for a backend that cannot report its waiters (Backend.Waiters).
const spacing = 30 * time.Millisecond

type lockResult struct {
	lease store.Lease
	err   error
}

func goLock(ctx context.Context, l store.Locker, key string) <-chan lockResult {
	ch := make(chan lockResult, 1)
	go func() {
		lease, err := l.Lock(ctx, key)
		ch <- lockResult{lease, err}
	}()
	return ch
}

// MustLock takes the lock of key on l, failing the test when it is not
// granted within 5 s.
func MustLock(t *testing.T, l store.Locker, key string) store.Lease {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), patience)
	defer cancel()
	lease, err := l.Lock(ctx, key)
	if err != nil {
		t.Fatalf("Lock(%s): %v", key, err)
	}
	return lease
}

// wantBlocked checks that ch delivers nothing for a while.
func wantBlocked(t *testing.T, what string, ch <-chan lockResult) {
	t.Helper()
	select {
	case r := <-ch:
		if r.lease != nil {
			r.lease.Release()
		}
		t.Fatalf("%s: Lock returned (err %v) while the key was held", what, r.err)
	case <-time.After(calm):
	}
}

// wantGranted waits for ch to deliver a lease.
func wantGranted(t *testing.T, what string, ch <-chan lockResult) store.Lease {
	t.Helper()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("%s: Lock: %v", what, r.err)
		}
		return r.lease
	case <-time.After(patience):
		t.Fatalf("%s: Lock still waiting after %v", what, patience)
		return nil
	}
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func testLockExclusion(t *testing.T, e env) {
	key := testKey("t1", "c1").String()
	a := MustLock(t, e.l, key)
	waiting := goLock(t.Context(), e.l, key)
	wantBlocked(t, "second Lock", waiting)
	a.Release()
	b := wantGranted(t, "second Lock after Release", waiting)
	defer b.Release()
	if b.Fence() <= a.Fence() {
		t.Errorf("fence after handover = %d, want > %d", b.Fence(), a.Fence())
	}
	if isClosed(b.Lost()) {
		t.Errorf("fresh lease reports Lost")
	}
}

func testFenceIncreases(t *testing.T, e env) {
	keys := []string{testKey("t1", "c1").String(), testKey("t1", "c2").String(), testKey("t2", "c1").String()}
	last := map[string]int64{}
	for i := range 30 {
		key := keys[i%len(keys)]
		l := MustLock(t, e.l, key)
		if f, seen := last[key]; seen && l.Fence() <= f {
			t.Errorf("grant %d of %s: fence %d, want > %d", i, key, l.Fence(), f)
		}
		last[key] = l.Fence()
		l.Release()
	}
}

func testLockWaitBounded(t *testing.T, e env) {
	key := testKey("t1", "c1").String()
	a := MustLock(t, e.l, key)
	defer a.Release()
	start := time.Now()
	l, err := e.l.Lock(t.Context(), key)
	elapsed := time.Since(start)
	if err == nil {
		l.Release()
		t.Fatalf("Lock of a held key succeeded")
	}
	if !errors.Is(err, store.ErrLockTimeout) {
		t.Errorf("Lock of a held key: %v, want ErrLockTimeout", err)
	}
	if elapsed < e.opts.LockWait/2 || elapsed > patience {
		t.Errorf("Lock gave up after %v, want about the lock wait %v", elapsed, e.opts.LockWait)
	}
	// The timed-out waiter left nothing behind.
	a.Release()
	MustLock(t, e.l, key).Release()
}

func testLockContext(t *testing.T, e env) {
	key := testKey("t1", "c1").String()
	a := MustLock(t, e.l, key)

	ctx, cancel := context.WithCancel(t.Context())
	waiting := goLock(ctx, e.l, key)
	wantBlocked(t, "Lock before cancel", waiting)
	cancel()
	select {
	case r := <-waiting:
		if r.err == nil {
			r.lease.Release()
			t.Fatalf("Lock returned a lease after its context was canceled")
		}
		if !errors.Is(r.err, context.Canceled) {
			t.Errorf("Lock after cancel: %v, want context.Canceled", r.err)
		}
	case <-time.After(patience):
		t.Fatalf("Lock still waiting %v after its context was canceled", patience)
	}

	dctx, dcancel := context.WithTimeout(t.Context(), calm)
	defer dcancel()
	if l, err := e.l.Lock(dctx, key); err == nil {
		l.Release()
		t.Fatalf("Lock with an expiring context returned a lease for a held key")
	} else if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, store.ErrLockTimeout) {
		t.Errorf("Lock past its context deadline: %v, want DeadlineExceeded or ErrLockTimeout", err)
	}

	a.Release()
	MustLock(t, e.l, key).Release()
}

func testReleaseTwice(t *testing.T, e env) {
	key := testKey("t1", "c1").String()
	a := MustLock(t, e.l, key)
	a.Release()
	a.Release()
	b := MustLock(t, e.l, key)
	a.Release() // a stale release must not free b's lock
	ctx, cancel := context.WithTimeout(t.Context(), calm)
	defer cancel()
	if l, err := e.l.Lock(ctx, key); err == nil {
		l.Release()
		t.Fatalf("a released lease released its successor's lock")
	}
	b.Release()
	MustLock(t, e.l, key).Release()
}

func testLockDifferentKeys(t *testing.T, e env) {
	a := MustLock(t, e.l, testKey("t1", "c1").String())
	defer a.Release()
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	for _, key := range []string{testKey("t1", "c2").String(), testKey("t2", "c1").String()} {
		l, err := e.l.Lock(ctx, key)
		if err != nil {
			t.Fatalf("Lock(%s) while another key is held: %v", key, err)
		}
		l.Release()
	}
}

// testLockTakeover lets a holder overrun LockTTL: a waiter takes the lock
// over, the old lease reports Lost, and its commit is refused.
func testLockTakeover(t *testing.T, e env) {
	ck := testKey("t1", "c1")
	key := ck.String()
	a := MustLock(t, e.l, key)
	if isClosed(a.Lost()) {
		t.Fatalf("lease within its TTL reports Lost")
	}

	// A waiter that arrives after the TTL takes over.
	overrun(e, a)
	b := wantGranted(t, "Lock after the holder's TTL", goLock(t.Context(), e.l, key))
	select {
	case <-a.Lost():
	case <-time.After(patience):
		t.Fatalf("taken-over lease does not report Lost")
	}
	if b.Fence() <= a.Fence() {
		t.Errorf("takeover fence %d, want > %d", b.Fence(), a.Fence())
	}
	conv := conversation(e.clock.Now(), 1)
	err := e.s.Commit(t.Context(), store.Commit{Key: ck, Fence: a.Fence(), Conversation: &conv})
	if !errors.Is(err, store.ErrFenced) {
		t.Errorf("commit of the taken-over holder: %v, want ErrFenced", err)
	}
	_, err = e.s.LoadConversation(t.Context(), ck)
	wantNotFound(t, "memory after a fenced commit", err)
	mustCommit(t, e.s, store.Commit{Key: ck, Fence: b.Fence(), Conversation: &conv})
	a.Release()

	// A waiter already queued when the TTL passes takes over too.
	waiting := goLock(t.Context(), e.l, key)
	waitQueued(t, e, key, 1)
	overrun(e, b)
	c := wantGranted(t, "queued Lock after the holder's TTL", waiting)
	defer c.Release()
	select {
	case <-b.Lost():
	case <-time.After(patience):
		t.Fatalf("taken-over lease does not report Lost")
	}
	if c.Fence() <= b.Fence() {
		t.Errorf("takeover fence %d, want > %d", c.Fence(), b.Fence())
	}
	b.Release()
}

// testLockExtend: a lease its holder extended (store.Extender) is not
// taken over past its TTL while the extension lasts — by a waiter queued
// before the TTL passed or one arriving after — a shorter extension does
// not shorten it, and past the extension it is taken over as any other.
// A backend whose leases renew themselves has nothing to extend.
func testLockExtend(t *testing.T, e env) {
	key := testKey("t1", "c1").String()
	a := MustLock(t, e.l, key)
	defer a.Release()
	x, ok := a.(store.Extender)
	if !ok {
		t.Skip("the backend's leases renew themselves")
	}
	x.Extend(time.Hour)
	x.Extend(time.Millisecond)
	ctx, cancel := context.WithCancel(t.Context())
	queued := goLock(ctx, e.l, key)
	waitQueued(t, e, key, 1)
	e.clock.Advance(e.opts.LockTTL + time.Second)
	late := goLock(ctx, e.l, key)
	wantBlocked(t, "Lock queued before the TTL passed, within the extension", queued)
	wantBlocked(t, "Lock after the TTL, within the extension", late)
	if isClosed(a.Lost()) {
		t.Fatal("an extended lease reports Lost within its extension")
	}
	cancel()
	for _, ch := range []<-chan lockResult{queued, late} {
		if r := <-ch; r.err == nil {
			r.lease.Release()
			t.Fatal("a Lock its caller gave up on was granted")
		}
	}

	e.clock.Advance(time.Hour)
	b := wantGranted(t, "Lock past the extension", goLock(t.Context(), e.l, key))
	defer b.Release()
	if !isClosed(a.Lost()) || b.Fence() <= a.Fence() {
		t.Errorf("past its extension: lost %v, fences %d then %d", isClosed(a.Lost()), a.Fence(), b.Fence())
	}
}

// overrun lets the holder of l run past LockTTL: on the clock and, for a
// backend whose leases expire in real time, for real, with renewal stopped.
func overrun(e env, l store.Lease) {
	e.clock.Advance(e.opts.LockTTL + time.Second)
	if e.stall != nil {
		e.stall(l)
		time.Sleep(e.opts.LockTTL)
	}
}

// testCommitFenced commits with the fence of a released lease after a newer
// one was granted: the commit is refused and nothing of it is visible.
func testCommitFenced(t *testing.T, e env) {
	ctx, ck, now := t.Context(), testKey("t1", "c1"), e.clock.Now()
	key := ck.String()
	mustClaim(t, e.s, ck, "m1", "turn-1", now)
	a := MustLock(t, e.l, key)
	a.Release()
	b := MustLock(t, e.l, key)
	defer b.Release()

	conv, p := conversation(now, 2), pending(ck, "p1", now)
	stale := store.Commit{Key: ck, Fence: a.Fence(), Conversation: &conv, PutPending: &p, MessageID: "m1", Reply: json.RawMessage(`"stale"`)}
	for _, c := range []store.Commit{stale, {Key: ck, Fence: 0, Conversation: &conv}} {
		if err := e.s.Commit(ctx, c); !errors.Is(err, store.ErrFenced) {
			t.Errorf("commit with fence %d while %d is granted: %v, want ErrFenced", c.Fence, b.Fence(), err)
		}
	}
	_, err := e.s.LoadConversation(ctx, ck)
	wantNotFound(t, "memory after fenced commits", err)
	_, err = e.s.GetPending(ctx, ck)
	wantNotFound(t, "pending after fenced commits", err)
	if rec, _ := mustClaim(t, e.s, ck, "m1", "turn-2", now); rec.Done {
		t.Errorf("inbox record completed by a fenced commit: %+v", rec)
	}

	fresh := stale
	fresh.Fence = b.Fence()
	mustCommit(t, e.s, fresh)
	if _, err := e.s.GetPending(ctx, ck); err != nil {
		t.Errorf("pending after the holder's commit: %v", err)
	}
}

// testSerializedTurns runs load-modify-commit turns from many goroutines
// under the lock: none may overlap and no update may be lost.
func testSerializedTurns(t *testing.T, e env) {
	ck := testKey("t1", "c1")
	key := ck.String()
	const workers, turns = 8, 10
	var (
		wg     sync.WaitGroup
		inside atomic.Int32
	)
	for w := range workers {
		wg.Go(func() {
			for i := range turns {
				lease, err := e.l.Lock(t.Context(), key)
				if err != nil {
					t.Errorf("worker %d: Lock: %v", w, err)
					return
				}
				if n := inside.Add(1); n != 1 {
					t.Errorf("worker %d: %d holders at once", w, n)
				}
				conv, err := e.s.LoadConversation(t.Context(), ck)
				if err != nil && !errors.Is(err, store.ErrNotFound) {
					t.Errorf("worker %d: LoadConversation: %v", w, err)
				}
				now := e.clock.Now()
				if conv.StartedAt.IsZero() {
					conv.StartedAt = now
				}
				conv.UpdatedAt = now
				conv.Messages = append(conv.Messages, store.Message{Role: store.RoleUser, Text: "turn", At: now})
				if err := e.s.Commit(t.Context(), store.Commit{Key: ck, Fence: lease.Fence(), Conversation: &conv}); err != nil {
					t.Errorf("worker %d turn %d: Commit: %v", w, i, err)
				}
				inside.Add(-1)
				lease.Release()
			}
		})
	}
	wg.Wait()
	conv, err := e.s.LoadConversation(t.Context(), ck)
	if err != nil {
		t.Fatalf("LoadConversation: %v", err)
	}
	if len(conv.Messages) != workers*turns {
		t.Errorf("%d messages after %d serialized turns: updates were lost", len(conv.Messages), workers*turns)
	}
}

// waitQueued returns once n Lock calls wait for key: as reported by the
// backend, or else after spacing.
func waitQueued(t *testing.T, e env, key string, n int) {
	t.Helper()
	if e.waiters == nil {
		time.Sleep(spacing)
		return
	}
	for give := time.Now().Add(patience); ; {
		got, err := e.waiters(key)
		if err != nil {
			t.Fatalf("waiters of %s: %v", key, err)
		}
		if got == n {
			return
		}
		if got > n || time.Now().After(give) {
			t.Fatalf("%d Lock calls wait for %s, want %d", got, key, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// testLockFIFO queues Lock calls one after another behind a holder: once
// it releases, they are granted in the order they were made, and a call
// made just after the release is granted after all of them.
func testLockFIFO(t *testing.T, e env) {
	key := testKey("t1", "c1").String()
	const waiters = 8
	holder := MustLock(t, e.l, key)
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		order  []int
		fences []int64
	)
	call := func(i int) {
		wg.Go(func() {
			lease, err := e.l.Lock(t.Context(), key)
			if err != nil {
				t.Errorf("Lock call %d: %v", i, err)
				return
			}
			mu.Lock()
			order = append(order, i)
			fences = append(fences, lease.Fence())
			mu.Unlock()
			time.Sleep(time.Millisecond) // a short turn
			lease.Release()
		})
	}
	for i := range waiters {
		call(i)
		waitQueued(t, e, key, i+1)
	}
	mu.Lock()
	early := len(order)
	mu.Unlock()
	if early > 0 {
		t.Fatalf("%d Lock calls were granted while the key was held", early)
	}
	holder.Release()
	call(waiters) // arrives while the queue is being served
	wg.Wait()

	if len(order) != waiters+1 {
		t.Fatalf("%d of %d Lock calls were granted", len(order), waiters+1)
	}
	for i, got := range order {
		if got != i {
			t.Fatalf("grant order %v, want the calls' order 0..%d", order, waiters)
		}
	}
	last := holder.Fence()
	for i, f := range fences {
		if f <= last {
			t.Errorf("grant %d: fence %d, want > %d", i, f, last)
		}
		last = f
	}
}

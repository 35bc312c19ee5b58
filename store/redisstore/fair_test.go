package redisstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/store"
	"github.com/arbiterhq/arbiter/store/storetest"
)

// fastQueue is a queue timing with a short staleness bound, for tests that
// let a waiter go stale.
var fastQueue = queueTiming{
	minHeadPoll: 5 * time.Millisecond,
	maxHeadPoll: 20 * time.Millisecond,
	waiterPoll:  50 * time.Millisecond,
	staleAfter:  500 * time.Millisecond,
}

// attempt runs one lock attempt for token as Lock would, without waiting:
// it is how the tests play a waiter that stops polling.
func attempt(t *testing.T, s *Store, name, token string) []int64 {
	t.Helper()
	k := s.lockKeys(name)
	reply, err := s.lockScript.Run(t.Context(), s.rdb, k.lock, token,
		pxArg(s.opts.LockTTL), pxArg(s.fenceTTL), pxArg(s.queue.staleAfter),
		pxArg(2*s.queue.staleAfter), k.channel).Slice()
	if err != nil {
		t.Fatalf("lock attempt of %s: %v", token, err)
	}
	res, _, err := parseLockReply(reply)
	if err != nil {
		t.Fatalf("lock attempt of %s: %v", token, err)
	}
	return res[:]
}

// queueOf returns the tokens queued for name, head first.
func queueOf(t *testing.T, s *Store, name string) []string {
	t.Helper()
	q, err := s.rdb.ZRange(t.Context(), s.lockKeys(name).lock[2], 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// waitQueued waits until n Lock calls wait for name.
func waitQueued(t *testing.T, s *Store, name string, n int) {
	t.Helper()
	for give := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		got, err := s.queued(name)
		if err != nil {
			t.Fatal(err)
		}
		if got == n {
			return
		}
		if time.Now().After(give) {
			t.Fatalf("%d Lock calls wait for %s, want %d", got, name, n)
		}
	}
}

type grant struct {
	lease store.Lease
	err   error
	at    time.Time
}

func goLock(ctx context.Context, s *Store, name string) <-chan grant {
	ch := make(chan grant, 1)
	go func() {
		l, err := s.Lock(ctx, name)
		ch <- grant{l, err, time.Now()}
	}()
	return ch
}

func granted(t *testing.T, what string, ch <-chan grant, within time.Duration) grant {
	t.Helper()
	select {
	case g := <-ch:
		if g.err != nil {
			t.Fatalf("%s: Lock: %v", what, g.err)
		}
		return g
	case <-time.After(within):
		t.Fatalf("%s: not granted within %v", what, within)
		return grant{}
	}
}

// queueKeysGone checks that no queue key of name is left.
func queueKeysGone(t *testing.T, s *Store, name string) {
	t.Helper()
	k := s.lockKeys(name)
	if n, err := s.rdb.Exists(t.Context(), k.lock[2], k.lock[3]).Result(); err != nil || n != 0 {
		t.Errorf("%d queue keys of %s left (%v), want none", n, name, err)
	}
}

// TestLockFIFOAcrossStores interleaves the waiters of two stores, as of two
// processes: they are granted in the order they queued, each woken by the
// release before it.
func TestLockFIFOAcrossStores(t *testing.T) {
	pa := openTest(t, Options{})
	pb := openTest(t, Options{Prefix: pa.opts.Prefix})
	procs := []*Store{pa, pb}
	const name, waiters = "fifo", 10
	holder := storetest.MustLock(t, pb, name)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		order []int
	)
	for i := range waiters {
		wg.Go(func() {
			l, err := procs[i%2].Lock(t.Context(), name)
			if err != nil {
				t.Errorf("waiter %d: %v", i, err)
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			l.Release()
		})
		waitQueued(t, pa, name, i+1)
	}
	holder.Release()
	wg.Wait()
	if want := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}; !slices.Equal(order, want) {
		t.Errorf("grant order %v, want %v", order, want)
	}
	queueKeysGone(t, pa, name)
}

// TestDeadWaiterSkipped queues a waiter that never polls again, as if its
// process died, ahead of a live one: the live waiter gets the lock once the
// dead one's heartbeat is older than the staleness bound, not before and not
// much later, and the dead entry is gone.
func TestDeadWaiterSkipped(t *testing.T) {
	s := openTest(t, Options{})
	s.queue = fastQueue
	const name = "dead"
	k := s.lockKeys(name)
	holder := storetest.MustLock(t, s, name)
	if res := attempt(t, s, name, "dead-token"); res[0] != 0 || res[2] != 0 {
		t.Fatalf("attempt behind a holder = %v, want queued at the head", res)
	}
	diedAt := time.Now()
	for _, key := range k.lock[2:4] { // the queue and the heartbeats
		if ttl, err := s.rdb.PTTL(t.Context(), key).Result(); err != nil || ttl <= 0 || ttl > 2*fastQueue.staleAfter {
			t.Errorf("PTTL of %s = %v (%v), want within (0, %v]", key, ttl, err, 2*fastQueue.staleAfter)
		}
	}
	live := goLock(t.Context(), s, name)
	waitQueued(t, s, name, 2)
	holder.Release()

	select {
	case g := <-live:
		t.Fatalf("the live waiter was granted (%v) %v after the dead one queued, within the staleness bound %v",
			g.err, g.at.Sub(diedAt), fastQueue.staleAfter)
	case <-time.After(time.Until(diedAt.Add(fastQueue.staleAfter - 100*time.Millisecond))):
	}
	g := granted(t, "live waiter behind a dead one", live, 5*time.Second)
	defer g.lease.Release()
	late := g.at.Sub(diedAt) - fastQueue.staleAfter
	t.Logf("granted %v after the staleness bound", late)
	if late > fastQueue.waiterPoll+time.Second {
		t.Errorf("granted %v after the staleness bound, want within about a poll interval (%v)", late, fastQueue.waiterPoll)
	}
	if q := queueOf(t, s, name); len(q) != 0 {
		t.Errorf("queue after the grant = %v, want empty", q)
	}
	if ok, _ := s.rdb.HExists(t.Context(), k.lock[3], "dead-token").Result(); ok {
		t.Errorf("the dead waiter's heartbeat is still kept")
	}
}

// TestStaleWaiterPruning drives the lock script by hand: a waiter whose
// heartbeat went stale is dropped from the head and queued again at the end
// when it polls again, and a long run of dead waiters is cleared over
// several attempts, at most 64 at a time.
func TestStaleWaiterPruning(t *testing.T) {
	s := openTest(t, Options{})
	const name = "stale"
	k := s.lockKeys(name)
	holder := storetest.MustLock(t, s, name)
	attempt(t, s, name, "x")
	if res := attempt(t, s, name, "y"); res[2] != 1 {
		t.Fatalf("second waiter's place = %d, want 1", res[2])
	}
	if err := s.rdb.HSet(t.Context(), k.lock[3], "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if res := attempt(t, s, name, "y"); res[0] != 0 || res[2] != 0 {
		t.Errorf("attempt of y behind a stale x = %v, want y queued at the head", res)
	}
	if res := attempt(t, s, name, "x"); res[2] != 1 {
		t.Errorf("x polling after it was dropped: place %d, want 1 (queued again at the end)", res[2])
	}
	if q := queueOf(t, s, name); !slices.Equal(q, []string{"y", "x"}) {
		t.Errorf("queue = %v, want [y x]", q)
	}
	holder.Release()
	if err := s.rdb.Del(t.Context(), k.lock[2], k.lock[3]).Err(); err != nil {
		t.Fatal(err)
	}

	// 100 dead waiters ahead of a free lock.
	holder = storetest.MustLock(t, s, name)
	for i := range 100 {
		attempt(t, s, name, fmt.Sprintf("dead-%03d", i))
	}
	if err := s.rdb.Del(t.Context(), k.lock[3]).Err(); err != nil { // no heartbeats at all
		t.Fatal(err)
	}
	holder.Release()
	if res := attempt(t, s, name, "z"); res[0] != 0 {
		t.Fatalf("first attempt behind 100 dead waiters was granted; it may clear only 64")
	}
	if q := queueOf(t, s, name); len(q) != 37 || q[36] != "z" {
		t.Fatalf("after one attempt the queue holds %d entries ending in %q, want 36 dead and z", len(q), q[len(q)-1])
	}
	res := attempt(t, s, name, "z")
	if res[0] != 1 {
		t.Fatalf("second attempt = %v, want granted", res)
	}
	queueKeysGone(t, s, name)
	if err := s.rdb.Del(t.Context(), k.lock[0]).Err(); err != nil {
		t.Fatal(err)
	}
}

// TestGiveUpLeavesQueue: waiters that give up (their context ends, LockWait
// passes, their store closes) leave the queue at once, so the waiter behind
// them is granted right after the release, well within the staleness bound,
// and no queue key is left afterwards.
func TestGiveUpLeavesQueue(t *testing.T) {
	s := openTest(t, Options{LockWait: 400 * time.Millisecond})
	closing := openTest(t, Options{Prefix: s.opts.Prefix})
	patient := openTest(t, Options{Prefix: s.opts.Prefix})
	const name = "give-up"
	holder := storetest.MustLock(t, patient, name)

	ctx, cancel := context.WithCancel(t.Context())
	canceled := goLock(ctx, s, name)
	waitQueued(t, s, name, 1)
	closed := goLock(t.Context(), closing, name)
	waitQueued(t, s, name, 2)
	timedOut := goLock(t.Context(), s, name)
	waitQueued(t, s, name, 3)
	last := goLock(t.Context(), patient, name)
	waitQueued(t, s, name, 4)

	cancel()
	if err := closing.Close(); err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct {
		what string
		ch   <-chan grant
		want error
	}{{"canceled waiter", canceled, context.Canceled}, {"waiter of a closed store", closed, store.ErrUnavailable}, {"timed-out waiter", timedOut, store.ErrLockTimeout}} {
		select {
		case g := <-w.ch:
			if !errors.Is(g.err, w.want) {
				t.Errorf("%s: %v, want %v", w.what, g.err, w.want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s still waiting", w.what)
		}
	}
	if q := queueOf(t, s, name); len(q) != 1 {
		t.Errorf("queue after three waiters gave up = %v, want only the last waiter", q)
	}

	start := time.Now()
	holder.Release()
	g := granted(t, "waiter behind those that gave up", last, time.Second)
	t.Logf("granted %v after the release", g.at.Sub(start))
	g.lease.Release()
	queueKeysGone(t, s, name)
}

// TestUncontendedLock: a free key is locked in one round trip and released
// in one, and creates no queue keys.
func TestUncontendedLock(t *testing.T) {
	s := openTest(t, Options{})
	var rt roundTrips
	s.rdb.AddHook(&rt)
	for i := range 3 {
		before := rt.n.Load()
		l := storetest.MustLock(t, s, "free")
		if n := rt.n.Load() - before; n != 1 {
			t.Errorf("uncontended Lock %d took %d round trips, want 1", i, n)
		}
		before = rt.n.Load()
		l.Release()
		if n := rt.n.Load() - before; n != 1 {
			t.Errorf("Release %d took %d round trips, want 1", i, n)
		}
	}
	queueKeysGone(t, s, "free")
}

// TestReleaseWakesHead: with polling slowed to seconds, queued waiters of
// two stores are still granted within milliseconds of each release, since
// the release wakes the head of the queue.
func TestReleaseWakesHead(t *testing.T) {
	slow := queueTiming{minHeadPoll: 3 * time.Second, maxHeadPoll: 3 * time.Second, waiterPoll: 3 * time.Second, staleAfter: time.Minute}
	pa := openTest(t, Options{})
	pb := openTest(t, Options{Prefix: pa.opts.Prefix})
	pa.queue, pb.queue = slow, slow
	const name = "wake"
	holder := storetest.MustLock(t, pa, name)
	first := goLock(t.Context(), pb, name)
	waitQueued(t, pa, name, 1)
	second := goLock(t.Context(), pa, name)
	waitQueued(t, pa, name, 2)
	waitSubscribers(t, pa, pa.lockKeys(name).channel, 2)

	start := time.Now()
	holder.Release()
	g := granted(t, "head after the release", first, time.Second)
	t.Logf("first hand-off (to the other store) took %v", g.at.Sub(start))
	start = time.Now()
	g.lease.Release()
	g = granted(t, "next head after the release", second, time.Second)
	t.Logf("second hand-off (back to the first store) took %v", g.at.Sub(start))
	g.lease.Release()
}

// waitSubscribers waits until n connections subscribe to channel.
func waitSubscribers(tb testing.TB, s *Store, channel string, n int64) {
	tb.Helper()
	for give := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		subs, err := s.rdb.PubSubNumSub(context.Background(), channel).Result()
		if err != nil {
			tb.Fatal(err)
		}
		if subs[channel] >= n {
			return
		}
		if time.Now().After(give) {
			tb.Fatalf("%d subscribers of %s, want %d", subs[channel], channel, n)
		}
	}
}

// BenchmarkLockHandoff measures the hand-off latency: from the holder's
// Release until a waiter of another store (another process), queued behind
// it, has the lease. "wake" is the normal case, where the release wakes the
// waiter; "poll" turns wake-ups off, as when they are lost, so the waiter
// finds the lock free by polling. The waiter queues settle before the
// release, as behind a turn in progress. Reports the median and the 99th
// percentile besides the mean (ns/op).
func BenchmarkLockHandoff(b *testing.B) {
	for _, mode := range []struct {
		name   string
		wake   bool
		settle time.Duration
	}{{"wake", true, 5 * time.Millisecond}, {"poll", false, 300 * time.Millisecond}} {
		b.Run(mode.name, func(b *testing.B) {
			pa := openTest(b, Options{})
			pb := openTest(b, Options{Prefix: pa.opts.Prefix})
			procs := []*Store{pa, pb}
			if !mode.wake {
				pa.wake, pb.wake = nil, nil
			}
			const name = "handoff"
			channel := pa.lockKeys(name).channel
			holder, err := pa.Lock(context.Background(), name)
			if err != nil {
				b.Fatal(err)
			}
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				ch := make(chan grant, 1)
				go func() {
					l, err := procs[(i+1)%2].Lock(context.Background(), name)
					ch <- grant{l, err, time.Now()}
				}()
				for n, _ := pa.queued(name); n != 1; n, _ = pa.queued(name) {
					time.Sleep(100 * time.Microsecond)
				}
				if mode.wake {
					waitSubscribers(b, pa, channel, 1)
				}
				time.Sleep(mode.settle)
				b.StartTimer()
				start := time.Now()
				holder.Release()
				g := <-ch
				if g.err != nil {
					b.Fatal(g.err)
				}
				lat = append(lat, g.at.Sub(start))
				holder = g.lease
			}
			b.StopTimer()
			holder.Release()
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		})
	}
}

// TestWakeSubscriberIdles: the wake-up subscriber disconnects once nobody
// waited for its linger, and the next wait connects it again.
func TestWakeSubscriberIdles(t *testing.T) {
	s := openTest(t, Options{})
	s.queue = queueTiming{minHeadPoll: 3 * time.Second, maxHeadPoll: 3 * time.Second, waiterPoll: 3 * time.Second, staleAfter: time.Minute}
	s.wake.linger = 50 * time.Millisecond
	const name = "idle"
	channel := s.lockKeys(name).channel
	for round := range 2 {
		holder := storetest.MustLock(t, s, name)
		w := goLock(t.Context(), s, name)
		waitQueued(t, s, name, 1)
		waitSubscribers(t, s, channel, 1)
		start := time.Now()
		holder.Release()
		g := granted(t, fmt.Sprintf("round %d: waiter after the release", round), w, time.Second)
		t.Logf("round %d: hand-off took %v", round, g.at.Sub(start))
		g.lease.Release()

		for give := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			s.wake.mu.Lock()
			idle := s.wake.sub == nil
			s.wake.mu.Unlock()
			subs, err := s.rdb.PubSubNumSub(t.Context(), channel).Result()
			if err != nil {
				t.Fatal(err)
			}
			if idle && subs[channel] == 0 {
				break
			}
			if time.Now().After(give) {
				t.Fatalf("round %d: subscriber still running (%v) with %d subscriptions after its linger", round, !idle, subs[channel])
			}
		}
	}
}

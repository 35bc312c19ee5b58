package redisstore

import (
	"context"
	"crypto/rand"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/arbiterhq/arbiter/store"
)

// Timing of a Lock call that waits in a key's queue (see "Lock queue" in
// the package documentation). The queue head retries with a back-off from
// minHeadPoll doubling to maxHeadPoll, never sleeping past the holder's
// remaining TTL; a release wakes it at once, so the back-off only bounds
// the hand-off when a wake-up is lost. A waiter behind the head polls every
// waiterPoll, which keeps its heartbeat fresh. A waiter whose heartbeat is
// older than staleAfter, twenty times the longest poll interval, is taken
// for dead and dropped when it reaches the head; the queue's keys live
// twice staleAfter after their last use.
const (
	minHeadPoll = 5 * time.Millisecond
	maxHeadPoll = 100 * time.Millisecond
	waiterPoll  = 250 * time.Millisecond
	staleAfter  = 5 * time.Second
)

// queueTiming is the timing of one store's lock queues: the constants above,
// changed by tests only.
type queueTiming struct {
	minHeadPoll, maxHeadPoll, waiterPoll, staleAfter time.Duration
}

var defaultQueueTiming = queueTiming{minHeadPoll, maxHeadPoll, waiterPoll, staleAfter}

// releaseTimeout bounds the release call; a release that fails leaves the
// lock to expire after its TTL, and a waiter it should have dequeued to be
// dropped once stale.
const releaseTimeout = 5 * time.Second

// lockKeys are the Redis keys and the wake-up channel of one lock name.
type lockKeys struct {
	lock    []string // P{T}:lock, P{T}:fence, P{T}:queue, P{T}:beat, P{T}:mem, P{T}:pend
	release []string // P{T}:lock, P{T}:queue, P{T}:beat
	channel string   // P{T}:wake, or "" when wake-ups are off
}

func (s *Store) lockKeys(name string) *lockKeys {
	tag := s.tag(name)
	k := &lockKeys{
		lock:    []string{tag + ":lock", tag + ":fence", tag + ":queue", tag + ":beat", tag + ":mem", tag + ":pend"},
		channel: tag + ":wake",
	}
	k.release = []string{k.lock[0], k.lock[2], k.lock[3]}
	if s.wake == nil {
		k.channel = ""
	}
	return k
}

// Lock waits until key is free and it is the longest-waiting caller of key,
// across every process sharing the server, and returns its lease: the lock
// key set to a random token with PX LockTTL, granting the next fence. A
// free key with nobody queued costs one round trip. A held key puts the
// call in the key's queue; it is granted when the lock is free and it heads
// the queue, or gives up (leaving the queue) when LockWait passes
// (ErrLockTimeout), ctx ends (an error wrapping ctx.Err()) or the store
// closes (ErrUnavailable). When Redis cannot be reached it fails at once
// with ErrUnavailable: a turn never runs unlocked. Safe for concurrent use;
// the caller releases the lease.
//
// The lease renews itself every LockTTL/3 while held. Its Lost channel
// closes when a renewal finds the token gone (the lock expired and may have
// been granted to another) or when LockTTL passed since the last renewal
// that succeeded, as it does when Redis is unreachable; a holder must not
// commit after that, and Commit refuses its fence once a newer grant exists.
func (s *Store) Lock(ctx context.Context, key string) (store.Lease, error) {
	if err := s.checkOpen(ctx); err != nil {
		return nil, s.fail(ctx, "lock", key, err)
	}
	if !s.enter() {
		return nil, fmt.Errorf("lock %s: %w", key, store.ErrUnavailable)
	}
	defer s.lockers.Done()
	k := s.lockKeys(key)
	token := rand.Text()
	deadline := time.Now().Add(s.opts.LockWait)
	qt := s.queue
	backoff := qt.minHeadPoll
	var (
		timer *time.Timer
		wake  <-chan struct{} // stays nil when wake-ups are off
		quiet func()
	)
	defer func() {
		if timer != nil {
			timer.Stop()
		}
		if quiet != nil {
			quiet()
		}
	}()
	for {
		start := time.Now()
		// The attempt runs to completion even if ctx ends meanwhile, so that
		// its outcome is known; ctx is honoured between attempts.
		reply, err := s.lockScript.Run(context.WithoutCancel(ctx), s.rdb, k.lock, token,
			pxArg(s.opts.LockTTL), pxArg(s.fenceTTL), pxArg(qt.staleAfter),
			pxArg(2*qt.staleAfter), k.channel).Slice()
		var res [3]int64
		var found snapshot
		if err == nil {
			res, found, err = parseLockReply(reply)
		}
		if err != nil {
			// The lock may have been granted, or the call queued, before the
			// reply was lost.
			s.releaseToken(k, token)
			return nil, s.fail(ctx, "lock", key, err)
		}
		if res[0] == 1 {
			if l := s.newLease(key, k, token, res[1], start, found); l != nil {
				return l, nil
			}
			s.releaseToken(k, token)
			return nil, fmt.Errorf("lock %s: %w", key, store.ErrUnavailable)
		}
		// Queued. Listen for the wake-up sent when the lock is free for us.
		if quiet == nil && s.wake != nil {
			wake, quiet = s.wake.listen(k.channel, token)
		}
		remaining := time.Until(deadline)
		if remaining <= 0 {
			s.releaseToken(k, token)
			return nil, fmt.Errorf("lock %s: waited %v: %w", key, s.opts.LockWait, store.ErrLockTimeout)
		}
		d := qt.waiterPoll
		if res[2] == 0 { // the head of the queue
			d = backoff
			backoff = min(2*backoff, qt.maxHeadPoll)
			if holder := time.Duration(res[1]) * time.Millisecond; holder > 0 && holder+time.Millisecond < d {
				d = holder + time.Millisecond
			}
		} else {
			backoff = qt.minHeadPoll
		}
		d = min(d, remaining)
		if timer == nil {
			timer = time.NewTimer(d)
		} else {
			timer.Reset(d)
		}
		select {
		case <-timer.C:
		case <-wake:
			backoff = qt.minHeadPoll
		case <-ctx.Done():
			s.releaseToken(k, token)
			return nil, fmt.Errorf("lock %s: %w", key, ctx.Err())
		case <-s.closing:
			s.releaseToken(k, token)
			return nil, fmt.Errorf("lock %s: %w", key, store.ErrUnavailable)
		}
	}
}

// enter counts a Lock call in, so that Close waits for it to leave its
// queue; it returns false once the store is closed.
func (s *Store) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return false
	}
	s.lockers.Add(1)
	return true
}

// releaseToken deletes the lock if token holds it and takes token out of
// the queue, waking the queue's head if the lock is then free. Errors are
// ignored: the lock then expires after its TTL, and a queued token is
// dropped once its heartbeat is stale.
func (s *Store) releaseToken(k *lockKeys, token string) {
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	_ = s.releaseScript.Run(ctx, s.rdb, k.release, token, k.channel).Err()
}

// parseLockReply reads the lock script's reply: the three numbers, and
// on a grant the state found with it.
func parseLockReply(reply []any) (res [3]int64, found snapshot, err error) {
	if len(reply) != 3 && len(reply) != 6 {
		return res, found, fmt.Errorf("unexpected lock reply %v", reply)
	}
	for i := range 3 {
		n, ok := reply[i].(int64)
		if !ok {
			return res, found, fmt.Errorf("unexpected lock reply %v", reply)
		}
		res[i] = n
	}
	if len(reply) == 6 {
		found.memory, found.hasMemory = reply[3].(string)
		found.pendExp, _ = reply[4].(string)
		found.pending, _ = reply[5].(string)
		found.known = true
	}
	return res, found, nil
}

// lease implements store.Lease.
type lease struct {
	s     *Store
	name  string
	keys  *lockKeys
	token string
	fence int64
	lost  chan struct{} // closed by renew only
	done  chan struct{} // closed by Release, or by a Commit that released it
	once  sync.Once
	// paused stops renewal, as if the holder's process stalled; the lease
	// then lives out its TTL. Set by tests only.
	paused atomic.Bool

	mu    sync.Mutex
	found snapshot // the conversation's state as the grant found it
}

// snapshot is a conversation's stored state as the lock script read it
// when it granted the lock: the raw values of P{T}:mem and P{T}:pend.
// While the lease is held nobody else writes them, so the holder's first
// reads are served from it; its own writes (Commit, TakePending) forget it.
type snapshot struct {
	known     bool
	hasMemory bool
	memory    string
	pendExp   string
	pending   string
}

// newLease starts the renewal of a lease on name granted by an attempt
// that began at start: Redis counts its TTL from a moment after that. It
// returns nil once the store is closed.
func (s *Store) newLease(name string, k *lockKeys, token string, fence int64, start time.Time, found snapshot) *lease {
	l := &lease{
		s: s, name: name, keys: k, token: token, fence: fence, found: found,
		lost: make(chan struct{}), done: make(chan struct{}),
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return nil
	}
	s.held.Store(name, l)
	s.keepers.Add(1)
	go l.renew(start.Add(s.opts.LockTTL))
	return l
}

// heldLease returns this process's lease on name, or nil.
func (s *Store) heldLease(name string) *lease {
	if v, ok := s.held.Load(name); ok {
		return v.(*lease)
	}
	return nil
}

// snapshot returns the state found with the grant, unless the lease is
// over or its holder has written since.
func (l *lease) snapshot() (snapshot, bool) {
	select {
	case <-l.done:
		return snapshot{}, false
	case <-l.lost:
		return snapshot{}, false
	default:
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.found, l.found.known
}

// forget drops the snapshot: the holder wrote the state.
func (l *lease) forget() {
	l.mu.Lock()
	l.found = snapshot{}
	l.mu.Unlock()
}

// end stops renewal and forgets the lease; release reports whether the
// lock must still be deleted in Redis (a Commit may have done it).
func (l *lease) end(release bool) {
	l.once.Do(func() {
		close(l.done)
		l.s.held.CompareAndDelete(l.name, l)
		if release {
			l.s.releaseToken(l.keys, l.token)
		}
	})
}

// renew keeps the lease alive until Release or Close, renewing it every
// LockTTL/3; validUntil is when it runs out without renewal. It closes
// lost when the token is gone, when validUntil passes or when the store
// closes.
func (l *lease) renew(validUntil time.Time) {
	defer l.s.keepers.Done()
	ttl := l.s.opts.LockTTL
	every := ttl / 3
	t := time.NewTimer(every)
	defer t.Stop()
	for {
		select {
		case <-l.done:
			return
		case <-l.s.closing:
			l.lose()
			return
		case <-t.C:
		}
		next := every
		if !l.paused.Load() {
			start := time.Now()
			ctx, cancel := context.WithDeadline(context.Background(), validUntil)
			n, err := l.s.extendScript.Run(ctx, l.s.rdb, l.keys.release[:1], l.token, pxArg(ttl)).Int64()
			cancel()
			switch {
			case err == nil && n == 1:
				validUntil = start.Add(ttl)
			case err == nil:
				l.lose()
				return
			default:
				next = every / 4 // try again soon; Redis may be back
			}
		}
		left := time.Until(validUntil)
		if left <= 0 {
			l.lose()
			return
		}
		t.Reset(min(next, left))
	}
}

// lose closes lost unless the lease was released meanwhile.
func (l *lease) lose() {
	select {
	case <-l.done:
	default:
		l.s.held.CompareAndDelete(l.name, l)
		close(l.lost)
	}
}

// Fence returns the lease's fence. Safe for concurrent use.
func (l *lease) Fence() int64 { return l.fence }

// Lost is closed when the lease can no longer be trusted: a renewal found
// the lock gone, LockTTL passed without a successful renewal, or the store
// closed. It stays open after Release. Safe for concurrent use.
func (l *lease) Lost() <-chan struct{} { return l.lost }

// Release stops renewal and deletes the lock if this lease still holds it
// (compare-and-delete on the token), so releasing twice, or releasing a
// lease that expired and was granted to another, leaves the current holder
// alone; after a Commit that released the lease (store.Commit.Release) it
// costs nothing. A release that frees the lock wakes the head of the key's queue.
// Errors are ignored: the lock then expires after its TTL. Safe for
// concurrent use.
func (l *lease) Release() { l.end(true) }

package sqlitestore

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/arbiterhq/arbiter/store"
)

// fenceBlock is how many fences one reservation in store_meta covers.
// Reserving in blocks keeps the database out of Lock's hot path while every
// fence handed out stays above every fence an earlier opening of the file
// could have handed out.
const fenceBlock = 1 << 20

// locker is the in-process conversation lock. Waiters queue per key in
// arrival order and the lease passes directly to the first of them on
// release, so nobody polls. A holder that overran LockTTL (judged on the
// store clock) is taken over by the first waiter: its Lost channel closes
// and its later commits fail with ErrFenced.
//
// Fences come from one counter shared by all keys, so they grow per key
// whether or not a key's entry was dropped in between.
type locker struct {
	s *Store

	mu      sync.Mutex
	keys    map[string]*lockEntry
	fence   int64 // last fence handed out
	reserve int64 // highest fence reserved in store_meta
}

// lockEntry is the state of one key. It exists while anyone needs it: a
// waiter, an unreleased lease (held or lost) or a commit in flight. Keeping
// it for lost leases is what lets Commit refuse them by fence.
type lockEntry struct {
	key     string
	holder  *lease
	queue   []*waiter
	newest  int64 // newest fence granted for the key
	refs    int   // waiters + unreleased leases + commits in flight
	commits int   // commits in flight; a takeover waits for them
}

type waiter struct {
	ready chan struct{} // closed once lease is set
	lease *lease
}

// lease implements store.Lease.
type lease struct {
	lk       *locker
	key      string
	e        *lockEntry
	fence    int64
	expires  time.Time // on the store clock
	lost     chan struct{}
	released bool // guarded by lk.mu
}

func (l *locker) init(s *Store) {
	l.s = s
	l.keys = make(map[string]*lockEntry)
}

// Lock waits until key is free and returns its lease. The wait is bounded
// by LockWait (ErrLockTimeout) and ctx (ctx.Err()); closing the store ends
// it with ErrUnavailable. Safe for concurrent use; the caller releases the
// lease.
func (s *Store) Lock(ctx context.Context, key string) (store.Lease, error) {
	l := &s.locks
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("lock %s: %w", key, err)
	}
	if s.closed.Load() {
		return nil, fmt.Errorf("lock %s: %w", key, store.ErrUnavailable)
	}

	l.mu.Lock()
	e := l.keys[key]
	if e == nil {
		e = &lockEntry{key: key}
		l.keys[key] = e
	}
	if e.holder == nil {
		ls, err := l.grant(key, e)
		l.forget(key, e)
		l.mu.Unlock()
		if err != nil {
			return nil, s.fail("lock", key, err)
		}
		return ls, nil
	}
	w := &waiter{ready: make(chan struct{})}
	e.queue = append(e.queue, w)
	e.refs++
	l.takeOver(key, e)
	l.mu.Unlock()

	deadline := time.NewTimer(s.opts.LockWait)
	defer deadline.Stop()
	// ttl fires when the current holder's lease runs out, so the wait can
	// take it over. It is armed from the store clock's reading each round.
	var ttl *time.Timer
	defer func() {
		if ttl != nil {
			ttl.Stop()
		}
	}()
	for {
		var ttlC <-chan time.Time
		l.mu.Lock()
		if w.lease == nil && e.holder != nil && e.commits == 0 {
			d := max(e.holder.expires.Sub(s.now()), time.Millisecond)
			if ttl == nil {
				ttl = time.NewTimer(d)
			} else {
				ttl.Reset(d)
			}
			ttlC = ttl.C
		}
		l.mu.Unlock()

		var err error
		select {
		case <-w.ready:
			return w.lease, nil
		case <-ttlC:
			l.mu.Lock()
			l.takeOver(key, e)
			l.mu.Unlock()
			continue
		case <-ctx.Done():
			err = ctx.Err()
		case <-deadline.C:
			err = store.ErrLockTimeout
		case <-s.closing:
			err = store.ErrUnavailable
		}
		l.abandon(key, e, w)
		return nil, fmt.Errorf("lock %s: %w", key, err)
	}
}

// grant makes a fresh lease the holder of e. Called with mu held.
func (l *locker) grant(key string, e *lockEntry) (*lease, error) {
	if l.fence >= l.reserve {
		high, err := l.s.reserveFences(fenceBlock)
		if err != nil {
			return nil, err
		}
		l.fence, l.reserve = high-fenceBlock, high
	}
	l.fence++
	ls := &lease{
		lk: l, key: key, e: e,
		fence:   l.fence,
		expires: l.s.now().Add(l.s.opts.LockTTL),
		lost:    make(chan struct{}),
	}
	e.holder = ls
	e.newest = ls.fence
	e.refs++
	return ls, nil
}

// handOff passes the lock to the first waiter, or frees it. If a fence
// cannot be reserved the waiters stay queued and the lock stays free for
// the next Lock or release to retry; they give up at their deadline.
// Called with mu held.
func (l *locker) handOff(key string, e *lockEntry) {
	e.holder = nil
	if len(e.queue) == 0 {
		return
	}
	ls, err := l.grant(key, e)
	if err != nil {
		return
	}
	w := e.queue[0]
	e.queue[0] = nil
	e.queue = e.queue[1:]
	e.refs--
	w.lease = ls
	close(w.ready)
}

// takeOver hands the lock to the first waiter if the holder overran its
// TTL and no commit of the key is in flight. Called with mu held.
func (l *locker) takeOver(key string, e *lockEntry) {
	h := e.holder
	if h == nil || len(e.queue) == 0 || e.commits > 0 || l.s.now().Before(h.expires) {
		return
	}
	close(h.lost)
	l.handOff(key, e)
}

// The in-process lease does not renew itself: its holder extends it.
var _ store.Extender = (*lease)(nil)

// Extend protects the lease from takeover for d from now on the store
// clock, if that is later than it is protected already (store.Extender).
// A lease no longer its key's holder (released, or lost) stays as it is.
func (ls *lease) Extend(d time.Duration) {
	l := ls.lk
	l.mu.Lock()
	defer l.mu.Unlock()
	if until := l.s.now().Add(d); ls.e.holder == ls && until.After(ls.expires) {
		ls.expires = until
	}
}

// abandon removes a waiter that gave up. If the lock was handed to it in
// the meantime, it is passed on. Called without mu.
func (l *locker) abandon(key string, e *lockEntry, w *waiter) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if w.lease != nil {
		l.release(w.lease)
		return
	}
	if i := slices.Index(e.queue, w); i >= 0 {
		e.queue = slices.Delete(e.queue, i, i+1)
		e.refs--
	}
	l.forget(key, e)
}

// release ends ls. Called with mu held.
func (l *locker) release(ls *lease) {
	if ls.released {
		return
	}
	ls.released = true
	e := ls.e
	e.refs--
	if e.holder == ls {
		l.handOff(ls.key, e)
	}
	l.forget(ls.key, e)
}

// forget drops e once nobody needs it. Called with mu held.
func (l *locker) forget(key string, e *lockEntry) {
	if e.refs == 0 && l.keys[key] == e {
		delete(l.keys, key)
	}
}

// beginCommit checks fence against the newest grant of key and, when it
// passes, holds off takeovers of key until endCommit. It returns the entry
// to pass to endCommit (nil when the key has no entry). Fence 0 passes only
// for a key with no live grant.
func (l *locker) beginCommit(key []byte, fence int64) (*lockEntry, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.keys[string(key)]
	if e == nil {
		return nil, nil
	}
	if fence < e.newest {
		return nil, store.ErrFenced
	}
	e.commits++
	e.refs++
	return e, nil
}

func (l *locker) endCommit(e *lockEntry) {
	if e == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	e.commits--
	e.refs--
	// A waiter whose TTL timer fired during the commit is waiting for this.
	l.takeOver(e.key, e)
	l.forget(e.key, e)
}

// Fence returns the lease's fence. Safe for concurrent use.
func (ls *lease) Fence() int64 { return ls.fence }

// Lost is closed when another caller took the lock over after this lease
// overran LockTTL. A lease that overran its TTL but was not taken over is
// still the newest grant, and its commits are accepted. Safe for
// concurrent use.
func (ls *lease) Lost() <-chan struct{} { return ls.lost }

// Release gives the lock back (to the first waiter, if any). Releasing
// twice, or releasing a lease that was taken over, does not affect the
// current holder. Safe for concurrent use.
func (ls *lease) Release() {
	ls.lk.mu.Lock()
	ls.lk.release(ls)
	ls.lk.mu.Unlock()
}

// reserveFences moves the fence high-water mark up by n and returns it.
// It runs on the store's connection; callers hold the locker's mutex, which
// no holder of the connection ever waits for.
func (s *Store) reserveFences(n int64) (int64, error) {
	if err := s.acquireConn(noCancel); err != nil {
		return 0, err
	}
	defer s.releaseConn()
	var high int64
	if err := s.q.fenceReserve.QueryRowContext(noCancel, n).Scan(&high); err != nil {
		return 0, fmt.Errorf("reserve fences: %w", err)
	}
	return high, nil
}

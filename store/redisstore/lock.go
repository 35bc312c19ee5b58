package redisstore

import (
	"context"
	"crypto/rand"
	"fmt"
	mrand "math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/arbiterhq/arbiter/store"
)

// Back-off between attempts to take a held lock: it starts at minBackoff,
// doubles up to maxBackoff, is jittered to half to full length and never
// sleeps past the holder's remaining TTL or the wait's end.
const (
	minBackoff = 5 * time.Millisecond
	maxBackoff = 100 * time.Millisecond
)

// releaseTimeout bounds the release call; a release that fails leaves the
// lock to expire after its TTL.
const releaseTimeout = 5 * time.Second

// Lock waits until key is free and returns its lease: SET NX PX LockTTL
// with a random token, granting the next fence. A held key is retried with
// jittered back-off until LockWait passes (ErrLockTimeout), ctx ends (an
// error wrapping ctx.Err()) or the store closes (ErrUnavailable). When
// Redis cannot be reached it fails at once with ErrUnavailable: a turn
// never runs unlocked. One round trip per attempt. Safe for concurrent use;
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
	tag := s.tag(key)
	keys := []string{tag + ":lock", tag + ":fence"}
	token := rand.Text()
	deadline := time.Now().Add(s.opts.LockWait)
	backoff := minBackoff
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		start := time.Now()
		// The attempt runs to completion even if ctx ends meanwhile, so that
		// its outcome is known; ctx is honoured between attempts.
		res, err := s.lockScript.Run(context.WithoutCancel(ctx), s.rdb, keys, token,
			pxArg(s.opts.LockTTL), pxArg(s.fenceTTL)).Int64Slice()
		if err == nil && len(res) != 2 {
			err = fmt.Errorf("unexpected lock reply %v", res)
		}
		if err != nil {
			// The lock may have been granted before the reply was lost.
			s.releaseToken(keys[0], token)
			return nil, s.fail(ctx, "lock", key, err)
		}
		if res[0] == 1 {
			if l := s.newLease(keys[0], token, res[1], start); l != nil {
				return l, nil
			}
			s.releaseToken(keys[0], token)
			return nil, fmt.Errorf("lock %s: %w", key, store.ErrUnavailable)
		}
		remaining := time.Until(deadline)
		if remaining <= 0 {
			return nil, fmt.Errorf("lock %s: waited %v: %w", key, s.opts.LockWait, store.ErrLockTimeout)
		}
		d := backoff/2 + mrand.N(backoff/2+1)
		if holder := time.Duration(res[1]) * time.Millisecond; holder > 0 && holder+time.Millisecond < d {
			d = holder + time.Millisecond
		}
		d = min(d, remaining)
		backoff = min(2*backoff, maxBackoff)
		if timer == nil {
			timer = time.NewTimer(d)
		} else {
			timer.Reset(d)
		}
		select {
		case <-timer.C:
		case <-ctx.Done():
			return nil, fmt.Errorf("lock %s: %w", key, ctx.Err())
		case <-s.closing:
			return nil, fmt.Errorf("lock %s: %w", key, store.ErrUnavailable)
		}
	}
}

// releaseToken deletes lockKey if token holds it. Errors are ignored: the
// lock then expires after its TTL.
func (s *Store) releaseToken(lockKey, token string) {
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	_ = s.releaseScript.Run(ctx, s.rdb, []string{lockKey}, token).Err()
}

// lease implements store.Lease.
type lease struct {
	s       *Store
	lockKey string
	token   string
	fence   int64
	lost    chan struct{} // closed by renew only
	done    chan struct{} // closed by Release
	once    sync.Once
	// paused stops renewal, as if the holder's process stalled; the lease
	// then lives out its TTL. Set by tests only.
	paused atomic.Bool
}

// newLease starts the renewal of a lease granted by an attempt that began
// at start: Redis counts its TTL from a moment after that. It returns nil
// once the store is closed.
func (s *Store) newLease(lockKey, token string, fence int64, start time.Time) *lease {
	l := &lease{
		s: s, lockKey: lockKey, token: token, fence: fence,
		lost: make(chan struct{}), done: make(chan struct{}),
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return nil
	}
	s.keepers.Add(1)
	go l.renew(start.Add(s.opts.LockTTL))
	return l
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
			n, err := l.s.extendScript.Run(ctx, l.s.rdb, []string{l.lockKey}, l.token, pxArg(ttl)).Int64()
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
// alone. Errors are ignored: the lock then expires after its TTL. Safe for
// concurrent use.
func (l *lease) Release() {
	l.once.Do(func() {
		close(l.done)
		l.s.releaseToken(l.lockKey, l.token)
	})
}

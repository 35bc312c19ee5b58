package redisstore

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// wakeLinger is how long the wake-up subscriber stays connected after the
// last Lock call of its store stopped waiting, so that bursts of contention
// share one connection.
const wakeLinger = time.Minute

// waker hands the wake-up messages of the lock queues to the Lock calls of
// one store that wait for them. A message on P{T}:wake names the token it
// is for, the head of the key's queue; the Lock call queued with that token
// then retries at once.
//
// It holds one subscriber connection while Lock calls of the store wait
// (and for wakeLinger after), subscribed to the wake-up channel of every
// key they wait for. Subscribing and unsubscribing happen on the
// subscriber's own goroutine, so a waiting Lock call never blocks on them;
// should the connection fail, go-redis reconnects and subscribes again,
// and waiters retry on their own meanwhile.
type waker struct {
	rdb    redis.UniversalClient
	linger time.Duration

	mu      sync.Mutex
	waiting map[string]map[string]chan struct{} // channel → token → wake-up
	sub     *subscriber                         // nil when not connected
	closed  bool
	subs    sync.WaitGroup // subscriber goroutines
}

// subscriber is one run of the subscriber goroutine.
type subscriber struct {
	kick chan struct{} // (buffer 1) the set of channels changed
	stop context.CancelFunc
}

func newWaker(rdb redis.UniversalClient) *waker {
	return &waker{rdb: rdb, linger: wakeLinger, waiting: make(map[string]map[string]chan struct{})}
}

// listen registers the Lock call queued with token on channel. It returns
// the channel its wake-ups arrive on and the function that unregisters it.
// Once the waker is closed, nothing arrives.
func (w *waker) listen(channel, token string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ch, func() {}
	}
	if w.sub == nil {
		ctx, cancel := context.WithCancel(context.Background())
		w.sub = &subscriber{kick: make(chan struct{}, 1), stop: cancel}
		w.subs.Add(1)
		go w.run(ctx, w.sub)
	}
	tokens := w.waiting[channel]
	if tokens == nil {
		tokens = make(map[string]chan struct{})
		w.waiting[channel] = tokens
		w.poke()
	}
	tokens[token] = ch
	return ch, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		tokens := w.waiting[channel]
		delete(tokens, token)
		if len(tokens) == 0 {
			delete(w.waiting, channel)
			w.poke()
		}
	}
}

// poke tells the subscriber that the set of channels changed. Called with
// mu held.
func (w *waker) poke() {
	if w.sub == nil {
		return
	}
	select {
	case w.sub.kick <- struct{}{}:
	default:
	}
}

// run keeps the subscriptions in line with the waiting Lock calls and
// delivers the messages, until ctx ends or nobody waited for the linger.
func (w *waker) run(ctx context.Context, me *subscriber) {
	defer w.subs.Done()
	defer func() {
		w.mu.Lock()
		if w.sub == me {
			w.sub = nil
		}
		w.mu.Unlock()
	}()
	ps := w.rdb.Subscribe(ctx)
	defer ps.Close()
	msgs := ps.Channel()
	subscribed := make(map[string]bool)
	idle := time.NewTimer(w.linger)
	defer idle.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-idle.C:
			w.mu.Lock()
			if len(w.waiting) == 0 {
				// Gone before the lock is dropped: a listen from now on
				// starts a new subscriber.
				if w.sub == me {
					w.sub = nil
				}
				w.mu.Unlock()
				return
			}
			w.mu.Unlock()
		case <-me.kick:
			var add, drop []string
			w.mu.Lock()
			for c := range w.waiting {
				if !subscribed[c] {
					subscribed[c] = true
					add = append(add, c)
				}
			}
			for c := range subscribed {
				if w.waiting[c] == nil {
					delete(subscribed, c)
					drop = append(drop, c)
				}
			}
			if len(w.waiting) == 0 {
				idle.Reset(w.linger)
			}
			w.mu.Unlock()
			// go-redis records the change even when it cannot send it, and
			// sends it when it reconnects; waiters poll until then.
			if len(add) > 0 {
				_ = ps.Subscribe(ctx, add...)
			}
			if len(drop) > 0 {
				_ = ps.Unsubscribe(ctx, drop...)
			}
		case m, ok := <-msgs:
			if !ok {
				return
			}
			w.mu.Lock()
			if ch := w.waiting[m.Channel][m.Payload]; ch != nil {
				select {
				case ch <- struct{}{}:
				default:
				}
			}
			w.mu.Unlock()
		}
	}
}

// close ends the subscription and waits for the subscriber to finish.
// Later listens receive nothing.
func (w *waker) close() {
	w.mu.Lock()
	w.closed = true
	if w.sub != nil {
		w.sub.stop()
		w.sub = nil
	}
	w.mu.Unlock()
	w.subs.Wait()
}

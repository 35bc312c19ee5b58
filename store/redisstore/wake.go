package redisstore

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"
)

// waker hands the wake-up messages of the lock queues to the Lock calls of
// one store that wait for them. A message on P{T}:wake names the token it
// is for, the head of the key's queue; the Lock call queued with that token
// then retries at once.
//
// It holds one subscriber connection, opened when a Lock call of the store
// first waits and kept until Close, subscribed to the wake-up channel of
// every key a Lock call of the store waits for. Subscribing and
// unsubscribing happen on its own goroutine, so a waiting Lock call never
// blocks on them; should the connection fail, go-redis reconnects and
// subscribes again, and waiters retry on their own meanwhile.
type waker struct {
	rdb redis.UniversalClient

	mu      sync.Mutex
	waiting map[string]map[string]chan struct{} // channel → token → wake-up
	started bool
	closed  bool
	stop    context.CancelFunc
	kick    chan struct{} // (buffer 1) the set of channels changed
	done    chan struct{} // closed when run returns
}

func newWaker(rdb redis.UniversalClient) *waker {
	return &waker{
		rdb:     rdb,
		waiting: make(map[string]map[string]chan struct{}),
		kick:    make(chan struct{}, 1),
		done:    make(chan struct{}),
	}
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
	if !w.started {
		w.started = true
		ctx, cancel := context.WithCancel(context.Background())
		w.stop = cancel
		go w.run(ctx)
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

// poke tells run that the set of channels changed. Called with mu held.
func (w *waker) poke() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// run keeps the subscriptions in line with the waiting Lock calls and
// delivers the messages, until ctx ends.
func (w *waker) run(ctx context.Context) {
	defer close(w.done)
	ps := w.rdb.Subscribe(ctx)
	defer ps.Close()
	msgs := ps.Channel()
	subscribed := make(map[string]bool)
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.kick:
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

// close ends the subscription and waits for run to return. Later listens
// receive nothing.
func (w *waker) close() {
	w.mu.Lock()
	w.closed = true
	started, stop := w.started, w.stop
	w.mu.Unlock()
	if started {
		stop()
		<-w.done
	}
}

package pgjournal

import (
	"context"
	"sync"
	"time"

	"github.com/arbiterhq/arbiter/store"
)

// Group append. A turn's rows are one implicit transaction on the server,
// and each transaction costs a round trip and a flush of the server's WAL;
// concurrent appends therefore share one. The first caller to find nobody
// sending becomes the sender: it takes everything queued, sends it as one
// batch and, when the answer is in, hands the role to the first caller that
// queued meanwhile, so nobody sends on others' behalf for long. Nobody
// waits to fill a batch: a lone turn is sent at once.

// batchTimeout bounds one batch on behalf of every caller in it; a caller's
// own context decides only while its turn is still queued.
const batchTimeout = 30 * time.Second

// queuedTurn is one AppendTurn waiting in the group.
type queuedTurn struct {
	rec *store.TurnRecord
	err error
	// done receives false once the turn was written (or failed), true when
	// its caller is to send the next batch; buffered, so nobody blocks.
	done chan bool
}

type appendGroup struct {
	mu      sync.Mutex
	queue   []*queuedTurn
	sending bool
}

// append queues rec and returns once it is committed, or failed.
func (g *appendGroup) append(ctx context.Context, j *Journal, rec *store.TurnRecord) error {
	mine := &queuedTurn{rec: rec, done: make(chan bool, 1)}
	g.mu.Lock()
	g.queue = append(g.queue, mine)
	lead := !g.sending
	g.sending = true
	g.mu.Unlock()
	for !lead {
		select {
		case lead = <-mine.done:
			if !lead {
				return mine.err
			}
		case <-ctx.Done():
			if g.withdraw(mine) {
				return j.fail("append turn "+rec.TurnID, ctx.Err())
			}
			// A batch has it, or its caller was named to send: wait.
			if lead = <-mine.done; !lead {
				return mine.err
			}
		}
	}
	g.send(j, mine)
	return mine.err
}

// send writes everything queued (mine among it), tells each caller its
// outcome, and hands the sending on.
func (g *appendGroup) send(j *Journal, mine *queuedTurn) {
	g.mu.Lock()
	batch := g.queue
	g.queue = nil
	g.mu.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
	defer cancel()
	if len(batch) == 1 {
		batch[0].err = j.appendAlone(ctx, batch[0].rec)
	} else {
		recs := make([]*store.TurnRecord, len(batch))
		for i, q := range batch {
			recs[i] = q.rec
		}
		if err := j.appendBatch(ctx, recs); err != nil {
			for _, q := range batch {
				q.err = j.appendAlone(ctx, q.rec)
			}
		}
	}

	g.mu.Lock()
	if len(g.queue) > 0 {
		g.queue[0].done <- true
	} else {
		g.sending = false
	}
	g.mu.Unlock()
	for _, q := range batch {
		if q != mine {
			q.done <- false
		}
	}
}

// withdraw removes q if no batch took it and it was not named to send.
func (g *appendGroup) withdraw(q *queuedTurn) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i, o := range g.queue {
		if o == q {
			if i == 0 && len(q.done) > 0 {
				return false // named to send: it must
			}
			g.queue = append(g.queue[:i], g.queue[i+1:]...)
			return true
		}
	}
	return false
}

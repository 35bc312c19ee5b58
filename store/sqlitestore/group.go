package sqlitestore

import (
	"context"
	"runtime"
	"sync"
	"time"

	"github.com/arbiterhq/arbiter/store"
)

// Group commit. Concurrent Commits, journal appends and execution records'
// begins and finishes queue their changes; whoever takes the connection
// next commits everything queued in one transaction, while the others wait
// for their write's outcome. A SQLite commit costs mostly its
// WAL frames — one per page changed — and concurrent turns change the same
// pages (the newest leaves of the journal's tables and indexes), so a batch
// of n turns writes far fewer than n times a turn's frames. Nobody waits to
// fill a batch: it is whatever queued while the previous one ran, and what
// the turns already runnable queued while its writer yielded once, so a
// lone turn commits at once. Each Commit returns only after the transaction
// holding its changes is durable, as before; a batch in which any commit
// fails is rolled back and its commits retried one transaction each, so one
// turn's failure (a stale fence) never takes another's with it.

// queuedOp is what a queued write is.
type queuedOp uint8

const (
	opCommit queuedOp = iota // a turn's Commit
	opBegin                  // BeginExecution's record
	opFinish                 // FinishExecution's completion
)

// queued is one write waiting in the group: a Commit, or an execution
// record's begin or finish, which share the turns' transactions instead of
// taking one each.
type queued struct {
	op    queuedOp
	c     store.Commit          // opCommit: a copy, the caller's stays on its stack
	rec   store.ExecutionRecord // opBegin, opFinish
	w     written
	fresh bool // opBegin: the record was new
	err   error
	// done receives once the commit was handled by another caller's batch;
	// buffered, so the batch never blocks on it.
	done chan struct{}
}

var queuedPool = sync.Pool{New: func() any { return &queued{} }}

func newQueued(op queuedOp) *queued {
	q := queuedPool.Get().(*queued)
	// A fresh channel each time: a channel belongs to the synctest bubble
	// that made it, and a pooled one would carry it into another.
	q.op, q.done = op, make(chan struct{}, 1)
	return q
}

// free returns q to the pool once its caller read its outcome.
func (q *queued) free() {
	q.c, q.rec, q.w, q.fresh, q.err = store.Commit{}, store.ExecutionRecord{}, written{}, false, nil
	queuedPool.Put(q)
}

// group is the queue of Commits waiting for the connection.
type group struct {
	mu     sync.Mutex
	queue  []*queued
	spare  []*queued // the previous batch's slice, reused
	maxLen int       // the longest batch so far, for the tests

	stats GroupStats
}

// GroupStats counts what the group commit did since Open.
type GroupStats struct {
	// Writes is the Commits and AppendTurns made durable or refused;
	// Transactions the transactions they took. Writes per transaction is
	// how many turns shared a commit.
	Writes, Transactions int64
}

// GroupStats returns the counts so far. Safe for concurrent use.
func (s *Store) GroupStats() GroupStats {
	s.group.mu.Lock()
	defer s.group.mu.Unlock()
	return s.group.stats
}

func (g *group) push(q *queued) {
	g.mu.Lock()
	g.queue = append(g.queue, q)
	g.mu.Unlock()
}

// take empties the queue and returns what it held.
func (g *group) take() []*queued {
	g.mu.Lock()
	batch := g.queue
	g.queue, g.spare = g.spare[:0], nil
	g.maxLen = max(g.maxLen, len(batch))
	g.mu.Unlock()
	return batch
}

func (g *group) count(writes, txs int) {
	g.mu.Lock()
	g.stats.Writes += int64(writes)
	g.stats.Transactions += int64(txs)
	g.mu.Unlock()
}

// giveBack returns a batch's slice for reuse.
func (g *group) giveBack(batch []*queued) {
	clear(batch)
	g.mu.Lock()
	if g.spare == nil {
		g.spare = batch[:0]
	}
	g.mu.Unlock()
}

// withdraw removes q if no batch took it yet, and reports whether it did.
func (g *group) withdraw(q *queued) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i, o := range g.queue {
		if o == q {
			g.queue = append(g.queue[:i], g.queue[i+1:]...)
			return true
		}
	}
	return false
}

// groupCommit queues mine and returns once the batch holding it is
// durable, with its outcome (also left in mine). Waiting honours ctx and
// the closing store only while mine is still queued: a batch that took it
// runs to its end.
func (s *Store) groupCommit(ctx context.Context, mine *queued) error {
	s.group.push(mine)
	// Yield once before competing for the connection: the turns already
	// runnable get to reach their own commits and join this batch, which
	// on few cores is what makes batches at all — a batch otherwise holds
	// only what queued while the previous one ran. Alone, it returns at
	// once.
	runtime.Gosched()
	for {
		select {
		case <-mine.done:
			return mine.err
		case s.sem <- struct{}{}:
			select {
			case <-mine.done: // a batch that ended just now had it
				s.releaseConn()
				return mine.err
			default:
			}
			if s.closed.Load() {
				s.releaseConn()
				return s.giveUp(mine, store.ErrUnavailable)
			}
			s.runBatch(mine)
			s.releaseConn()
			return mine.err
		case <-ctx.Done():
			return s.giveUp(mine, ctx.Err())
		case <-s.closing:
			return s.giveUp(mine, store.ErrUnavailable)
		}
	}
}

// giveUp withdraws mine and returns err, unless a batch took it already:
// then it waits for that batch's outcome.
func (s *Store) giveUp(mine *queued, err error) error {
	if s.group.withdraw(mine) {
		return err
	}
	<-mine.done
	return mine.err
}

// runBatch commits everything queued (mine among it) and tells each
// waiter its outcome. Called holding the connection; the commits run on
// its driver connection (direct.go).
func (s *Store) runBatch(mine *queued) {
	batch := s.group.take()
	now := s.now()
	txs := 1
	err := s.conn.Raw(func(dc any) error {
		if err := s.cq.use(dc); err != nil {
			return err
		}
		if len(batch) == 1 {
			batch[0].err = s.commitTx(batch[0], now)
		} else if err := s.commitBatch(batch, now); err != nil {
			for _, q := range batch {
				q.err = s.commitTx(q, now)
			}
			txs += len(batch)
		}
		return nil
	})
	if err != nil { // the connection could not be had: nothing was written
		for _, q := range batch {
			q.err = err
		}
	}
	s.group.count(len(batch), txs)
	for _, q := range batch {
		if q.err == nil && q.op == opCommit {
			s.committed(&q.c, q.w)
		}
	}
	s.maybeCleanup(now)
	for _, q := range batch {
		if q != mine {
			q.done <- struct{}{}
		}
	}
	s.group.giveBack(batch)
}

// commitTx applies one queued write in a transaction of its own. Called
// inside Raw.
func (s *Store) commitTx(b *queued, now time.Time) error {
	return s.commitBatch([]*queued{b}, now)
}

// commitBatch applies every commit of batch in one transaction; on any
// error it rolls all of them back. Called inside Raw.
func (s *Store) commitBatch(batch []*queued, now time.Time) (err error) {
	q := &s.cq
	if _, err := q.exec(q.begin); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			// A failed statement may already have ended the transaction;
			// then ROLLBACK fails harmlessly.
			_, _ = q.exec(q.rollback)
		}
	}()
	for _, b := range batch {
		if err = s.applyQueued(b, now); err != nil {
			return err
		}
	}
	_, err = q.exec(q.commit)
	return err
}

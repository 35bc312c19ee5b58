package sqlitestore

import (
	"context"
	"sync"
	"time"

	"github.com/arbiterhq/arbiter/store"
)

// Group commit. Concurrent Commits queue their changes; whoever takes the
// connection next commits everything queued in one transaction, while the
// others wait for their turn's outcome. A SQLite commit costs mostly its
// WAL frames — one per page changed — and concurrent turns change the same
// pages (the newest leaves of the journal's tables and indexes), so a batch
// of n turns writes far fewer than n times a turn's frames. Nobody waits to
// fill a batch: it is whatever queued while the previous one ran, so a lone
// turn commits at once. Each Commit returns only after the transaction
// holding its changes is durable, as before; a batch in which any commit
// fails is rolled back and its commits retried one transaction each, so one
// turn's failure (a stale fence) never takes another's with it.

// queued is one Commit waiting in the group.
type queued struct {
	c   store.Commit // a copy: the caller's Commit stays on its stack
	w   written
	err error
	// done receives once the commit was handled by another caller's batch;
	// buffered, so the batch never blocks on it.
	done chan struct{}
}

var queuedPool = sync.Pool{New: func() any { return &queued{done: make(chan struct{}, 1)} }}

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

// groupCommit queues c and returns once the batch holding it is durable,
// with its outcome. Waiting honours ctx and the closing store only while c is
// still queued: a batch that took it runs to its end.
func (s *Store) groupCommit(ctx context.Context, c *store.Commit) error {
	mine := queuedPool.Get().(*queued)
	mine.c = *c
	s.group.push(mine)
	defer func() {
		mine.c, mine.w, mine.err = store.Commit{}, written{}, nil
		queuedPool.Put(mine)
	}()
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
			batch[0].w, batch[0].err = s.commitTx(&batch[0].c, now)
		} else if err := s.commitBatch(batch, now); err != nil {
			for _, q := range batch {
				q.w, q.err = s.commitTx(&q.c, now)
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
		if q.err == nil {
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

// commitBatch applies every commit of batch in one transaction; on any
// error it rolls all of them back. Called inside Raw.
func (s *Store) commitBatch(batch []*queued, now time.Time) (err error) {
	q := &s.cq
	if _, err := q.exec(q.begin); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_, _ = q.exec(q.rollback)
		}
	}()
	for _, b := range batch {
		if b.w, err = s.apply(&b.c, now); err != nil {
			return err
		}
	}
	_, err = q.exec(q.commit)
	return err
}

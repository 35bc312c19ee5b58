package sqlitestore

import (
	"context"
	"fmt"
	"time"

	"github.com/arbiterhq/arbiter/store"
)

var _ store.Pruner = (*Store)(nil)

// defaultPruneBatch keeps one batch to a few milliseconds of the store's
// connection: a turn waiting for it waits no longer than that.
const defaultPruneBatch = 50

// pruneRest is how many times a batch's own duration the pruning rests
// after it: it takes at most 1/(1+pruneRest) of the store (and of a CPU),
// so a backlog — the first run over a large journal — drains in the
// background without slowing turns, and the steady state (what aged out
// since the last run) is a batch or two.
const pruneRest = 20

// Prune deletes turns and finished execution records past r, oldest first,
// a batch per transaction, giving the connection back between batches.
// Deleting a turn deletes its model and tool calls (foreign keys). The
// file does not shrink: SQLite reuses the freed pages for new records, so
// a store under retention stops growing once a period's worth is kept.
func (s *Store) Prune(ctx context.Context, now time.Time, r store.Retention) (store.Pruned, error) {
	var out store.Pruned
	if r.Batch <= 0 {
		r.Batch = defaultPruneBatch
	}
	kinds := []struct {
		period time.Duration
		query  string
		count  *int
	}{
		{r.Turns, `DELETE FROM turns WHERE rowid IN
			(SELECT rowid FROM turns WHERE started_at < ?1 ORDER BY started_at LIMIT ?2)`, &out.Turns},
		{r.Executions, `DELETE FROM executions WHERE rowid IN
			(SELECT rowid FROM executions WHERE state != 'started' AND finished_at < ?1 ORDER BY finished_at LIMIT ?2)`, &out.Executions},
	}
	for _, k := range kinds {
		if k.period <= 0 {
			continue
		}
		before := now.Add(-k.period).UnixNano()
		for {
			t0 := time.Now()
			n, err := s.pruneBatch(ctx, k.query, before, r.Batch)
			*k.count += n
			if err != nil {
				return out, err
			}
			if n < r.Batch {
				break
			}
			select {
			case <-ctx.Done():
				return out, ctx.Err()
			case <-time.After(pruneRest * time.Since(t0)):
			}
		}
	}
	return out, nil
}

func (s *Store) pruneBatch(ctx context.Context, query string, before int64, batch int) (int, error) {
	if err := s.acquireConn(ctx); err != nil {
		return 0, s.fail("prune", "", err)
	}
	defer s.releaseConn()
	res, err := s.conn.ExecContext(noCancel, query, before, batch)
	if err != nil {
		return 0, s.fail("prune", "", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("prune: %w", err)
	}
	return int(n), nil
}

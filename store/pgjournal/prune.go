package pgjournal

import (
	"context"
	"fmt"
	"time"

	"github.com/arbiterhq/arbiter/store"
)

var _ store.Pruner = (*Journal)(nil)

// Prune deletes turns that started before now - r.Turns (with their model
// and tool calls, by cascade), a batch per statement. The
// journal keeps no execution records. Space is reclaimed by autovacuum.
func (j *Journal) Prune(ctx context.Context, now time.Time, r store.Retention) (store.Pruned, error) {
	var out store.Pruned
	if r.Turns <= 0 {
		return out, nil
	}
	if r.Batch <= 0 {
		r.Batch = 500
	}
	before := now.Add(-r.Turns)
	for {
		tag, err := j.pool.Exec(ctx, j.q.pruneTurns, before, r.Batch)
		if err != nil {
			return out, fmt.Errorf("prune turns: %w", err)
		}
		n := int(tag.RowsAffected())
		out.Turns += n
		if n < r.Batch {
			return out, nil
		}
	}
}

// Package wait is the one way the engine's packages pause: for a time, or
// until their context ends, whichever comes first — a retry's backoff, a
// read-back's next attempt, a fake server's delay.
package wait

import (
	"context"
	"time"
)

// Sleep waits d or until ctx ends, and then returns ctx's error. A d of
// zero or less waits for nothing.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

package turn

import (
	"context"
	"fmt"

	"github.com/arbiterhq/arbiter/store"
)

// lock takes the conversation lock, so the turns of one tenant + chat + user
// run one at a time in arrival order, and records how long it waited.
func (e *Engine) lock(ctx context.Context, s *state) error {
	lease, err := e.cfg.Locker.Lock(ctx, s.key.String())
	waited := e.cfg.Now().Sub(s.start)
	s.trace.LockWaitMS = waited.Milliseconds()
	s.trace.step(StepLock, "", s.start, s.start.Add(waited), "")
	if err != nil {
		return fmt.Errorf("lock conversation %s: %w", s.key, err)
	}
	s.lease = lease
	s.trace.Fence = lease.Fence()
	// A lease that does not renew itself (the embedded store's) is kept
	// from takeover for as long as the turn may run and commit: a slow
	// model's turn is not lost to the conversation's next message.
	if x, ok := lease.(store.Extender); ok {
		x.Extend(e.cfg.TurnTimeout + journalTimeout)
	}
	return nil
}

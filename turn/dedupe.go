package turn

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/arbiterhq/arbiter/chat"
)

// dedupe makes a redelivered message a no-op: a message id seen before
// returns the first turn's reply, marked duplicate. A message id whose
// first turn never completed (the process died) is processed again, from
// the writes that turn began if it began any (see recoverInterrupted).
func (e *Engine) dedupe(ctx context.Context, s *state) (duplicate bool, err error) {
	if s.in.MessageID == "" {
		return false, nil
	}
	start := e.cfg.Now()
	rec, claimed, err := e.cfg.State.ClaimMessage(ctx, s.key, s.in.MessageID, s.id, s.now)
	s.trace.step(StepDedupe, "", start, e.cfg.Now(), "")
	if err != nil {
		return false, fmt.Errorf("claim message %s of %s: %w", s.in.MessageID, s.key, err)
	}
	if claimed || !rec.Done {
		s.claimed = true
		if !claimed {
			s.interrupted, s.interruptedAt = rec.TurnID, rec.At
			s.trace.Notes = append(s.trace.Notes, "message "+s.in.MessageID+" was accepted by turn "+rec.TurnID+" which did not complete; processing it again")
		}
		return false, nil
	}
	var out chat.Outbound
	if err := json.Unmarshal(rec.Reply, &out); err != nil {
		return false, fmt.Errorf("stored reply of message %s: %w", s.in.MessageID, err)
	}
	out.Duplicate = true
	s.out = out
	return true, nil
}

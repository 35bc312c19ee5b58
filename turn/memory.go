package turn

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/arbiterhq/arbiter/store"
)

// loadMemory reads the conversation and its pending action, then applies
// the memory policy: a long pause starts a new conversation, and messages
// past the hard TTL are forgotten.
func (e *Engine) loadMemory(ctx context.Context, s *state) error {
	start := e.cfg.Now()
	conv, err := e.cfg.State.LoadConversation(ctx, s.key)
	switch {
	case errors.Is(err, store.ErrNotFound):
		conv = store.Conversation{}
	case err != nil:
		return fmt.Errorf("load memory %s: %w", s.key, err)
	}
	p, err := e.cfg.State.GetPending(ctx, s.key)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return fmt.Errorf("load pending action %s: %w", s.key, err)
	default:
		s.pending = &p
	}
	kept, fresh := applyMemoryPolicy(conv, s.now, s.memory)
	conv.Messages = kept
	if fresh {
		conv.StartedAt = time.Time{}
		s.trace.Notes = append(s.trace.Notes, "pause longer than "+s.memory.Pause.String()+": new conversation")
	}
	s.conv = conv
	s.trace.MemoryMessages = len(kept)
	s.trace.step(StepLoadMemory, "", start, e.cfg.Now(), "")
	return nil
}

// applyMemoryPolicy returns the remembered messages the model may still
// see at now, and whether the conversation starts afresh because of a
// pause. Pure.
func applyMemoryPolicy(conv store.Conversation, now time.Time, p MemoryPolicy) (kept []store.Message, fresh bool) {
	if !conv.UpdatedAt.IsZero() && now.Sub(conv.UpdatedAt) > p.Pause {
		return nil, true
	}
	first := len(conv.Messages)
	for i, m := range conv.Messages {
		if now.Sub(m.At) <= p.TTL {
			first = i
			break
		}
	}
	kept = conv.Messages[first:]
	if len(kept) > p.Window {
		kept = kept[len(kept)-p.Window:]
	}
	return kept, false
}

// updateMemory applies the turn's additions and the decision's topic flags
// to the conversation that will be committed. Pure apart from s.
func (e *Engine) updateMemory(s *state) {
	msgs := s.conv.Messages
	switch {
	case s.resetMemory:
		// /reset, or the model marked the topic done: forget everything,
		// this turn included.
		msgs, s.added = nil, nil
	case s.keepLast:
		// newTopic: keep only the last user message of this turn (and what
		// the turn itself produced after it).
		msgs = nil
	}
	if s.keepLast && !s.resetMemory {
		last := -1
		for i, m := range s.added {
			if m.Role == store.RoleUser {
				last = i
			}
		}
		if last >= 0 {
			s.added = s.added[last:]
		}
	}
	msgs = append(append([]store.Message(nil), msgs...), s.added...)
	if len(msgs) > s.memory.Window {
		msgs = msgs[len(msgs)-s.memory.Window:]
	}
	s.conv.Messages = msgs
	if s.conv.StartedAt.IsZero() {
		s.conv.StartedAt = s.now
	}
	s.conv.UpdatedAt = s.now
	e.stateLifetimes(s)
}

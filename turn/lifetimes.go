package turn

import (
	"fmt"
	"maps"
	"time"
)

// Defaults of Lifetimes.
const (
	DefaultCaseLifetime  = 30 * 24 * time.Hour
	DefaultOfferLifetime = 24 * time.Hour
)

// Lifetimes say how long each part of a conversation's state is kept after
// the conversation's last turn, by what the part means — apart from the
// messages the model sees, which follow the MemoryPolicy. A part also goes
// when its own end comes first (the offer is taken, a mode ends its own:
// the user leaves it, its task delivers; /reset), and with the retention of the
// records that hold it; never because another part's time ran out. A
// pending confirmation lives by PendingTTL, and an action waiting for
// approval by its own record until it ends: its resumed turn needs nothing
// of the conversation but its key (the action carries its case). Zero
// fields take the defaults.
type Lifetimes struct {
	// Case is how long a conversation stays bound to its case
	// (chat.Inbound.Case) after its last turn; a rebinding to another
	// case is refused for as long. Default 30 days.
	Case time.Duration
	// Offer is how long an offer of choices (a draft) can be taken up,
	// and long buttons pressed. Default a day.
	Offer time.Duration
	// Slots are the lifetimes of the modes' own slots, by the slot's
	// name (ModeSlot.Name); a slot not here lasts its ModeSlot.Default.
	Slots map[string]time.Duration
}

// withDefaults returns l with zero fields set to the defaults.
func (l Lifetimes) withDefaults() Lifetimes {
	orDefault(&l.Case, DefaultCaseLifetime)
	orDefault(&l.Offer, DefaultOfferLifetime)
	return l
}

// over returns l with o's set fields in its place.
func (l Lifetimes) over(o Lifetimes) Lifetimes {
	pick := func(d *time.Duration, v time.Duration) {
		if v > 0 {
			*d = v
		}
	}
	pick(&l.Case, o.Case)
	pick(&l.Offer, o.Offer)
	if len(o.Slots) > 0 {
		l.Slots = maps.Clone(l.Slots)
		if l.Slots == nil {
			l.Slots = make(map[string]time.Duration, len(o.Slots))
		}
		for name, d := range o.Slots {
			if d > 0 {
				l.Slots[name] = d
			}
		}
	}
	return l
}

// slot is how long mode slot sl lasts: its lifetime in l, else its
// default.
func (l Lifetimes) slot(sl ModeSlot) time.Duration {
	if d := l.Slots[sl.Name]; d > 0 {
		return d
	}
	return sl.Default
}

// taskLifetime is the longest lifetime of the modes' tasks (a question
// waiting for its answer): what a question's buttons last.
func (e *Engine) taskLifetime(l Lifetimes) time.Duration {
	var d time.Duration
	for _, sl := range e.slots {
		if sl.Task {
			d = max(d, l.slot(sl))
		}
	}
	return d
}

// checkLifetimes refuses a case binding that would end before the
// messages of its case the model still sees (the engine's or an
// assistant's): the conversation could then be bound to another case with
// them in view. Called with the defaults filled in.
func checkLifetimes(cfg *Config) error {
	e := &Engine{cfg: *cfg}
	if l, m := cfg.Lifetimes.Case, cfg.Memory.TTL; l < m {
		return fmt.Errorf("turn: the case lifetime %v is shorter than the memory's TTL %v", l, m)
	}
	for name, a := range cfg.Assistants {
		if l, m := e.lifetimesFor(a).Case, e.memoryFor(a).TTL; l < m {
			return fmt.Errorf("assistant %s: the case lifetime %v is shorter than the memory's TTL %v", name, l, m)
		}
	}
	return nil
}

// lifetimesFor is the engine's lifetimes with a's own values.
func (e *Engine) lifetimesFor(a Assistant) Lifetimes {
	return e.cfg.Lifetimes.over(a.Lifetimes)
}

// stateLifetimes states, on the conversation about to be committed, until
// when each of its parts is kept (store.Conversation.MessagesUntil,
// SlotsUntil), counted from this turn. The store keeps the record as long
// as its longest-lived part and drops each other part on its own time.
func (e *Engine) stateLifetimes(s *state) {
	l := e.lifetimesFor(s.assistant)
	c := &s.conv
	c.MessagesUntil = s.now.Add(s.memory.TTL)
	if len(c.Slots) == 0 {
		c.SlotsUntil = nil
		return
	}
	if c.SlotsUntil == nil {
		c.SlotsUntil = make(map[string]time.Time, len(c.Slots))
	} else {
		clear(c.SlotsUntil) // the times loaded with the state: this turn's own
	}
	last := c.MessagesUntil
	for name := range c.Slots {
		d := s.memory.TTL // what only the model's view of the messages needs
		switch name {
		case caseSlot:
			d = l.Case
		case draftSlot:
			d = l.Offer
		case buttonSlot:
			d = max(l.Offer, e.taskLifetime(l)) // an offer's or a question's buttons
		case blockMarkerSlot:
			continue // below: as long as anything it marks
		default:
			if sl, ok := e.slots[name]; ok && l.slot(sl) > 0 {
				d = l.slot(sl) // a mode's own
			}
		}
		u := s.now.Add(d)
		c.SlotsUntil[name] = u
		last = laterOf(last, u)
	}
	if _, ok := c.Slots[blockMarkerSlot]; ok {
		c.SlotsUntil[blockMarkerSlot] = last
	}
}

func laterOf(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

package store

import "time"

// A conversation's record holds parts that mean different things and so
// live for different times: the messages a model may see (the memory
// policy), and slots such as a case binding, an active skill or an
// interview waiting for its answer. Whoever commits the record states each
// part's time (Conversation.MessagesUntil, Conversation.SlotsUntil); the
// backend keeps the record as long as its longest-lived part and drops the
// others one by one as their times pass. These two functions are that rule,
// shared by the backends.

// Expiry returns when the last of c's parts ends: the latest of its
// times, where a part without one ends at def.
func (c *Conversation) Expiry(def time.Time) time.Time {
	end := c.MessagesUntil
	if end.IsZero() {
		end = def
	}
	for k := range c.Slots {
		u := c.SlotsUntil[k]
		if u.IsZero() {
			u = def
		}
		if u.After(end) {
			end = u
		}
	}
	return end
}

// Prune removes from c the parts whose time is before now — the messages
// (Messages emptied), or a slot — and reports whether any part is left. A
// part without a time of its own ends at def; with def zero too, it ends
// with the record, which the backend judges. It changes c's maps in place.
func (c *Conversation) Prune(now, def time.Time) (live bool) {
	ended := func(u time.Time) bool {
		if u.IsZero() {
			u = def
		}
		return !u.IsZero() && now.After(u)
	}
	live = !ended(c.MessagesUntil)
	if !live {
		c.Messages, c.MessagesUntil = nil, time.Time{}
	}
	for k := range c.Slots {
		if ended(c.SlotsUntil[k]) {
			delete(c.Slots, k)
			delete(c.SlotsUntil, k)
			continue
		}
		live = true
	}
	for k := range c.SlotsUntil {
		if _, ok := c.Slots[k]; !ok {
			delete(c.SlotsUntil, k) // the time of a slot that is not there
		}
	}
	return live
}

package telegram

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/arbiterhq/arbiter/store"
)

// fetchLimit is how many pending items one inbox read returns.
const fetchLimit = 500

// settle is added to every hold so that an update accepted just before the
// hold ended is already readable from the inbox when the batch is formed.
const settle = 150 * time.Millisecond

// batchPrefix starts the inbox id of a batch of updates joined into one
// turn: "batch:<first member id>:<hash of the member ids>".
const batchPrefix = "batch:"

// errRegroup: the queue of a key changed while a batch was being stored.
var errRegroup = errors.New("queue out of date")

// entry is one unit of processing: a single update, or a batch.
type entry struct {
	id       string
	at       time.Time
	kind     int
	chatID   int64
	members  []member
	batch    bool
	attempts int
}

// keyQueue holds the entries of one order key, in acceptance order. While
// busy, entries[0] is being processed.
type keyQueue struct {
	entries   []*entry
	active    bool // a worker owns the key
	busy      bool
	notBefore time.Time
	changed   chan struct{} // closed when entries are added
}

type batchPayload struct {
	Members []batchMember `json:"members"`
}

type batchMember struct {
	ID         string          `json:"id"`
	AcceptedAt time.Time       `json:"accepted_at"`
	Update     json.RawMessage `json:"update"`
}

// decodeEntry turns an inbox item into an entry.
func decodeEntry(it store.ChannelItem) (*entry, error) {
	if strings.HasPrefix(it.ID, batchPrefix) {
		var b batchPayload
		if err := json.Unmarshal(it.Payload, &b); err != nil {
			return nil, fmt.Errorf("batch %s: %w", it.ID, err)
		}
		if len(b.Members) == 0 {
			return nil, fmt.Errorf("batch %s has no members", it.ID)
		}
		e := &entry{id: it.ID, at: it.AcceptedAt, kind: kindAlone, batch: true}
		for _, bm := range b.Members {
			u, rt, err := decodeUpdate(bm.Update)
			if err != nil || !rt.relevant || u.Message == nil {
				return nil, fmt.Errorf("batch %s member %s: not a message", it.ID, bm.ID)
			}
			e.chatID = rt.chatID
			e.members = append(e.members, member{id: bm.ID, at: bm.AcceptedAt, raw: bm.Update, u: u})
		}
		return e, nil
	}
	u, rt, err := decodeUpdate(it.Payload)
	if err != nil {
		return nil, fmt.Errorf("item %s: %w", it.ID, err)
	}
	if !rt.relevant {
		return nil, fmt.Errorf("item %s: not an update the channel handles", it.ID)
	}
	return &entry{id: it.ID, at: it.AcceptedAt, kind: rt.kind, chatID: rt.chatID,
		members: []member{{id: it.ID, at: it.AcceptedAt, raw: it.Payload, u: u}}}, nil
}

// plan decides how many head entries form the next turn, or, when that
// cannot be known yet, how long to wait (n == 0). It is a function of the
// entries' kinds and acceptance times only, so every instance forms the
// same batches from the same inbox.
//
//   - a button, an edit, unsupported content or a stored batch: alone.
//   - the user's words followed within grace by a forward: they lead a
//     batch of forwards; with nothing after them yet, wait out the grace.
//   - a forward: the run of forwards at most hold apart (at most maxBatch),
//     then the user's words if they follow within hold, unless words lead.
//     A run reaching the last known entry waits until hold has passed.
func plan(es []*entry, now time.Time, hold, grace time.Duration, maxBatch int) (n int, wait time.Duration) {
	head := es[0]
	if head.kind == kindAlone || hold < 0 {
		return 1, 0
	}
	start, lead := 0, false
	if head.kind == kindWords {
		if grace < 0 {
			return 1, 0
		}
		if len(es) == 1 {
			if d := head.at.Add(grace + settle).Sub(now); d > 0 {
				return 0, d
			}
			return 1, 0
		}
		if es[1].kind != kindForward || es[1].at.Sub(head.at) > grace {
			return 1, 0
		}
		start, lead = 1, true
	}
	end, count := start, 1
	for end+1 < len(es) && count < maxBatch && es[end+1].kind == kindForward && es[end+1].at.Sub(es[end].at) <= hold {
		end++
		count++
	}
	if count >= maxBatch {
		return end + 1, 0
	}
	if end+1 < len(es) {
		next := es[end+1]
		if !lead && next.kind == kindWords && next.at.Sub(es[end].at) <= hold {
			return end + 2, 0
		}
		return end + 1, 0
	}
	if d := es[end].at.Add(hold + settle).Sub(now); d > 0 {
		return 0, d
	}
	return end + 1, 0
}

// dispatch reads the inbox on every wake-up and tick and starts a worker
// for each order key with entries and none running.
func (c *Channel) dispatch(ctx context.Context) {
	t := time.NewTicker(c.cfg.PollInterval)
	defer t.Stop()
	lastPrune := c.cfg.Now()
	for {
		c.fetch(ctx)
		c.retryDone(ctx)
		c.startWorkers(ctx)
		if now := c.cfg.Now(); now.Sub(lastPrune) > time.Minute {
			c.prune(now)
			lastPrune = now
		}
		select {
		case <-ctx.Done():
			return
		case <-c.wake:
		case <-t.C:
		}
	}
}

// fetch reads pending items and merges the new ones into the queues.
func (c *Channel) fetch(ctx context.Context) {
	c.mu.Lock()
	c.fetchGen++
	gen := c.fetchGen
	c.mu.Unlock()
	items, err := c.cfg.Inbox.Pending(ctx, ChannelName, fetchLimit)
	if err != nil {
		if ctx.Err() == nil {
			c.cfg.Logger.Warn("telegram: reading the inbox failed", "err", err)
		}
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, it := range items {
		if c.seen[it.ID] {
			continue
		}
		if _, ok := c.finished[it.ID]; ok {
			continue
		}
		e, err := decodeEntry(it)
		if err != nil {
			// Never written by this channel as such; drop it so it does
			// not block its chat forever.
			c.cfg.Logger.Error("telegram: dropping an unreadable inbox item", "item", it.ID, "err", err)
			c.finished[it.ID] = gen
			c.redo[it.ID] = true
			continue
		}
		q := c.queues[it.OrderKey]
		if q == nil {
			q = &keyQueue{changed: make(chan struct{})}
			c.queues[it.OrderKey] = q
		}
		c.insert(q, e)
		if u := e.members[0].u; !e.batch && u.CallbackQuery != nil && !c.answered[e.id] {
			// Marked now, not when the answer goes: the item's turn may
			// run and finish before that, and must not answer it again.
			c.answered[e.id] = true
			c.workers.Go(func() { c.answerEarly(ctx, e.id, u.CallbackQuery) })
		}
	}
	for id, g := range c.finished {
		if g < gen && !c.redo[id] {
			delete(c.finished, id)
		}
	}
}

// insert adds e to q (c.mu held). A batch replaces its members waiting in
// the queue, taking the place of the first; everything else goes last, the
// inbox returning items in acceptance order.
func (c *Channel) insert(q *keyQueue, e *entry) {
	c.seen[e.id] = true
	pos := len(q.entries)
	if e.batch {
		members := map[string]bool{}
		for _, m := range e.members {
			members[m.id] = true
			c.seen[m.id] = true
		}
		kept := q.entries[:0]
		for i, x := range q.entries {
			if !x.batch && members[x.id] && !(i == 0 && q.busy) {
				if pos == len(q.entries) {
					pos = len(kept)
				}
				continue
			}
			kept = append(kept, x)
		}
		if pos > len(kept) {
			pos = len(kept)
		}
		q.entries = kept
	}
	q.entries = append(q.entries, nil)
	copy(q.entries[pos+1:], q.entries[pos:])
	q.entries[pos] = e
	close(q.changed)
	q.changed = make(chan struct{})
}

func (c *Channel) startWorkers(ctx context.Context) {
	now := c.cfg.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	for key, q := range c.queues {
		if q.active || len(q.entries) == 0 || now.Before(q.notBefore) {
			continue
		}
		q.active = true
		c.workers.Go(func() { c.work(ctx, key) })
	}
}

// work processes the entries of one order key in order until the queue is
// empty, a turn fails (the dispatcher restarts it after the backoff) or ctx
// ends.
func (c *Channel) work(ctx context.Context, key string) {
	for {
		c.mu.Lock()
		q := c.queues[key]
		if q == nil {
			c.mu.Unlock()
			return
		}
		if len(q.entries) == 0 {
			delete(c.queues, key)
			c.mu.Unlock()
			return
		}
		now := c.cfg.Now()
		if ctx.Err() != nil || now.Before(q.notBefore) {
			q.active = false
			c.mu.Unlock()
			return
		}
		n, wait := plan(q.entries, now, c.cfg.ForwardHold, c.cfg.CommentGrace, c.cfg.MaxBatch)
		changed := q.changed
		c.mu.Unlock()
		if n == 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
			case <-changed:
			case <-t.C:
			}
			t.Stop()
			continue
		}
		e, err := c.claim(ctx, key, n)
		if errors.Is(err, errRegroup) {
			continue
		}
		if err != nil {
			c.holdKey(key, err)
			return
		}
		select {
		case c.sem <- struct{}{}:
		case <-ctx.Done():
			c.release(key, e, ctx.Err())
			return
		}
		err = c.process(ctx, e)
		<-c.sem
		if err != nil && c.giveUpNow(e) {
			c.cfg.Logger.Error("telegram: giving up on an item", "item", e.id, "attempts", e.attempts+1, "err", err)
			c.giveUp(ctx, e)
			err = nil
		}
		if !c.release(key, e, err) {
			return
		}
	}
}

// claim marks the first n entries of key as being processed. Several
// entries are first stored in the inbox as one batch item, whose id is
// derived from its members: storing the same batch again (a restart, another
// instance) finds it already accepted and processes the same turn.
func (c *Channel) claim(ctx context.Context, key string, n int) (*entry, error) {
	c.mu.Lock()
	q := c.queues[key]
	if n == 1 {
		q.busy = true
		e := q.entries[0]
		c.mu.Unlock()
		return e, nil
	}
	group := append([]*entry(nil), q.entries[:n]...)
	b := &entry{kind: kindAlone, at: group[0].at, chatID: group[0].chatID, batch: true}
	var p batchPayload
	sum := sha256.New()
	for _, g := range group {
		m := g.members[0]
		b.members = append(b.members, m)
		p.Members = append(p.Members, batchMember{ID: m.id, AcceptedAt: m.at, Update: m.raw})
		sum.Write([]byte(m.id + "\n"))
	}
	b.id = batchPrefix + group[0].id + ":" + hex.EncodeToString(sum.Sum(nil)[:6])
	c.seen[b.id] = true // a read of the stored batch must not queue it again
	c.mu.Unlock()

	payload, err := json.Marshal(p)
	if err == nil {
		_, err = c.cfg.Inbox.Accept(ctx, store.ChannelItem{Channel: ChannelName, ID: b.id, OrderKey: key, Payload: payload, AcceptedAt: b.at})
	}
	c.mu.Lock()
	if err != nil {
		delete(c.seen, b.id)
		c.mu.Unlock()
		return nil, fmt.Errorf("store batch %s: %w", b.id, err)
	}
	for i, g := range group {
		if i >= len(q.entries) || q.entries[i] != g {
			// A stored batch read meanwhile took some of these updates;
			// ours is dropped unprocessed and the queue planned again.
			c.mu.Unlock()
			c.finish(ctx, &entry{id: b.id})
			return nil, errRegroup
		}
	}
	q.entries = append([]*entry{b}, q.entries[n:]...)
	q.busy = true
	c.mu.Unlock()
	return b, nil
}

// holdKey stops the worker of key until the backoff has passed.
func (c *Channel) holdKey(key string, err error) {
	c.cfg.Logger.Warn("telegram: could not store a batch", "key", key, "err", err)
	c.mu.Lock()
	defer c.mu.Unlock()
	q := c.queues[key]
	q.active = false
	q.notBefore = c.cfg.Now().Add(c.cfg.RetryBackoff)
}

// release ends the processing of e: on success it leaves the queue; on
// failure the key waits for the backoff. It reports whether the worker
// goes on.
func (c *Channel) release(key string, e *entry, err error) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	q := c.queues[key]
	q.busy = false
	if err == nil {
		if len(q.entries) > 0 && q.entries[0] == e {
			q.entries = q.entries[1:]
		}
		return true
	}
	e.attempts++
	_, after := transient(err)
	q.notBefore = c.cfg.Now().Add(max(after, backoff(c.cfg.RetryBackoff, e.attempts)))
	q.active = false
	if !errors.Is(err, context.Canceled) {
		c.cfg.Logger.Warn("telegram: processing failed, will retry", "item", e.id, "attempt", e.attempts, "err", err)
	}
	return false
}

// giveUpNow: an entry failing for long enough is dropped with an apology.
func (c *Channel) giveUpNow(e *entry) bool {
	return e.attempts+1 >= 3 && c.cfg.Now().Sub(e.at) > c.cfg.GiveUpAfter
}

// finish marks e done in the inbox: a batch's members first, the batch
// last, so a batch is never formed again from part of its members. A
// failed Done is retried by the dispatcher.
func (c *Channel) finish(ctx context.Context, e *entry) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), callTimeout)
	defer cancel()
	ids := make([]string, 0, len(e.members)+1)
	for _, m := range e.members {
		if m.id != e.id {
			ids = append(ids, m.id)
		}
	}
	ids = append(ids, e.id)
	failed := map[string]bool{}
	for _, id := range ids {
		if err := c.cfg.Inbox.Done(ctx, ChannelName, id); err != nil {
			c.cfg.Logger.Warn("telegram: marking an item done failed", "item", id, "err", err)
			failed[id] = true
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		delete(c.seen, id)
		delete(c.answered, id)
		delete(c.unsent, id)
		c.finished[id] = c.fetchGen
		if failed[id] {
			c.redo[id] = true
		}
	}
}

// retryDone repeats failed Done calls.
func (c *Channel) retryDone(ctx context.Context) {
	c.mu.Lock()
	var ids []string
	for id := range c.redo {
		ids = append(ids, id)
	}
	c.mu.Unlock()
	for _, id := range ids {
		if err := c.cfg.Inbox.Done(ctx, ChannelName, id); err != nil {
			return
		}
		c.mu.Lock()
		delete(c.redo, id)
		c.finished[id] = c.fetchGen
		c.mu.Unlock()
	}
}

// prune forgets old keyboard owners, presses and refusals.
func (c *Channel) prune(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, v := range c.owners {
		if now.Sub(v.at) > 48*time.Hour {
			delete(c.owners, k)
		}
	}
	for k, v := range c.pressed {
		if now.Sub(v.at) > 48*time.Hour {
			delete(c.pressed, k)
		}
	}
	for k, at := range c.refused {
		if now.Sub(at) > c.cfg.RefusalEvery {
			delete(c.refused, k)
		}
	}
}

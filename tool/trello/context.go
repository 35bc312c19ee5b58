package trello

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/tool/internal/names"
	"github.com/arbiterhq/arbiter/tool/reply"
)

// Context limits: the prompt gets at most this many of the caller's cards.
const maxContextCards = 30

// LiveContext returns the board facts the model needs before deciding: the
// members (the caller marked), the lists in order with the done list, and
// the caller's open cards with short link, list and due date, one compact
// line each. The board state is reused for Config.ContextTTL per tenant
// and dropped by every write through this Client. It only reads; an error
// means Trello could not be read (or the caller has no connection), its
// text is free of credentials, and nothing stale is returned in its place.
// It is safe for concurrent use.
func (c *Client) LiveContext(ctx context.Context, caller tool.Caller, now time.Time) ([]tool.ContextSection, error) {
	s, ok := c.session(caller)
	if !ok {
		return nil, errors.New("trello: no Trello connection for this user")
	}
	st, ok := c.cache.get(caller.TenantID, c.now(), c.ttl)
	if !ok {
		gen := c.cache.generation(caller.TenantID)
		var err error
		st, err = s.readBoard(ctx, true)
		if err != nil {
			return nil, fmt.Errorf("trello: read board: %s", s.scrub(err.Error()))
		}
		c.cache.put(caller.TenantID, gen, st, c.now())
	}
	return c.renderContext(s, st, now), nil
}

// renderContext renders the live context of the session's caller from st.
func (c *Client) renderContext(s *session, st *boardState, now time.Time) []tool.ContextSection {
	caller := s.caller
	me, meErr := s.selfMember("", st.members)
	memberLines := make([]string, 0, len(st.members))
	mapped := c.tenantMembers(caller.TenantID)
	for _, m := range st.members {
		line := memberLabel(m)
		for _, t := range mapped {
			if t.Name != "" && linked(t, m) && names.Fold(t.Name) != names.Fold(m.FullName) {
				line += " a.k.a. " + t.Name
				break
			}
		}
		if meErr == nil && m.ID == me.ID {
			line += " — the caller"
		}
		memberLines = append(memberLines, line)
	}
	if len(memberLines) == 0 {
		memberLines = append(memberLines, "(no members)")
	}
	listLine := "(no lists)"
	if len(st.lists) > 0 {
		listLine = strings.Join(listNames(st.lists), " → ")
		if dl, ok := c.doneListOf(st.lists); ok {
			listLine += " (complete_task moves a card to «" + dl.Name + "»)"
		}
	}
	loc := reply.Location(caller)
	// Every open card, the caller's first, each by due date; bounded.
	var cardLines []string
	myID := ""
	if meErr != nil {
		cardLines = append(cardLines, "(the caller's Trello account is not linked, so which cards are theirs is unknown)")
	} else {
		myID = me.ID
	}
	mine := c.openCards(st, func(card apiCard) bool { return myID != "" && slices.Contains(card.IDMembers, myID) })
	others := c.openCards(st, func(card apiCard) bool { return myID == "" || !slices.Contains(card.IDMembers, myID) })
	all := append(mine, others...)
	byID := map[string]apiMember{}
	for _, m := range st.members {
		byID[m.ID] = m
	}
	for i, card := range all {
		if i == maxContextCards {
			cardLines = append(cardLines, fmt.Sprintf("… and %d more open cards (list_my_tasks lists the caller's; name others by title or short link)", len(all)-i))
			break
		}
		var who []string
		for _, id := range card.IDMembers {
			switch m, ok := byID[id]; {
			case id == myID:
				who = append(who, "the caller")
			case ok:
				who = append(who, memberLabel(m))
			}
		}
		assignee := "nobody"
		if len(who) > 0 {
			assignee = strings.Join(who, ", ")
		}
		line := fmt.Sprintf("%s «%s» — %s, assignee %s", card.ShortLink, card.Name, listName(st.lists, card.IDList), assignee)
		if card.Due != "" {
			line += ", due " + dueText(card.Due, loc)
			if overdue(card.Due, now) {
				line += " (overdue)"
			}
		}
		cardLines = append(cardLines, line)
	}
	if len(all) == 0 {
		cardLines = append(cardLines, "(none)")
	}
	return []tool.ContextSection{
		{Title: "Trello board members", Lines: memberLines},
		{Title: "Trello board lists", Lines: []string{listLine}},
		{Title: "Open cards on Trello", Lines: cardLines},
	}
}

// stateCache keeps each tenant's board state for a few seconds, so the
// live context, read on nearly every turn, costs no request most of the
// time. A write through the Client drops its tenant's state, and a read
// that raced a write does not store what it read. Trello is also changed
// by people, so the state is only reused within the TTL and never for a
// write.
type stateCache struct {
	mu      sync.Mutex
	tenants map[string]*cachedState
}

type cachedState struct {
	gen uint64
	st  *boardState
	at  time.Time
}

func (sc *stateCache) entry(tenant string) *cachedState {
	if sc.tenants == nil {
		sc.tenants = map[string]*cachedState{}
	}
	e := sc.tenants[tenant]
	if e == nil {
		e = &cachedState{}
		sc.tenants[tenant] = e
	}
	return e
}

// get returns the tenant's state if it was read less than ttl before now.
func (sc *stateCache) get(tenant string, now time.Time, ttl time.Duration) (*boardState, bool) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	e := sc.entry(tenant)
	if e.st == nil || now.Before(e.at) || now.Sub(e.at) >= ttl {
		return nil, false
	}
	return e.st, true
}

// generation returns the tenant's write generation, taken before a read.
func (sc *stateCache) generation(tenant string) uint64 {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return sc.entry(tenant).gen
}

// put stores st read at time at, unless a write happened since gen.
func (sc *stateCache) put(tenant string, gen uint64, st *boardState, at time.Time) {
	light := &boardState{lists: st.lists, members: st.members, cards: make([]apiCard, len(st.cards))}
	for i, card := range st.cards {
		card.Desc = "" // descriptions are not needed for the context
		light.cards[i] = card
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	e := sc.entry(tenant)
	if e.gen == gen {
		e.st, e.at = light, at
	}
}

// invalidate drops the tenant's state after a write.
func (sc *stateCache) invalidate(tenant string) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	e := sc.entry(tenant)
	e.gen++
	e.st = nil
}

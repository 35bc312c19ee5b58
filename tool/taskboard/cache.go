package taskboard

import (
	"context"
	"sync"

	"github.com/arbiterhq/arbiter/tool"
)

// openState is a tenant's board columns and open cards as of one moment.
// It is shared between readers and must not be modified.
type openState struct {
	columns []string
	open    []Card // ordered by creation

	// Renderings of this state per user, so a user's repeated turns
	// between writes reuse them; they die with the state.
	mu      sync.Mutex
	context map[string]renderedContext // by user id
	lists   map[string]tool.Result     // by user id + language
}

// renderedContext is a user's live context as rendered at one minute in
// one time zone ("overdue" depends on both).
type renderedContext struct {
	zone     string
	minute   int64
	sections []tool.ContextSection
}

func (s *openState) cachedContext(user, zone string, minute int64) ([]tool.ContextSection, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.context[user]
	if !ok || r.zone != zone || r.minute != minute {
		return nil, false
	}
	return r.sections, true
}

func (s *openState) storeContext(user, zone string, minute int64, sections []tool.ContextSection) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.context == nil {
		s.context = map[string]renderedContext{}
	}
	s.context[user] = renderedContext{zone: zone, minute: minute, sections: sections}
}

func (s *openState) cachedList(key string) (tool.Result, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.lists[key]
	return r, ok
}

func (s *openState) storeList(key string, r tool.Result) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lists == nil {
		s.lists = map[string]tool.Result{}
	}
	s.lists[key] = r
}

// stateCache keeps each tenant's openState between writes, so the live
// context and list_my_tasks, which run on nearly every turn, cost no query.
// Every write through this Board invalidates its tenant after commit; a
// read that raced a write does not store what it read. The cache assumes
// this Board is the only writer of its tables, which holds for the
// embedded store (one process owns the file).
type stateCache struct {
	mu      sync.Mutex
	tenants map[string]*cachedTenant
}

type cachedTenant struct {
	gen   uint64
	state *openState
}

// openState returns the tenant's columns and open cards, from the cache
// when no write happened since they were read.
func (b *Board) openState(ctx context.Context, tenant string) (*openState, error) {
	c := &b.cache
	c.mu.Lock()
	if c.tenants == nil {
		c.tenants = map[string]*cachedTenant{}
	}
	ct := c.tenants[tenant]
	if ct == nil {
		ct = &cachedTenant{}
		c.tenants[tenant] = ct
	}
	if ct.state != nil {
		s := ct.state
		c.mu.Unlock()
		return s, nil
	}
	gen := ct.gen
	c.mu.Unlock()

	cols, err := b.boardColumns(ctx, b.db, tenant)
	if err != nil {
		return nil, err
	}
	open, err := b.queryCards(ctx, b.db, `WHERE tenant = ? AND status = 'open' ORDER BY created_at, rowid`, tenant)
	if err != nil {
		return nil, err
	}
	s := &openState{columns: cols, open: open}
	c.mu.Lock()
	if ct.gen == gen {
		ct.state = s
	}
	c.mu.Unlock()
	return s, nil
}

// invalidate drops the tenant's cached state after a write.
func (b *Board) invalidate(tenant string) {
	c := &b.cache
	c.mu.Lock()
	if ct := c.tenants[tenant]; ct != nil {
		ct.gen++
		ct.state = nil
	}
	c.mu.Unlock()
}

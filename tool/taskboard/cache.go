package taskboard

import (
	"context"
	"sync"
)

// openState is a tenant's board columns and open cards as of one moment.
// It is shared between readers and must not be modified.
type openState struct {
	columns []string
	open    []Card // ordered by creation
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

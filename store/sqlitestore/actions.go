package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/arbiterhq/arbiter/store"
)

// Actions waiting for approval are few and decided by people, so their
// writes are not prepared ahead like the turn's. Their lists are read on
// the pool, with prepared statements, since a turn whose reply says an
// action is done asks whether one of the conversation is still open; and
// a tenant that never had an action is answered from memory.

var _ store.Actions = (*Store)(nil)

// actionTenants are the tenants with actions in the file: loaded at Open,
// marked by PutAction before its insert (actions are never deleted), so a
// tenant missing here has none.
type actionTenants struct {
	mu sync.RWMutex
	m  map[string]bool
}

func (t *actionTenants) mark(tenant string) {
	t.mu.Lock()
	if t.m == nil {
		t.m = map[string]bool{}
	}
	t.m[tenant] = true
	t.mu.Unlock()
}

func (t *actionTenants) has(tenant string) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.m[tenant]
}

// loadActionTenants indexes the tenants with actions. Called by Open.
func (s *Store) loadActionTenants(ctx context.Context) error {
	rows, err := s.conn.QueryContext(ctx, `SELECT DISTINCT tenant FROM actions`)
	if err != nil {
		return fmt.Errorf("load actions: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var tenant string
		if err := rows.Scan(&tenant); err != nil {
			return fmt.Errorf("load actions: %w", err)
		}
		s.actionTenants.mark(tenant)
	}
	return rows.Err()
}

// PutAction stores a new action; an existing id is an error.
func (s *Store) PutAction(ctx context.Context, a store.Action) error {
	body, err := json.Marshal(a)
	if err != nil {
		return fmt.Errorf("put action %s: %w", a.ID, err)
	}
	if err := s.acquireConn(ctx); err != nil {
		return s.fail("put action", a.ID, err)
	}
	defer s.releaseConn()
	s.actionTenants.mark(a.Tenant)
	_, err = s.conn.ExecContext(noCancel, `INSERT INTO actions (tenant, id, status, created_at, body) VALUES (?, ?, ?, ?, ?)`,
		a.Tenant, a.ID, a.Status, unixNano(a.CreatedAt), string(body))
	if err != nil {
		return s.fail("put action", a.ID, err)
	}
	return nil
}

// GetAction returns tenant's action id, or ErrNotFound.
func (s *Store) GetAction(ctx context.Context, tenant, id string) (store.Action, error) {
	if err := s.acquireConn(ctx); err != nil {
		return store.Action{}, s.fail("get action", id, err)
	}
	defer s.releaseConn()
	return s.selectAction(tenant, id)
}

func (s *Store) selectAction(tenant, id string) (store.Action, error) {
	var body string
	err := s.conn.QueryRowContext(noCancel, `SELECT body FROM actions WHERE tenant = ? AND id = ?`, tenant, id).Scan(&body)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return store.Action{}, fmt.Errorf("get action %s/%s: %w", tenant, id, store.ErrNotFound)
	case err != nil:
		return store.Action{}, s.fail("get action", id, err)
	}
	var a store.Action
	if err := json.Unmarshal([]byte(body), &a); err != nil {
		return store.Action{}, fmt.Errorf("get action %s/%s: %w", tenant, id, err)
	}
	return a, nil
}

// ListActions returns tenant's actions with status (any when empty),
// newest first, at most limit.
func (s *Store) ListActions(ctx context.Context, tenant, status string, limit int) ([]store.Action, error) {
	if limit <= 0 {
		limit = 50
	}
	if err := ctx.Err(); err != nil {
		return nil, s.fail("list actions", tenant, err)
	}
	if s.closed.Load() {
		return nil, s.fail("list actions", tenant, store.ErrUnavailable)
	}
	if !s.actionTenants.has(tenant) {
		return nil, nil
	}
	var rows *sql.Rows
	var err error
	if status == "" {
		rows, err = s.pool.listActions.QueryContext(noCancel, tenant, limit)
	} else {
		rows, err = s.pool.listActionsByStatus.QueryContext(noCancel, tenant, status, limit)
	}
	if err != nil {
		return nil, s.fail("list actions", tenant, err)
	}
	defer rows.Close()
	var out []store.Action
	for rows.Next() {
		var body string
		if err := rows.Scan(&body); err != nil {
			return nil, s.fail("list actions", tenant, err)
		}
		var a store.Action
		if err := json.Unmarshal([]byte(body), &a); err != nil {
			return nil, fmt.Errorf("list actions of %s: %w", tenant, err)
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail("list actions", tenant, err)
	}
	return out, nil
}

// UpdateAction replaces the action if its stored status is still from.
func (s *Store) UpdateAction(ctx context.Context, a store.Action, from string) (store.Action, error) {
	body, err := json.Marshal(a)
	if err != nil {
		return store.Action{}, fmt.Errorf("update action %s: %w", a.ID, err)
	}
	if err := s.acquireConn(ctx); err != nil {
		return store.Action{}, s.fail("update action", a.ID, err)
	}
	defer s.releaseConn()
	res, err := s.conn.ExecContext(noCancel, `UPDATE actions SET status = ?, body = ? WHERE tenant = ? AND id = ? AND status = ?`,
		a.Status, string(body), a.Tenant, a.ID, from)
	if err != nil {
		return store.Action{}, s.fail("update action", a.ID, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return store.Action{}, s.fail("update action", a.ID, err)
	} else if n == 1 {
		return a, nil
	}
	current, err := s.selectAction(a.Tenant, a.ID)
	if err != nil {
		return current, err
	}
	return current, fmt.Errorf("update action %s from %s: it is %s: %w", a.ID, from, current.Status, store.ErrConflict)
}

package sqlitestore

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/store"
)

// LoadConversation returns the memory of key with the parts whose time has
// not passed (see store.Conversation), or ErrNotFound when there is none or
// every part ended (a part without a time of its own ends ConversationTTL
// after UpdatedAt). Safe for concurrent use.
func (s *Store) LoadConversation(ctx context.Context, key chat.ConversationKey) (store.Conversation, error) {
	v, err := s.view(ctx, key)
	if err != nil {
		return store.Conversation{}, s.fail("load conversation", key, err)
	}
	if v.memory == nil || v.memExpires < s.now().UnixNano() {
		return store.Conversation{}, fmt.Errorf("load conversation %s: %w", key, store.ErrNotFound)
	}
	c, def, err := store.DecodeConversation(string(v.memory)) // one copy, shared by the strings
	if err != nil {
		return store.Conversation{}, fmt.Errorf("load conversation %s: %w", key, err)
	}
	if !c.Prune(s.now(), def) {
		return store.Conversation{}, fmt.Errorf("load conversation %s: %w", key, store.ErrNotFound)
	}
	return c, nil
}

// view returns what the store holds for key: from the cache without the
// connection when the cache knows it, else read under the connection.
func (s *Store) view(ctx context.Context, key chat.ConversationKey) (view, error) {
	if err := ctx.Err(); err != nil {
		return view{}, err
	}
	if s.closed.Load() {
		return view{}, store.ErrUnavailable
	}
	if v, ok := s.cache.known(key); ok {
		return v, nil
	}
	if v, ok := s.absentView(key); ok {
		return v, nil
	}
	if err := s.acquireConn(ctx); err != nil {
		return view{}, err
	}
	defer s.releaseConn()
	return s.known(key)
}

// absentView is the view of a conversation the file holds nothing of (a
// chat's first message), known without the connection, so a new turn never
// waits for another's commit to learn it; ok is false when something may
// be stored. A Commit marks the index before it updates the cache, under
// the cache's lock, so an empty entry put here is overwritten by that
// Commit's, never the other way round.
func (s *Store) absentView(key chat.ConversationKey) (view, bool) {
	c := &s.cache
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.get(key) != nil || !s.convs.absent(key, s.now().UnixNano()) {
		return view{}, false
	}
	e := c.put(key)
	c.setMemory(e, nil, 0)
	c.setPending(e, nil, 0)
	return e.view(), true
}

// known returns key's view with both its memory and its pending action
// known, reading whichever is not from the file: a turn reads both, so a
// conversation the cache does not hold is read once, memory and pending
// together, and the second of a turn's two reads costs nothing. Called
// holding the connection.
func (s *Store) known(key chat.ConversationKey) (view, error) {
	c := &s.cache
	c.mu.Lock()
	e := c.get(key)
	if e != nil && e.memKnown && e.pendKnown {
		v := e.view()
		c.mu.Unlock()
		return v, nil
	}
	if e == nil && s.convs.absent(key, s.now().UnixNano()) {
		// Nothing stored: known without reading the file.
		e = c.put(key)
		c.setMemory(e, nil, 0)
		c.setPending(e, nil, 0)
		v := e.view()
		c.mu.Unlock()
		return v, nil
	}
	memKnown, pendKnown := e != nil && e.memKnown, e != nil && e.pendKnown
	c.mu.Unlock() // the file is read without it; only this holder of the connection changes the cache
	var memory []byte
	var memExpires int64
	if !memKnown {
		var err error
		if memory, memExpires, err = s.readMemory(key); err != nil {
			return view{}, err
		}
	}
	var pending *store.PendingAction
	var pendExpires int64
	if !pendKnown {
		p, expires, err := scanPending(s.q.getPending.QueryRowContext(noCancel, key.Tenant, key.Chat, key.User), key)
		switch {
		case err == nil:
			pending, pendExpires = &p, expires
		case !errors.Is(err, sql.ErrNoRows):
			return view{}, err
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e = c.put(key)
	if !memKnown {
		c.setMemory(e, memory, memExpires)
	}
	if !pendKnown {
		c.setPending(e, pending, pendExpires)
	}
	return e.view(), nil
}

// readMemory reads the stored memory of key, expired or not; nil when
// there is none.
func (s *Store) readMemory(key chat.ConversationKey) (memory []byte, expires int64, err error) {
	rows, err := s.q.loadConversation.QueryContext(noCancel, key.Tenant, key.Chat, key.User)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	if !rows.Next() {
		return nil, 0, rows.Err()
	}
	// RawBytes and one explicit copy, rather than a copy by the driver and
	// another by database/sql.
	var raw sql.RawBytes
	if err := rows.Scan(&expires, &raw); err != nil {
		return nil, 0, err
	}
	return bytes.Clone(raw), expires, nil
}

// GetPending returns the pending action of key, also after its ExpiresAt
// (for PendingGrace), or ErrNotFound. Safe for concurrent use.
func (s *Store) GetPending(ctx context.Context, key chat.ConversationKey) (store.PendingAction, error) {
	v, err := s.view(ctx, key)
	if err != nil {
		return store.PendingAction{}, s.fail("get pending", key, err)
	}
	if v.pending == nil || v.pendExpires < s.now().UnixNano() {
		// Most turns have nothing waiting: the sentinel itself, with no
		// message built for it.
		return store.PendingAction{}, store.ErrNotFound
	}
	p := *v.pending
	p.Args = bytes.Clone(p.Args) // the caller may change it; the cache's copy stays
	return p, nil
}

// TakePending removes and returns the pending action of key if its id is
// id; otherwise ErrNotFound and nothing changes. Takes are serialized, so
// two never both succeed. Safe for concurrent use.
func (s *Store) TakePending(ctx context.Context, key chat.ConversationKey, id string) (store.PendingAction, error) {
	if err := s.acquireConn(ctx); err != nil {
		return store.PendingAction{}, s.fail("take pending", key, err)
	}
	defer s.releaseConn()
	row := s.q.pendingTake.QueryRowContext(noCancel, key.Tenant, key.Chat, key.User, id, s.now().UnixNano())
	p, _, err := scanPending(row, key)
	if err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return p, fmt.Errorf("take pending %s %s: %w", key, id, store.ErrNotFound)
		}
		return p, s.fail("take pending", key, err)
	}
	s.cache.mu.Lock()
	s.cache.setPending(s.cache.put(key), nil, 0)
	s.cache.mu.Unlock()
	return p, nil
}

// scanPending reads a pending row: delete_after, then the action.
func scanPending(row *sql.Row, key chat.ConversationKey) (store.PendingAction, int64, error) {
	p := store.PendingAction{Key: key}
	var args []byte
	var deleteAfter, created, expires int64
	if err := row.Scan(&deleteAfter, &p.ID, &p.Tool, &args, &p.ArgsHash, &p.IdempotencyKey, &p.TurnID, &created, &expires); err != nil {
		return store.PendingAction{}, 0, err
	}
	p.Args = args
	p.CreatedAt, p.ExpiresAt = fromUnixNano(created), fromUnixNano(expires)
	return p, deleteAfter, nil
}

// BeginExecution records rec as started unless (tenant, idempotency key)
// exists, in which case it returns the stored record and fresh=false.
// StartedAt defaults to the store clock. With rec.MessageID set, the
// message's claim is written in the same transaction (claims otherwise
// wait for their turn's Commit), so a redelivery after a crash finds it.
// The write shares the group commit with concurrent Commits (group.go) and
// returns once it is durable. Safe for concurrent use.
func (s *Store) BeginExecution(ctx context.Context, rec store.ExecutionRecord) (store.ExecutionRecord, bool, error) {
	key := rec.Tenant + "/" + rec.IdempotencyKey
	if err := ctx.Err(); err != nil {
		return store.ExecutionRecord{}, false, s.fail("begin execution", key, err)
	}
	rec.State, rec.Result, rec.FinishedAt = store.ExecStarted, nil, time.Time{}
	if rec.StartedAt.IsZero() {
		rec.StartedAt = s.now()
	}
	mine := newQueued(opBegin)
	mine.rec = rec
	err := s.groupCommit(ctx, mine)
	fresh := mine.fresh
	mine.free()
	if err != nil {
		return store.ExecutionRecord{}, false, s.fail("begin execution", key, err)
	}
	if fresh {
		rec.StartedAt = fromUnixNano(unixNano(rec.StartedAt))
		return rec, true, nil
	}
	// An earlier record (a retry of the same action): rare, read apart.
	if err := s.acquireConn(ctx); err != nil {
		return store.ExecutionRecord{}, false, s.fail("begin execution", key, err)
	}
	defer s.releaseConn()
	old, err := s.selectExecution(rec.Tenant, rec.IdempotencyKey)
	if err != nil {
		return store.ExecutionRecord{}, false, s.fail("begin execution", key, err)
	}
	return old, false, nil
}

// insertExecution inserts the record, and the message claim it makes
// durable, inside the current transaction, reporting whether the record is
// new. Called inside Raw.
func (s *Store) insertExecution(rec *store.ExecutionRecord) (fresh bool, err error) {
	q := &s.cq
	res, err := q.exec(q.execInsert, rec.Tenant, rec.IdempotencyKey, rec.Tool, rec.ArgsHash,
		rec.TurnID, rec.State, nil, unixNano(rec.StartedAt), int64(0), nullJSON(rec.Args),
		rec.Key.Chat, rec.Key.User, rec.MessageID)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, err
	}
	if rec.MessageID != "" && rec.Key.Tenant == rec.Tenant {
		ck := claimKey{rec.Key, rec.MessageID}
		cl, ok := s.inbox.claims[ck]
		if !ok {
			now := s.now()
			cl = claim{turnID: rec.TurnID, at: now, expires: now.Add(s.opts.InboxTTL).UnixNano()}
		}
		if _, err := q.exec(q.inboxClaim, rec.Key.Tenant, rec.Key.Chat, rec.Key.User,
			rec.MessageID, cl.turnID, unixNano(cl.at), cl.expires); err != nil {
			return false, err
		}
		// Marked even if the transaction fails after all, as completions
		// are (see completeMessage).
		s.inbox.markStored(rec.Key, rec.MessageID, cl.expires)
	}
	return n == 1, nil
}

// selectExecution reads one record. Called holding the connection.
func (s *Store) selectExecution(tenant, idempotencyKey string) (store.ExecutionRecord, error) {
	rec := store.ExecutionRecord{Tenant: tenant, IdempotencyKey: idempotencyKey}
	var result, args []byte
	var started, finished int64
	rec.Key.Tenant = tenant
	err := s.q.execSelect.QueryRowContext(noCancel, tenant, idempotencyKey).
		Scan(&rec.Tool, &rec.ArgsHash, &rec.TurnID, &rec.State, &result, &started, &finished,
			&args, &rec.Key.Chat, &rec.Key.User, &rec.MessageID)
	if err != nil {
		return store.ExecutionRecord{}, err
	}
	if rec.Key.Chat == "" && rec.Key.User == "" {
		rec.Key = chat.ConversationKey{}
	}
	rec.Result, rec.Args = result, args
	rec.StartedAt, rec.FinishedAt = fromUnixNano(started), fromUnixNano(finished)
	return rec, nil
}

// GetExecution returns the record of tenant's idempotency key, or
// ErrNotFound. Safe for concurrent use.
func (s *Store) GetExecution(ctx context.Context, tenant, idempotencyKey string) (store.ExecutionRecord, error) {
	key := tenant + "/" + idempotencyKey
	if err := s.acquireConn(ctx); err != nil {
		return store.ExecutionRecord{}, s.fail("get execution", key, err)
	}
	defer s.releaseConn()
	rec, err := s.selectExecution(tenant, idempotencyKey)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return rec, fmt.Errorf("get execution %s: %w", key, store.ErrNotFound)
	case err != nil:
		return rec, s.fail("get execution", key, err)
	}
	return rec, nil
}

// FinishExecution marks the record done with its result, or returns
// ErrNotFound if no record was begun. Like BeginExecution it shares the
// group commit and returns once durable. Safe for concurrent use.
func (s *Store) FinishExecution(ctx context.Context, tenant, idempotencyKey string, result json.RawMessage, at time.Time) error {
	key := tenant + "/" + idempotencyKey
	if err := ctx.Err(); err != nil {
		return s.fail("finish execution", key, err)
	}
	mine := newQueued(opFinish)
	mine.rec = store.ExecutionRecord{Tenant: tenant, IdempotencyKey: idempotencyKey, Result: result, FinishedAt: at}
	err := s.groupCommit(ctx, mine)
	mine.free()
	switch {
	case errors.Is(err, errNoExecution):
		return fmt.Errorf("finish execution %s: %w", key, store.ErrNotFound)
	case err != nil:
		return s.fail("finish execution", key, err)
	}
	return nil
}

// errNoExecution is a finish of a record never begun.
var errNoExecution = errors.New("no execution record")

// finishExecution completes the record inside the current transaction.
// Called inside Raw.
func (s *Store) finishExecution(rec *store.ExecutionRecord) error {
	q := &s.cq
	res, err := q.exec(q.execFinish, store.ExecDone, nullJSON(rec.Result), unixNano(rec.FinishedAt),
		rec.Tenant, rec.IdempotencyKey)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return errNoExecution
	}
	return nil
}

// Commit applies a turn's changes in one transaction. It fails with
// ErrFenced, writing nothing, when c.Fence is older than the newest lease
// granted for c.Key (locked as c.Key.String()) or than the fence that last
// committed its memory; Fence 0 passes only for a key that was never
// locked. The conversation's record is kept until the latest of its parts'
// times; a part without one ends ConversationTTL after UpdatedAt (the store
// clock when unset). Safe for concurrent use: concurrent Commits share a
// transaction (see group.go), each returning once it is durable.
func (s *Store) Commit(ctx context.Context, c store.Commit) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("commit %s: %w", c.Key, err)
	}
	if p := c.PutPending; p != nil && p.Key != (chat.ConversationKey{}) && p.Key != c.Key {
		return fmt.Errorf("commit %s: pending action belongs to %s", c.Key, p.Key)
	}
	var keyBuf [128]byte // the lock's key, without a string of its own
	e, err := s.locks.beginCommit(c.Key.AppendTo(keyBuf[:0]), c.Fence)
	if err != nil {
		return fmt.Errorf("commit %s: fence %d: %w", c.Key, c.Fence, err)
	}
	defer s.locks.endCommit(e)
	mine := newQueued(opCommit)
	mine.c = c
	err = s.groupCommit(ctx, mine)
	mine.free()
	if err != nil {
		if errors.Is(err, store.ErrFenced) {
			return fmt.Errorf("commit %s: fence %d: %w", c.Key, c.Fence, err)
		}
		return s.fail("commit", c.Key, err)
	}
	return nil
}

// committed makes the cache, the index of stored conversations and the
// inbox follow a commit whose transaction committed (only then). Called
// holding the connection.
func (s *Store) committed(c *store.Commit, w written) {
	if c.Conversation != nil {
		s.convs.mark(c.Key, w.memExpires)
	}
	if c.PutPending != nil {
		s.convs.mark(c.Key, w.pendExpires)
	}
	if c.Conversation != nil || c.PutPending != nil || c.DropPending {
		var pending *store.PendingAction
		if c.PutPending != nil {
			p := *c.PutPending
			p.Key = c.Key
			p.Args = bytes.Clone(p.Args)
			pending = &p
		}
		s.cache.mu.Lock()
		ce := s.cache.put(c.Key)
		if c.Conversation != nil {
			s.cache.setMemory(ce, w.memory, w.memExpires)
		}
		if c.PutPending != nil || c.DropPending {
			s.cache.setPending(ce, pending, w.pendExpires)
		}
		s.cache.mu.Unlock()
	}
	if c.MessageID != "" {
		s.inbox.committed(c.Key, c.MessageID)
	}
}

// written is what commitTx stored, for the cache.
type written struct {
	memory      []byte
	memExpires  int64
	pendExpires int64
}

// applyQueued writes one queued write inside the current transaction.
// Called inside Raw.
func (s *Store) applyQueued(b *queued, now time.Time) (err error) {
	switch b.op {
	case opBegin:
		b.fresh, err = s.insertExecution(&b.rec)
	case opFinish:
		err = s.finishExecution(&b.rec)
	default:
		b.w, err = s.apply(&b.c, now)
	}
	return err
}

// apply writes c's changes inside the current transaction. Called inside
// Raw.
func (s *Store) apply(c *store.Commit, now time.Time) (w written, err error) {
	q := &s.cq
	// The key parts go into several statements; boxing them once saves an
	// allocation per use.
	kt, kc, ku := any(c.Key.Tenant), any(c.Key.Chat), any(c.Key.User)
	if conv := c.Conversation; conv != nil {
		updated := conv.UpdatedAt
		if updated.IsZero() {
			updated = now
		}
		// A fresh buffer, sized from the last one: the cache keeps it.
		def := updated.Add(s.opts.ConversationTTL)
		w.memory = store.AppendConversation(make([]byte, 0, s.lastMemorySize+256), conv, def)
		s.lastMemorySize = len(w.memory)
		w.memExpires = conv.Expiry(def).UnixNano()
		res, err := q.exec(q.convUpsert, kt, kc, ku, updated.UnixNano(), w.memExpires, c.Fence, w.memory)
		if err != nil {
			return w, err
		}
		if n, err := res.RowsAffected(); err != nil {
			return w, err
		} else if n == 0 {
			return w, store.ErrFenced
		}
	}

	switch {
	case c.PutPending != nil:
		p := c.PutPending
		base := p.ExpiresAt
		if base.IsZero() {
			base = now
		}
		w.pendExpires = base.Add(s.opts.PendingGrace).UnixNano()
		if _, err := q.exec(q.pendingPut, kt, kc, ku, p.ID, p.Tool, nullJSON(p.Args),
			p.ArgsHash, p.IdempotencyKey, p.TurnID, unixNano(p.CreatedAt), unixNano(p.ExpiresAt),
			w.pendExpires); err != nil {
			return w, err
		}
	case c.DropPending:
		if _, err := q.exec(q.pendingDelete, kt, kc, ku); err != nil {
			return w, err
		}
	}

	if c.MessageID != "" {
		if err := s.completeMessage(c, now, kt, kc, ku); err != nil {
			return w, err
		}
	}
	if c.Turn != nil {
		if err := s.insertTurn(c.Turn); err != nil {
			return w, fmt.Errorf("journal turn %s: %w", c.Turn.TurnID, err)
		}
	}
	return w, nil
}

// maybeCleanup deletes expired rows at most once per cleanupEvery of the
// store clock. Called holding the connection, outside a transaction (after
// a successful commit, and by the channel inbox). A failure is left for the
// next round: expired rows are filtered out on read anyway, and a channel
// id kept longer only stays deduplicated longer.
func (s *Store) maybeCleanup(now time.Time) {
	if !s.lastCleanup.IsZero() && now.Sub(s.lastCleanup) < cleanupEvery && now.After(s.lastCleanup) {
		return
	}
	s.lastCleanup = now
	q := &s.q
	nowNs := now.UnixNano()
	s.inbox.sweep(now)
	s.cache.mu.Lock()
	s.cache.sweep(nowNs)
	s.cache.mu.Unlock()
	s.convs.sweep(nowNs)
	if _, err := q.begin.ExecContext(noCancel); err != nil {
		return
	}
	for _, st := range []*sql.Stmt{q.cleanConversations, q.cleanPending, q.cleanInbox, q.cleanChannel} {
		if _, err := st.ExecContext(noCancel, nowNs); err != nil {
			_, _ = q.rollback.ExecContext(noCancel)
			return
		}
	}
	_, _ = q.commit.ExecContext(noCancel)
}

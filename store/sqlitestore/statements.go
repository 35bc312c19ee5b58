package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// preparer is what statements are prepared on: the store's connection or
// the pool.
type preparer interface {
	PrepareContext(ctx context.Context, query string) (*sql.Stmt, error)
}

// stmtDef pairs a statement slot with its SQL.
type stmtDef struct {
	dst   **sql.Stmt
	query string
}

func prepareAll(ctx context.Context, p preparer, defs []stmtDef) error {
	for _, d := range defs {
		st, err := p.PrepareContext(ctx, d.query)
		if err != nil {
			return fmt.Errorf("prepare %q: %w", d.query, err)
		}
		*d.dst = st
	}
	return nil
}

func closeAll(defs []stmtDef) error {
	var errs []error
	for _, d := range defs {
		if *d.dst != nil {
			errs = append(errs, (*d.dst).Close())
		}
	}
	return errors.Join(errs...)
}

// The statements of a commit, run on the driver connection (direct.go).
const (
	sqlBegin    = `BEGIN IMMEDIATE`
	sqlCommit   = `COMMIT`
	sqlRollback = `ROLLBACK`

	// Changes nothing (0 rows) when a newer fence already committed.
	sqlConvUpsert = `INSERT INTO conversations (tenant, chat, user_id, updated_at, expires_at, fence, memory)
			VALUES (?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (tenant, chat, user_id) DO UPDATE SET
				updated_at = excluded.updated_at, expires_at = excluded.expires_at,
				fence = excluded.fence, memory = excluded.memory
			WHERE excluded.fence >= conversations.fence`
	sqlPendingPut = `REPLACE INTO pending (tenant, chat, user_id, id, tool, args, args_hash,
				idempotency_key, turn_id, created_at, expires_at, delete_after)
			VALUES (?, ?, ?, ?, ?, CAST(? AS TEXT), ?, ?, ?, ?, ?, ?)`
	sqlPendingDelete = `DELETE FROM pending WHERE tenant = ? AND chat = ? AND user_id = ?`

	// The completion is the first time a message reaches the database
	// (claims are held in memory until then); it overwrites a record
	// that expired but was not yet cleaned up.
	sqlInboxDone = `INSERT INTO inbox (tenant, chat, user_id, message_id, turn_id, done, at, expires_at, reply)
			VALUES (?, ?, ?, ?, ?, 1, ?, ?, CAST(? AS TEXT))
			ON CONFLICT (tenant, chat, user_id, message_id) DO UPDATE SET
				turn_id = excluded.turn_id, done = 1, at = excluded.at,
				expires_at = excluded.expires_at, reply = excluded.reply`
	sqlTurnInsert = `INSERT INTO turns (turn_id, tenant, chat, user_id, route, status, started_at,
				duration_ms, trace, llm_rows, tool_rows)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT))`

	sqlExecInsert = `INSERT INTO executions (tenant, idempotency_key, tool, args_hash, turn_id, state,
				result, started_at, finished_at, args, chat, user_id, message_id)
			VALUES (?, ?, ?, ?, ?, ?, CAST(? AS TEXT), ?, ?, CAST(? AS TEXT), ?, ?, ?)
			ON CONFLICT (tenant, idempotency_key) DO NOTHING`
	sqlExecFinish = `UPDATE executions SET state = ?, result = CAST(? AS TEXT), finished_at = ?
			WHERE tenant = ? AND idempotency_key = ?`
	// A claim made durable by the execution it started; a completion
	// (inboxDone) overwrites it, and it never overwrites one.
	sqlInboxClaim = `INSERT INTO inbox (tenant, chat, user_id, message_id, turn_id, done, at, expires_at, reply)
			VALUES (?, ?, ?, ?, ?, 0, ?, ?, NULL)
			ON CONFLICT (tenant, chat, user_id, message_id) DO NOTHING`
)

// connStmts are prepared on the store's connection and used only while
// holding its semaphore. Transactions are begun and ended with statements
// of their own, because database/sql would re-prepare a connection's
// statements inside a *sql.Tx. Parameters are anonymous (?) wherever each
// is used once, in order: the driver then binds them without reading their
// names, an allocation per parameter saved.
type connStmts struct {
	begin, commit, rollback *sql.Stmt

	loadConversation, getPending, getInbox *sql.Stmt

	fenceReserve *sql.Stmt
	pendingTake  *sql.Stmt
	execSelect   *sql.Stmt

	channelAccept        *sql.Stmt
	channelDone          *sql.Stmt
	syncFull, syncNormal *sql.Stmt
	cleanConversations   *sql.Stmt
	cleanPending         *sql.Stmt
	cleanInbox           *sql.Stmt
	cleanChannel         *sql.Stmt
}

func (q *connStmts) defs() []stmtDef {
	return []stmtDef{
		{&q.begin, sqlBegin},
		{&q.commit, sqlCommit},
		{&q.rollback, sqlRollback},

		// Expired rows are returned too: the cache keeps their expiry and
		// decides visibility per read.
		{&q.loadConversation, `SELECT expires_at, memory FROM conversations
			WHERE tenant = ? AND chat = ? AND user_id = ?`},
		{&q.getPending, `SELECT delete_after, id, tool, args, args_hash, idempotency_key, turn_id, created_at, expires_at
			FROM pending WHERE tenant = ? AND chat = ? AND user_id = ?`},
		{&q.getInbox, `SELECT turn_id, done, at, reply FROM inbox
			WHERE tenant = ? AND chat = ? AND user_id = ? AND message_id = ? AND expires_at >= ?`},

		{&q.fenceReserve, `UPDATE store_meta SET value = value + ? WHERE name = 'fence_high' RETURNING value`},

		{&q.pendingTake, `DELETE FROM pending
			WHERE tenant = ? AND chat = ? AND user_id = ? AND id = ? AND delete_after >= ?
			RETURNING delete_after, id, tool, args, args_hash, idempotency_key, turn_id, created_at, expires_at`},

		{&q.execSelect, `SELECT tool, args_hash, turn_id, state, result, started_at, finished_at,
				args, chat, user_id, message_id
			FROM executions WHERE tenant = ? AND idempotency_key = ?`},

		// A row of the id, done or not, makes the item a duplicate.
		{&q.channelAccept, `INSERT INTO channel_inbox (channel, id, order_key, accepted_at, done, expires_at, payload)
			VALUES (?, ?, ?, ?, 0, ?, ?)
			ON CONFLICT (channel, id) DO NOTHING`},
		{&q.channelDone, `UPDATE channel_inbox SET done = 1, expires_at = max(expires_at, ?3)
			WHERE channel = ?1 AND id = ?2 AND done = 0`},
		{&q.syncFull, `PRAGMA synchronous = FULL`},
		{&q.syncNormal, `PRAGMA synchronous = NORMAL`},

		{&q.cleanConversations, `DELETE FROM conversations WHERE expires_at < ?`},
		{&q.cleanPending, `DELETE FROM pending WHERE delete_after < ?`},
		{&q.cleanInbox, `DELETE FROM inbox WHERE expires_at < ?`},
		{&q.cleanChannel, `DELETE FROM channel_inbox WHERE done = 1 AND expires_at < ?`},
	}
}

func (q *connStmts) prepare(ctx context.Context, p preparer) error {
	return prepareAll(ctx, p, q.defs())
}

func (q *connStmts) close() error { return closeAll(q.defs()) }

// poolStmts are prepared on the pool (database/sql keeps one prepared copy
// per connection) and used without the semaphore.
type poolStmts struct {
	getTurn      *sql.Stmt
	getLLMCalls  *sql.Stmt
	getToolCalls *sql.Stmt

	channelPending      *sql.Stmt
	listActions         *sql.Stmt
	listActionsByStatus *sql.Stmt
}

func (p *poolStmts) defs() []stmtDef {
	return []stmtDef{
		{&p.getTurn, `SELECT chat, user_id, route, status, started_at, duration_ms, trace
			FROM turns WHERE turn_id = ?1 AND tenant = ?2`},
		{&p.getLLMCalls, `SELECT provider, model, operation, strategy, attempt, input_tokens, cached_tokens,
				output_tokens, cost_usd, duration_ms, status, error, note, at
			FROM llm_calls WHERE turn_id = ?1 ORDER BY seq`},
		{&p.getToolCalls, `SELECT ` + toolCallColumns + `
			FROM tool_calls WHERE turn_id = ?1 ORDER BY seq`},

		{&p.channelPending, `SELECT id, order_key, accepted_at, payload FROM channel_inbox
			WHERE channel = ?1 AND done = 0 ORDER BY seq LIMIT ?2`},
		{&p.listActions, `SELECT body FROM actions WHERE tenant = ?1
			ORDER BY created_at DESC, id DESC LIMIT ?2`},
		{&p.listActionsByStatus, `SELECT body FROM actions WHERE tenant = ?1 AND status = ?2
			ORDER BY created_at DESC, id DESC LIMIT ?3`},
	}
}

func (p *poolStmts) prepare(ctx context.Context, pr preparer) error {
	return prepareAll(ctx, pr, p.defs())
}

func (p *poolStmts) close() error { return closeAll(p.defs()) }

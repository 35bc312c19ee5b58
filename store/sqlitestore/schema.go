package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// schemaComponent names this package's row in schema_versions; other
// components sharing the file may keep their own rows there.
const schemaComponent = "store"

// migrations are applied in order, each once; the index+1 of the last one
// applied is the schema version. Never edit a released migration: append.
//
// All times are INTEGER Unix nanoseconds (0 = unset); JSON is TEXT.
var migrations = [][]string{{
	// store_meta holds named counters; fence_high is the highest fence
	// reserved so far, so fences stay monotonic across reopen.
	`CREATE TABLE store_meta (
		name  TEXT PRIMARY KEY,
		value INTEGER NOT NULL
	) WITHOUT ROWID`,
	`INSERT INTO store_meta (name, value) VALUES ('fence_high', 0)`,

	// memory is this package's binary encoding of store.Conversation; it
	// comes last so the small columns never sit behind an overflow chain.
	// fence is the newest fence that committed memory, so a stale holder is
	// refused even once its in-memory grant is gone. expires_at is when the
	// record's longest-lived part ends (see store.Conversation); the memory
	// holds each part's time. (Its index came later, with those lifetimes.)
	`CREATE TABLE conversations (
		tenant     TEXT NOT NULL,
		chat       TEXT NOT NULL,
		user_id    TEXT NOT NULL,
		updated_at INTEGER NOT NULL,
		expires_at INTEGER NOT NULL,
		fence      INTEGER NOT NULL,
		memory     BLOB NOT NULL,
		PRIMARY KEY (tenant, chat, user_id)
	)`,

	`CREATE TABLE pending (
		tenant          TEXT NOT NULL,
		chat            TEXT NOT NULL,
		user_id         TEXT NOT NULL,
		id              TEXT NOT NULL,
		tool            TEXT NOT NULL,
		args            TEXT,
		args_hash       TEXT NOT NULL,
		idempotency_key TEXT NOT NULL,
		turn_id         TEXT NOT NULL,
		created_at      INTEGER NOT NULL,
		expires_at      INTEGER NOT NULL,
		delete_after    INTEGER NOT NULL,
		PRIMARY KEY (tenant, chat, user_id)
	)`,
	`CREATE INDEX pending_delete_after ON pending (delete_after)`,

	// Without rowid the primary key is the table: one page fewer to write
	// per claim. expires_at is set by the claim and follows the clock, so
	// its index only ever appends.
	`CREATE TABLE inbox (
		tenant     TEXT NOT NULL,
		chat       TEXT NOT NULL,
		user_id    TEXT NOT NULL,
		message_id TEXT NOT NULL,
		turn_id    TEXT NOT NULL,
		done       INTEGER NOT NULL,
		at         INTEGER NOT NULL,
		expires_at INTEGER NOT NULL,
		reply      TEXT,
		PRIMARY KEY (tenant, chat, user_id, message_id)
	) WITHOUT ROWID`,
	`CREATE INDEX inbox_expiry ON inbox (expires_at)`,

	// The at-most-once ledger is kept indefinitely.
	`CREATE TABLE executions (
		tenant          TEXT NOT NULL,
		idempotency_key TEXT NOT NULL,
		tool            TEXT NOT NULL,
		args_hash       TEXT NOT NULL,
		turn_id         TEXT NOT NULL,
		state           TEXT NOT NULL,
		started_at      INTEGER NOT NULL,
		finished_at     INTEGER NOT NULL,
		result          TEXT,
		PRIMARY KEY (tenant, idempotency_key)
	)`,

	`CREATE TABLE turns (
		turn_id     TEXT PRIMARY KEY,
		tenant      TEXT NOT NULL,
		chat        TEXT NOT NULL,
		user_id     TEXT NOT NULL,
		route       TEXT NOT NULL,
		status      TEXT NOT NULL,
		started_at  INTEGER NOT NULL,
		duration_ms INTEGER NOT NULL,
		trace       TEXT
	)`,
	// Turns of a conversation, in order.
	`CREATE INDEX turns_by_conversation ON turns (tenant, chat, user_id, started_at)`,

	`CREATE TABLE llm_calls (
		turn_id       TEXT NOT NULL REFERENCES turns (turn_id) ON DELETE CASCADE,
		seq           INTEGER NOT NULL,
		tenant        TEXT NOT NULL,
		provider      TEXT NOT NULL,
		model         TEXT NOT NULL,
		operation     TEXT NOT NULL,
		strategy      TEXT NOT NULL,
		attempt       TEXT NOT NULL,
		input_tokens  INTEGER NOT NULL,
		cached_tokens INTEGER NOT NULL,
		output_tokens INTEGER NOT NULL,
		cost_usd      REAL NOT NULL,
		duration_ms   INTEGER NOT NULL,
		status        TEXT NOT NULL,
		error         TEXT NOT NULL,
		note          TEXT NOT NULL,
		at            INTEGER NOT NULL,
		PRIMARY KEY (turn_id, seq)
	)`,
	// Calls by provider and status over time (error rates, fallbacks).
	`CREATE INDEX llm_calls_by_provider ON llm_calls (provider, status, at)`,
	// Cost per tenant per day: covers tenant, at / 86400e9, sum(cost_usd).
	`CREATE INDEX llm_calls_cost ON llm_calls (tenant, at, cost_usd)`,

	`CREATE TABLE tool_calls (
		turn_id         TEXT NOT NULL REFERENCES turns (turn_id) ON DELETE CASCADE,
		seq             INTEGER NOT NULL,
		tenant          TEXT NOT NULL,
		tool            TEXT NOT NULL,
		idempotency_key TEXT NOT NULL,
		status          TEXT NOT NULL,
		error           TEXT NOT NULL,
		duration_ms     INTEGER NOT NULL,
		at              INTEGER NOT NULL,
		PRIMARY KEY (turn_id, seq)
	)`,
	`CREATE INDEX tool_calls_by_tool ON tool_calls (tool, status, at)`,
}, {
	// The channels' durable inbox (see channel.go). seq is the order of
	// acceptance; AUTOINCREMENT keeps it growing even after the newest rows
	// were cleaned up. payload is a BLOB so its bytes come back as given.
	// expires_at is when a done row may be deleted; pending rows are kept
	// until they are marked done.
	`CREATE TABLE channel_inbox (
		seq         INTEGER PRIMARY KEY AUTOINCREMENT,
		channel     TEXT NOT NULL,
		id          TEXT NOT NULL,
		order_key   TEXT NOT NULL,
		accepted_at INTEGER NOT NULL,
		done        INTEGER NOT NULL,
		expires_at  INTEGER NOT NULL,
		payload     BLOB,
		UNIQUE (channel, id)
	)`,
	// Pending reads a channel's open items in order from this index alone
	// until it meets them; done rows leave it, so it stays small.
	`CREATE INDEX channel_inbox_pending ON channel_inbox (channel, seq) WHERE done = 0`,
	// Cleanup finds the done rows past the window without a scan of the
	// day of messages the table holds.
	`CREATE INDEX channel_inbox_expiry ON channel_inbox (expires_at) WHERE done = 1`,

	// A tenant's turns, newest first (ListTurns without a conversation):
	// read backwards, it gives the order and the Before bound, and the
	// LIMIT stops the read early. turns_by_conversation does the same for
	// the lists of one conversation.
	`CREATE INDEX turns_by_tenant ON turns (tenant, started_at)`,
}, {
	// Audit columns of tool calls (see store.ToolCall); rows journaled
	// before them read as empty.
	`ALTER TABLE tool_calls ADD COLUMN server TEXT NOT NULL DEFAULT ''`,
	`ALTER TABLE tool_calls ADD COLUMN remote_tool TEXT NOT NULL DEFAULT ''`,
	`ALTER TABLE tool_calls ADD COLUMN args_hash TEXT NOT NULL DEFAULT ''`,
	`ALTER TABLE tool_calls ADD COLUMN risk TEXT NOT NULL DEFAULT ''`,
	`ALTER TABLE tool_calls ADD COLUMN scope TEXT NOT NULL DEFAULT ''`,
	`ALTER TABLE tool_calls ADD COLUMN confirmation_id TEXT NOT NULL DEFAULT ''`,
	// Every call to one remote server over time (an MCP server's audit).
	`CREATE INDEX tool_calls_by_server ON tool_calls (server, at) WHERE server != ''`,
}, {
	// What an execution ran and for which message (see
	// store.ExecutionRecord): a turn that finds an interrupted attempt
	// finishes exactly that call. Records begun before read as empty.
	`ALTER TABLE executions ADD COLUMN args TEXT`,
	`ALTER TABLE executions ADD COLUMN chat TEXT NOT NULL DEFAULT ''`,
	`ALTER TABLE executions ADD COLUMN user_id TEXT NOT NULL DEFAULT ''`,
	`ALTER TABLE executions ADD COLUMN message_id TEXT NOT NULL DEFAULT ''`,
}, {
	// Actions waiting for approval and their lifecycle (store.Actions):
	// the action as JSON, with the columns its lists and updates select on.
	`CREATE TABLE actions (
		tenant     TEXT NOT NULL,
		id         TEXT NOT NULL,
		status     TEXT NOT NULL,
		created_at INTEGER NOT NULL,
		body       TEXT NOT NULL,
		PRIMARY KEY (tenant, id)
	) WITHOUT ROWID`,
	`CREATE INDEX actions_by_status ON actions (tenant, status, created_at)`,
	`CREATE INDEX actions_by_time ON actions (tenant, created_at)`,
}, {
	// Retention (Prune) deletes the oldest turns and finished executions
	// in batches: each batch reads its rows from these indexes in order.
	`CREATE INDEX turns_by_start ON turns (started_at)`,
	`CREATE INDEX executions_finished ON executions (finished_at) WHERE state != 'started'`,
}, {
	// Every index is written on every turn; these served no query of this
	// package (audits by provider, tool, server or cost read the embedded
	// journal by scan; the PostgreSQL journal keeps such indexes for its
	// own queries).
	`DROP INDEX IF EXISTS llm_calls_by_provider`,
	`DROP INDEX IF EXISTS llm_calls_cost`,
	`DROP INDEX IF EXISTS tool_calls_by_tool`,
	`DROP INDEX IF EXISTS tool_calls_by_server`,
}, {
	// A conversation's record now lives as long as its longest-lived part
	// (a case binding: a month), not the memory's half hour, so the table
	// holds a month of conversations: cleanup finds the expired ones from
	// this index instead of scanning them all every minute (a quarter of
	// a second per hundred thousand rows, holding the connection).
	`CREATE INDEX conversations_expiry ON conversations (expires_at)`,
}, foldCalls}

// foldCalls moves a turn's model and tool calls into its row: each a JSON
// array of rows, each row an array in the column order of the views below
// (see rows.go). Two tables and their keys were written on every turn, two
// statements more and four of a commit's fourteen pages, for rows that are
// only ever read with their turn. The tables become views of the same
// names and columns, so every query of them reads as before (by the turn's
// key), and an insert into them appends to its turn's array: seq is the
// row's position there, whatever the insert gave (the audit columns, added
// later to tool_calls, default to the empty string, as in the table).
var foldCalls = []string{
	`ALTER TABLE turns ADD COLUMN llm_rows TEXT`,
	`ALTER TABLE turns ADD COLUMN tool_rows TEXT`,
	`UPDATE turns SET llm_rows = (SELECT json_group_array(json_array(provider, model, operation, strategy,
			attempt, input_tokens, cached_tokens, output_tokens, cost_usd, duration_ms, status, error, note, at)
			ORDER BY seq) FROM llm_calls c WHERE c.turn_id = turns.turn_id)
		WHERE turn_id IN (SELECT turn_id FROM llm_calls)`,
	`UPDATE turns SET tool_rows = (SELECT json_group_array(json_array(tool, idempotency_key, status, error,
			duration_ms, at, server, remote_tool, args_hash, risk, scope, confirmation_id)
			ORDER BY seq) FROM tool_calls c WHERE c.turn_id = turns.turn_id)
		WHERE turn_id IN (SELECT turn_id FROM tool_calls)`,
	`DROP TABLE llm_calls`,
	`DROP TABLE tool_calls`,
	`CREATE VIEW llm_calls AS SELECT t.turn_id AS turn_id, r.key AS seq, t.tenant AS tenant,
		r.value->>0 AS provider, r.value->>1 AS model, r.value->>2 AS operation, r.value->>3 AS strategy,
		r.value->>4 AS attempt, r.value->>5 AS input_tokens, r.value->>6 AS cached_tokens,
		r.value->>7 AS output_tokens, r.value->>8 AS cost_usd, r.value->>9 AS duration_ms,
		r.value->>10 AS status, r.value->>11 AS error, r.value->>12 AS note, r.value->>13 AS at
		FROM turns t, json_each(t.llm_rows) r`,
	`CREATE VIEW tool_calls AS SELECT t.turn_id AS turn_id, r.key AS seq, t.tenant AS tenant,
		r.value->>0 AS tool, r.value->>1 AS idempotency_key, r.value->>2 AS status, r.value->>3 AS error,
		r.value->>4 AS duration_ms, r.value->>5 AS at, r.value->>6 AS server, r.value->>7 AS remote_tool,
		r.value->>8 AS args_hash, r.value->>9 AS risk, r.value->>10 AS scope,
		r.value->>11 AS confirmation_id
		FROM turns t, json_each(t.tool_rows) r`,
	`CREATE TRIGGER llm_calls_insert INSTEAD OF INSERT ON llm_calls BEGIN
		UPDATE turns SET llm_rows = json_insert(coalesce(llm_rows, '[]'), '$[#]', json_array(NEW.provider,
			NEW.model, NEW.operation, NEW.strategy, NEW.attempt, NEW.input_tokens, NEW.cached_tokens,
			NEW.output_tokens, NEW.cost_usd, NEW.duration_ms, NEW.status, NEW.error, NEW.note, NEW.at))
		WHERE turn_id = NEW.turn_id;
	END`,
	`CREATE TRIGGER tool_calls_insert INSTEAD OF INSERT ON tool_calls BEGIN
		UPDATE turns SET tool_rows = json_insert(coalesce(tool_rows, '[]'), '$[#]', json_array(NEW.tool,
			NEW.idempotency_key, NEW.status, NEW.error, NEW.duration_ms, NEW.at, coalesce(NEW.server, ''),
			coalesce(NEW.remote_tool, ''), coalesce(NEW.args_hash, ''), coalesce(NEW.risk, ''),
			coalesce(NEW.scope, ''), coalesce(NEW.confirmation_id, '')))
		WHERE turn_id = NEW.turn_id;
	END`,
}

// migrate brings the schema up to date in one transaction. It is a no-op on
// a current schema and refuses a schema newer than this code knows.
func migrate(ctx context.Context, conn *sql.Conn) (err error) {
	if _, err := conn.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer func() {
		if err != nil {
			_, _ = conn.ExecContext(ctx, `ROLLBACK`)
		}
	}()
	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_versions (
		component TEXT PRIMARY KEY,
		version   INTEGER NOT NULL
	) WITHOUT ROWID`); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	var version int
	err = conn.QueryRowContext(ctx, `SELECT version FROM schema_versions WHERE component = ?`, schemaComponent).Scan(&version)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("migrate: read version: %w", err)
	}
	if version > len(migrations) {
		return fmt.Errorf("migrate: schema version %d is newer than this build knows (%d)", version, len(migrations))
	}
	for v := version; v < len(migrations); v++ {
		for _, stmt := range migrations[v] {
			if _, err := conn.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("migrate to version %d: %w", v+1, err)
			}
		}
	}
	if _, err := conn.ExecContext(ctx, `INSERT INTO schema_versions (component, version) VALUES (?, ?)
		ON CONFLICT (component) DO UPDATE SET version = excluded.version`, schemaComponent, len(migrations)); err != nil {
		return fmt.Errorf("migrate: record version: %w", err)
	}
	if _, err := conn.ExecContext(ctx, `COMMIT`); err != nil {
		return fmt.Errorf("migrate: commit: %w", err)
	}
	return nil
}

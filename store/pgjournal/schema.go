package pgjournal

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// migration is one step of the schema; {schema} in its statements stands
// for the quoted schema name.
type migration struct {
	name  string
	stmts []string
}

// migrations are applied in order, each once, and recorded in
// schema_versions under their 1-based position. Never edit a released
// migration: append.
//
// Times are timestamptz (microseconds); costs are double precision, so a
// float64 round-trips exactly and per-day sums stay cheap; counters are
// bigint, as Go's int is.
var migrations = []migration{{
	name: "turns, llm_calls and tool_calls",
	stmts: []string{
		`CREATE TABLE {schema}.turns (
			turn_id     text PRIMARY KEY,
			tenant      text NOT NULL,
			chat        text NOT NULL,
			user_id     text NOT NULL,
			route       text NOT NULL,
			status      text NOT NULL,
			started_at  timestamptz NOT NULL,
			duration_ms bigint NOT NULL,
			trace       jsonb
		)`,
		// Turns of a conversation, in order (read backwards for the newest).
		`CREATE INDEX turns_by_conversation ON {schema}.turns (tenant, chat, user_id, started_at)`,

		`CREATE TABLE {schema}.llm_calls (
			turn_id       text NOT NULL REFERENCES {schema}.turns (turn_id) ON DELETE CASCADE,
			seq           integer NOT NULL,
			tenant        text NOT NULL,
			provider      text NOT NULL,
			model         text NOT NULL,
			operation     text NOT NULL,
			strategy      text NOT NULL,
			attempt       text NOT NULL,
			input_tokens  bigint NOT NULL,
			cached_tokens bigint NOT NULL,
			output_tokens bigint NOT NULL,
			cost_usd      double precision NOT NULL,
			duration_ms   bigint NOT NULL,
			status        text NOT NULL,
			error         text NOT NULL,
			note          text NOT NULL,
			at            timestamptz NOT NULL,
			PRIMARY KEY (turn_id, seq)
		)`,
		// Calls by provider and status over time (error rates, fallbacks).
		`CREATE INDEX llm_calls_by_provider ON {schema}.llm_calls (provider, status, at)`,
		// Cost per tenant per day: the sum is read from the index alone.
		`CREATE INDEX llm_calls_cost ON {schema}.llm_calls (tenant, at) INCLUDE (cost_usd)`,

		`CREATE TABLE {schema}.tool_calls (
			turn_id         text NOT NULL REFERENCES {schema}.turns (turn_id) ON DELETE CASCADE,
			seq             integer NOT NULL,
			tenant          text NOT NULL,
			tool            text NOT NULL,
			idempotency_key text NOT NULL,
			status          text NOT NULL,
			error           text NOT NULL,
			duration_ms     bigint NOT NULL,
			at              timestamptz NOT NULL,
			PRIMARY KEY (turn_id, seq)
		)`,
		// Tool outcomes over time, as the embedded journal keeps them.
		`CREATE INDEX tool_calls_by_tool ON {schema}.tool_calls (tool, status, at)`,
	},
}, {
	name: "turns_by_tenant",
	stmts: []string{
		// A tenant's turns, newest first (ListTurns without a
		// conversation): read backwards, it gives the order and the Before
		// bound, and the LIMIT stops the read early. Built in the migration's
		// transaction, so appends wait while it is built on a large table.
		`CREATE INDEX turns_by_tenant ON {schema}.turns (tenant, started_at)`,
	},
}, {
	name: "tool call audit columns",
	stmts: []string{
		// See store.ToolCall; rows journaled before them read as empty.
		`ALTER TABLE {schema}.tool_calls
			ADD COLUMN server text NOT NULL DEFAULT '',
			ADD COLUMN remote_tool text NOT NULL DEFAULT '',
			ADD COLUMN args_hash text NOT NULL DEFAULT '',
			ADD COLUMN risk text NOT NULL DEFAULT '',
			ADD COLUMN scope text NOT NULL DEFAULT '',
			ADD COLUMN confirmation_id text NOT NULL DEFAULT ''`,
		// Every call to one remote server over time (an MCP server's audit).
		`CREATE INDEX tool_calls_by_server ON {schema}.tool_calls (server, at) WHERE server <> ''`,
	},
}, {
	name: "retention",
	stmts: []string{
		// Prune finds turns past retention in batches through this block
		// range index: turns are appended in time order, so it is tiny and
		// cheap to keep, and the planner never prefers it to the btree
		// indexes the turn lists use.
		`CREATE INDEX turns_by_start ON {schema}.turns USING brin (started_at)`,
	},
}}

// withSchema puts the quoted schema name into sql.
func withSchema(sql, quoted string) string { return strings.ReplaceAll(sql, "{schema}", quoted) }

// migrationLockKey is the advisory lock serializing migrations of one
// schema across processes; other schemas in the database migrate freely.
func migrationLockKey(schema string) int64 {
	h := fnv.New64a()
	h.Write([]byte("arbiter pgjournal migrate\x00" + schema))
	return int64(h.Sum64())
}

// migrate brings the schema up to date in one transaction holding the
// schema's advisory lock, which is released with the transaction. A second
// process migrating at the same time waits for the lock and then finds
// every migration applied.
func (j *Journal) migrate(ctx context.Context) error {
	quoted := pgx.Identifier{j.schema}.Sanitize()
	return pgx.BeginFunc(ctx, j.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrationLockKey(j.schema)); err != nil {
			return fmt.Errorf("migrate: lock: %w", err)
		}
		// Checked first so that a role without CREATE on the database can
		// use a schema prepared for it.
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`, j.schema).Scan(&exists); err != nil {
			return fmt.Errorf("migrate: look up schema: %w", err)
		}
		if !exists {
			if _, err := tx.Exec(ctx, `CREATE SCHEMA `+quoted); err != nil {
				return fmt.Errorf("migrate: create schema: %w", err)
			}
		}
		if _, err := tx.Exec(ctx, withSchema(`CREATE TABLE IF NOT EXISTS {schema}.schema_versions (
			version    integer PRIMARY KEY,
			name       text NOT NULL,
			applied_at timestamptz NOT NULL DEFAULT now()
		)`, quoted)); err != nil {
			return fmt.Errorf("migrate: create schema_versions: %w", err)
		}
		var version int
		if err := tx.QueryRow(ctx, withSchema(`SELECT coalesce(max(version), 0) FROM {schema}.schema_versions`, quoted)).Scan(&version); err != nil {
			return fmt.Errorf("migrate: read version: %w", err)
		}
		if version > len(migrations) {
			return fmt.Errorf("migrate: %w: version %d, this build knows %d", errNewerSchema, version, len(migrations))
		}
		for v := version; v < len(migrations); v++ {
			m := migrations[v]
			for _, stmt := range m.stmts {
				if _, err := tx.Exec(ctx, withSchema(stmt, quoted)); err != nil {
					return fmt.Errorf("migrate to version %d (%s): %w", v+1, m.name, err)
				}
			}
			if _, err := tx.Exec(ctx, withSchema(`INSERT INTO {schema}.schema_versions (version, name) VALUES ($1, $2)`, quoted), v+1, m.name); err != nil {
				return fmt.Errorf("migrate to version %d: record it: %w", v+1, err)
			}
		}
		return nil
	})
}

// errNewerSchema: the schema was migrated by a newer build.
var errNewerSchema = errors.New("schema is newer than this build")

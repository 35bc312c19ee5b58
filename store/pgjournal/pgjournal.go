// Package pgjournal is a store.Journal on PostgreSQL: every turn, its model
// calls and its tool calls, kept in three tables of one schema (turns,
// llm_calls, tool_calls) with the indexes operators query by, and read
// helpers for the questions they ask most: cost per tenant per day
// (CostPerDay), the turns of one conversation (TurnsOfConversation) and a
// tenant's turns for trace views (ListTurns, store.TurnLister).
//
// It holds the journal only. Conversation state, the inbox, execution
// records and the conversation lock belong to a store.State and
// store.Locker backend (store/sqlitestore, ...); a Journal is not a
// store.State, so the engine appends each turn after that backend's commit
// instead of inside it. Nothing here rewrites journal rows; Prune deletes
// those past retention. Concurrent appends share a transaction (group.go).
//
// Open creates the schema and its tables when missing and applies the
// migrations the database lacks, so several processes may start against one
// database at the same time.
package pgjournal

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/arbiterhq/arbiter/store"
)

// DefaultSchema is the schema Open uses when Options.Schema is empty.
const DefaultSchema = "arbiter"

// maxIdentifier is PostgreSQL's identifier length limit in bytes; longer
// names would be truncated silently by the server.
const maxIdentifier = 63

// ErrDuplicateTurn is returned (wrapped) by AppendTurn when the turn id was
// journaled before; the earlier record is left as it was.
var ErrDuplicateTurn = errors.New("turn id already journaled")

// Options configure Open.
type Options struct {
	// URL locates the database, as a URL or as keyword=value pairs, e.g.
	// postgres://postgres@127.0.0.1:5432/arbiter?sslmode=disable. pgxpool
	// settings in it (pool_max_conns, pool_max_conn_idle_time, ...) apply.
	URL string
	// Schema holds the journal's tables and is created when missing.
	// Empty means DefaultSchema.
	Schema string
	// MaxConns bounds the connection pool; 0 keeps pool_max_conns from URL
	// or pgxpool's default.
	MaxConns int
}

// Journal is a store.Journal on PostgreSQL. It is safe for concurrent use;
// Close it when done.
//
// Every method returns an error wrapping store.ErrUnavailable when the
// database cannot be reached (refused or broken connections, a server
// shutting down or out of connections, a read-only standby) and after
// Close. An error caused by ctx ending wraps ctx's error.
//
// Text columns cannot hold NUL or invalid UTF-8, and jsonb cannot hold the
// escape \u0000. Rather than refuse a turn over such bytes (an error string
// cut mid-character, a user message with a NUL), the journal stores U+FFFD
// in their place, and applies the same replacement to the ids it is asked
// to look up.
type Journal struct {
	pool   *pgxpool.Pool
	schema string
	q      queries
	closed atomic.Bool
	group  appendGroup
}

// Open connects to the database, creates or migrates the journal's schema
// and returns the journal. Migrations run in one transaction under an
// advisory lock of the schema, each at most once, so concurrent Opens of one
// schema are safe; a schema migrated by a newer build is refused. An
// unreachable database yields an error wrapping store.ErrUnavailable.
func Open(ctx context.Context, opts Options) (*Journal, error) {
	schema := cmp.Or(opts.Schema, DefaultSchema)
	if err := checkSchemaName(schema); err != nil {
		return nil, fmt.Errorf("pgjournal: open: %w", err)
	}
	if opts.URL == "" {
		return nil, errors.New("pgjournal: open: empty URL")
	}
	if opts.MaxConns < 0 {
		return nil, fmt.Errorf("pgjournal: open: negative MaxConns %d", opts.MaxConns)
	}
	cfg, err := pgxpool.ParseConfig(opts.URL)
	if err != nil {
		// pgconn redacts the password in its parse errors.
		return nil, fmt.Errorf("pgjournal: open: %w", err)
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = int32(min(opts.MaxConns, math.MaxInt32))
	}
	return open(ctx, cfg, schema)
}

// open is Open after the options were checked; tests use it to dial through
// their own connections.
func open(ctx context.Context, cfg *pgxpool.Config, schema string) (*Journal, error) {
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pgjournal: open schema %s: %w", schema, err)
	}
	j := &Journal{pool: pool, schema: schema, q: newQueries(pgx.Identifier{schema}.Sanitize())}
	if err := j.migrate(ctx); err != nil {
		pool.Close()
		return nil, j.fail("open schema "+schema, err)
	}
	return j, nil
}

// Close closes the pool, waiting for connections in use to be returned.
// Calls after Close fail with store.ErrUnavailable. Closing twice is
// harmless.
func (j *Journal) Close() {
	j.closed.Store(true)
	j.pool.Close()
}

var (
	_ store.Journal    = (*Journal)(nil)
	_ store.TurnLister = (*Journal)(nil)
)

func checkSchemaName(s string) error {
	switch {
	case len(s) > maxIdentifier:
		return fmt.Errorf("schema name %q is longer than %d bytes", s, maxIdentifier)
	case strings.IndexByte(s, 0) >= 0 || !utf8.ValidString(s):
		return fmt.Errorf("schema name %q is not valid UTF-8 text", s)
	}
	return nil
}

// fail wraps err with what was being done, adding store.ErrUnavailable when
// the journal is closed or the database could not be reached.
func (j *Journal) fail(what string, err error) error {
	if !errors.Is(err, store.ErrUnavailable) && (j.closed.Load() || unavailable(err)) {
		return fmt.Errorf("pgjournal: %s: %w: %w", what, store.ErrUnavailable, err)
	}
	return fmt.Errorf("pgjournal: %s: %w", what, err)
}

// errClosed is what the methods of a closed journal fail with.
var errClosed = errors.New("journal closed")

// unavailable reports whether err means the database could not be reached
// or cannot serve writes now, as opposed to refusing this request.
func unavailable(err error) bool {
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return true
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case strings.HasPrefix(pe.Code, "08"), // connection exception
			strings.HasPrefix(pe.Code, "53"), // insufficient resources: too many connections, disk full
			pe.Code == "57P01",               // admin shutdown
			pe.Code == "57P02",               // crash shutdown
			pe.Code == "57P03",               // cannot connect now (starting up, recovering)
			pe.Code == "25006":               // read-only transaction: a standby after failover
			return true
		}
		return false
	}
	// The caller's own deadline or cancellation is not an outage.
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if pgconn.SafeToRetry(err) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, net.ErrClosed)
}

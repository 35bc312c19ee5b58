// Package sqlitex holds what the embedded tools' SQLite stores share: a
// Writer that runs a store's write transactions one at a time and runs a
// transaction again while the database is busy; the fixed-width UTC time
// stamps the stores keep; Applied, the table of applied idempotency keys
// that lets a repeated call answer with its first result (Once runs a
// write under it); Insert, an insert that returns its row's id; and
// Failure, the Result of a store that failed or did not answer in time.
//
// It does not open databases or create tables: each tool owns its schema
// (Applied.DDL is the applied table's statement, for it) and what its rows
// mean.
//
// Every function, type and method here is safe for concurrent use.
package sqlitex

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/tool/reply"
)

// stampLayout is fixed-width UTC, so stored stamps sort as strings.
const stampLayout = "2006-01-02T15:04:05.000000000Z"

// Stamp is t as stored: UTC with nanoseconds, fixed width.
func Stamp(t time.Time) string { return t.UTC().Format(stampLayout) }

// ParseStamp reads a stamp written by Stamp; anything else, "" included,
// is the zero time.
func ParseStamp(s string) time.Time {
	t, err := time.Parse(stampLayout, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

// Writer runs the write transactions of one store on db one at a time, so
// they queue here instead of contending for the SQLite write lock, and
// runs a transaction again while SQLite reports the database busy or
// locked. It is safe for concurrent use.
type Writer struct {
	db  *sql.DB
	sem chan struct{}
}

// NewWriter returns a Writer on db.
func NewWriter(db *sql.DB) *Writer {
	return &Writer{db: db, sem: make(chan struct{}, 1)}
}

// Do runs fn in one transaction and commits it. The transaction waits for
// the Writer's earlier ones; while the database is busy it is rolled back
// and run again, with growing pauses, until ctx ends, so fn must report
// its outcome only through variables it sets on each run. An error of fn
// rolls the transaction back and is returned as it is.
func (w *Writer) Do(ctx context.Context, fn func(tx *sql.Tx) error) error {
	return w.do(ctx, 0, fn)
}

// DoRetryingConflicts is Do that also runs fn again, up to conflicts more
// times, after a constraint failure: for an fn that re-reads what it
// depends on, so that a writer that lost a race on a unique index (another
// process took the same key) finds the winner's row.
func (w *Writer) DoRetryingConflicts(ctx context.Context, conflicts int, fn func(tx *sql.Tx) error) error {
	return w.do(ctx, conflicts, fn)
}

func (w *Writer) do(ctx context.Context, maxConflicts int, fn func(tx *sql.Tx) error) error {
	select {
	case w.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-w.sem }()
	wait := 5 * time.Millisecond
	for conflicts := 0; ; {
		err := w.once(ctx, fn)
		switch code := sqliteCode(err); {
		case err == nil:
			return nil
		case code == codeBusy || code == codeLocked:
		case code == codeConstraint && maxConflicts > 0:
			if conflicts++; conflicts > maxConflicts {
				return err
			}
		default:
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (database busy: %v)", ctx.Err(), err)
		}
		wait = min(2*wait, 200*time.Millisecond)
	}
}

func (w *Writer) once(ctx context.Context, fn func(tx *sql.Tx) error) (err error) {
	tx, err := w.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// Primary SQLite result codes.
const (
	codeBusy       = 5
	codeLocked     = 6
	codeConstraint = 19
)

// sqliteCode is the primary SQLite result code of err, read from the
// driver's error; 0 when err carries none.
func sqliteCode(err error) int {
	var coded interface{ Code() int }
	if !errors.As(err, &coded) {
		return 0
	}
	return coded.Code() & 0xff
}

// RowQuerier is what a lookup needs from *sql.DB and *sql.Tx.
type RowQuerier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Applied is a tool's table of applied idempotency keys. Its columns are
// tenant, idem_key, action, the id of the row the action wrote (named by
// IDColumn, of type IDType), result (the first Result as JSON) and at (a
// Stamp), with primary key (tenant, idem_key); the tool creates it with
// DDL. Record stores a key in the transaction of the write it describes,
// so a key is stored exactly when its effect is. An Applied is safe for
// concurrent use.
type Applied struct {
	Table    string // e.g. "knowledge_applied"
	IDColumn string // e.g. "entry_id"
	IDType   string // the SQL type of IDColumn, e.g. "INTEGER"
}

// DDL is the statement that creates the table if it does not exist.
func (a Applied) DDL() string {
	return `CREATE TABLE IF NOT EXISTS ` + a.Table + ` (
		tenant   TEXT NOT NULL,
		idem_key TEXT NOT NULL,
		action   TEXT NOT NULL,
		` + a.IDColumn + ` ` + a.IDType + ` NOT NULL,
		result   TEXT NOT NULL,
		at       TEXT NOT NULL,
		PRIMARY KEY (tenant, idem_key)
	)`
}

// Record stores res as the result of call under call.IdempotencyKey in the
// caller's tenant, through tx; an empty key stores nothing.
func (a Applied) Record(ctx context.Context, tx *sql.Tx, call tool.Call, action string, id any, res tool.Result, at time.Time) error {
	if call.IdempotencyKey == "" {
		return nil
	}
	raw, err := json.Marshal(res)
	if err != nil {
		return fmt.Errorf("encode result: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO `+a.Table+` (tenant, idem_key, action, `+a.IDColumn+`, result, at)
		VALUES (?, ?, ?, ?, ?, ?)`, call.Caller.TenantID, call.IdempotencyKey, action, id, string(raw), Stamp(at)); err != nil {
		return fmt.Errorf("record idempotency key: %w", err)
	}
	return nil
}

// Once runs write, the write of call, in a transaction of w and stores
// its result under call.IdempotencyKey with the id of the row it wrote,
// at now; a key applied before answers as Replay says, writing nothing.
// The error is the transaction's.
func (a Applied) Once(ctx context.Context, w *Writer, rb reply.Builder, call tool.Call, action string, now func() time.Time,
	write func(tx *sql.Tx) (id any, res tool.Result, err error)) (tool.Result, error) {
	var res tool.Result
	err := w.Do(ctx, func(tx *sql.Tx) error {
		r, done, err := a.Replay(ctx, tx, rb, call, action)
		if err != nil || done {
			res = r
			return err
		}
		id, r, err := write(tx)
		if err != nil {
			return err
		}
		res = r
		return a.Record(ctx, tx, call, action, id, res, now())
	})
	return res, err
}

// Insert runs the INSERT statement query with args through tx and returns
// the id of the row it inserted.
func Insert(ctx context.Context, tx *sql.Tx, query string, args ...any) (int64, error) {
	out, err := tx.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return out.LastInsertId()
}

// Replay looks call.IdempotencyKey up in the caller's tenant. done reports
// that the key was applied before, and r is then the answer: the stored
// result when it was applied by action, else rb's KeyReused failure. An
// empty key is never done.
func (a Applied) Replay(ctx context.Context, q RowQuerier, rb reply.Builder, call tool.Call, action string) (r tool.Result, done bool, err error) {
	key, c := call.IdempotencyKey, call.Caller
	if key == "" {
		return tool.Result{}, false, nil
	}
	var other, raw string
	err = q.QueryRowContext(ctx, `SELECT action, result FROM `+a.Table+` WHERE tenant = ? AND idem_key = ?`,
		c.TenantID, key).Scan(&other, &raw)
	if errors.Is(err, sql.ErrNoRows) {
		return tool.Result{}, false, nil
	}
	if err != nil {
		return tool.Result{}, false, fmt.Errorf("look up idempotency key: %w", err)
	}
	if other != action {
		return rb.KeyReused(c, key, other, action), true, nil
	}
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		return tool.Result{}, false, fmt.Errorf("decode stored result of key %q: %w", key, err)
	}
	return r, true, nil
}

// Failure turns a storage or context error into a Result: a timeout is an
// error, never "not found". store names the store in the error for the
// model ("task board"); late and failed are what the caller is told of a
// timeout and of any other failure.
func Failure(rb reply.Builder, err error, store, late, failed string) tool.Result {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return rb.Failure("", store+" timed out: "+err.Error(), late)
	}
	return rb.Failure("", store+" storage failed: "+err.Error(), failed)
}

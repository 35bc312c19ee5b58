// Package sqlitestore is the embedded default store backend: conversation
// memory, pending actions, the inbox, execution records and the journal in
// one SQLite file (modernc.org/sqlite, pure Go), plus an in-process
// conversation lock with fencing and TTL takeover.
//
// It implements store.State, store.Locker and store.Journal, and the
// optional store.ChannelInbox (see Accept) and store.TurnLister, and passes
// the store/storetest suite. It does not serialize turns across processes: the
// Locker lives in the memory of the process that opened the file, so one
// file is served by one process (a scale-out deployment uses a shared
// backend instead). Being the only writer of its tables is also what lets
// it keep recent conversation state and the index of stored message ids in
// memory, so that a turn's reads cost no SQLite transaction. Other embedded
// components may keep their own tables in the same file through DB, but
// must not write this package's tables.
//
// A conversation is locked under ConversationKey.String(); Commit checks its
// fence against the grants of that key. Expired rows are filtered out on
// every read and deleted by Commit at most once a minute; no goroutine
// outlives Close. A message claim stays in memory until the Commit that
// completes its turn, or the first execution its turn begins, writes it
// (see inbox), which saves a write transaction per turn.
package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/arbiterhq/arbiter/store"
)

// Interface guards.
var (
	_ store.State   = (*Store)(nil)
	_ store.Locker  = (*Store)(nil)
	_ store.Journal = (*Store)(nil)

	_ store.ChannelInbox = (*Store)(nil)
	_ store.TurnLister   = (*Store)(nil)
)

// Defaults for zero Options fields.
const (
	DefaultLockWait        = 30 * time.Second
	DefaultLockTTL         = 45 * time.Second
	DefaultConversationTTL = 30 * time.Minute
	DefaultInboxTTL        = 24 * time.Hour
	DefaultPendingGrace    = 24 * time.Hour
	DefaultChannelDedupe   = 24 * time.Hour
	// DefaultBusyTimeout bounds how long a write waits for another
	// connection (e.g. a component writing through DB) to finish.
	DefaultBusyTimeout = 5 * time.Second
	DefaultCacheBytes  = 32 << 20
)

// cleanupEvery is how often Commit deletes expired rows.
const cleanupEvery = time.Minute

// Options configure a Store. Zero values mean the documented defaults.
type Options struct {
	// Now is the clock of every time decision (expiry, lock TTL, cleanup).
	// Default time.Now.
	Now func() time.Time
	// LockWait bounds how long Lock waits for a held key, in real time.
	// Default 30s.
	LockWait time.Duration
	// LockTTL is how long a lease is protected from takeover, judged on
	// Now. Default 45s.
	LockTTL time.Duration
	// ConversationTTL is how long a part of a conversation that states no
	// time of its own (store.Conversation.MessagesUntil, SlotsUntil) is
	// kept after its UpdatedAt. Default 30m.
	ConversationTTL time.Duration
	// InboxTTL is how long a claimed message id is remembered after its
	// claim. Default 24h; smaller values are raised to 24h, since a
	// redelivery within a day must stay a no-op.
	InboxTTL time.Duration
	// PendingGrace is how long a pending action is kept past its ExpiresAt,
	// so the engine can still tell the user it expired. Default 24h.
	PendingGrace time.Duration
	// ChannelDedupe is how long the channel inbox remembers an item's id
	// after its acceptance, and after it was marked done (see Accept).
	// Default 24h; smaller values are raised to 24h, the least the
	// store.ChannelInbox contract allows.
	ChannelDedupe time.Duration
	// BusyTimeout bounds waits for SQLite's file lock. Default 5s.
	BusyTimeout time.Duration
	// CacheBytes bounds the memory kept of recent conversations (their
	// memory and pending action), which spares a turn's reads a SQLite
	// transaction. Default 32 MiB; negative disables the cache.
	CacheBytes int
}

func (o Options) withDefaults() Options {
	if o.Now == nil {
		o.Now = time.Now
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.LockWait, DefaultLockWait)
	def(&o.LockTTL, DefaultLockTTL)
	def(&o.ConversationTTL, DefaultConversationTTL)
	def(&o.PendingGrace, DefaultPendingGrace)
	def(&o.BusyTimeout, DefaultBusyTimeout)
	if o.CacheBytes == 0 {
		o.CacheBytes = DefaultCacheBytes
	}
	if o.InboxTTL < DefaultInboxTTL {
		o.InboxTTL = DefaultInboxTTL
	}
	if o.ChannelDedupe < DefaultChannelDedupe {
		o.ChannelDedupe = DefaultChannelDedupe
	}
	return o
}

// Store is the SQLite backend. All methods are safe for concurrent use.
//
// The store's own operations share one connection, taken in turn. Its page
// cache stays warm across a turn's reads and writes (a pool connection
// would re-read every page the last write changed), and none of our writes
// ever waits on SQLite's file lock for another of ours. Each operation takes
// microseconds, so serializing them costs less than it saves, and no turn
// waits for it without need: writes queue for it together (group.go), a
// conversation the file holds nothing of is known from memory, and the
// lists of actions and journal reads, which can be large, use the pool, as
// do components sharing the file through DB.
type Store struct {
	opts Options
	now  func() time.Time
	db   *sql.DB

	// sem is a one-slot semaphore guarding conn, the statements prepared on
	// it and the fields below; a channel so that waiting can honour a
	// context.
	sem  chan struct{}
	conn *sql.Conn
	q    connStmts
	cq   commitStmts // on conn's driver connection (direct.go)
	pool poolStmts

	lastCleanup    time.Time
	lastMemorySize int // of the last memory encoded, to size the next buffer
	inbox          inbox
	convs          conversations // which conversations have rows
	cache          cache
	group          group // Commits waiting for the connection
	actionTenants  actionTenants
	rows           []byte // a turn's calls as JSON (see rows.go), reused

	locks locker

	closed  atomic.Bool
	closing chan struct{}
	once    sync.Once
}

// walCheckpointPages is how long the write-ahead log grows before a commit
// copies it into the database file: 16 MiB of 4 KiB pages, four times
// SQLite's default. A checkpoint writes each page once however often the
// log holds it, and a turn's writes keep changing the same few pages (the
// newest leaves of the journal's tables and indexes), so a longer log
// leaves fewer pages to copy per turn: a tenth of the store's CPU per turn
// less (BenchmarkWriteTurn64), for a checkpoint four times rarer and
// longer, which the commit that triggers it waits for.
const walCheckpointPages = 4000

// Open opens (creating if needed) the database file at path, applies the
// schema migrations and prepares every statement. path must name a file;
// its parent directories are created.
func Open(path string, opts Options) (*Store, error) {
	if path == "" || path == ":memory:" {
		return nil, fmt.Errorf("open sqlite store %q: a file path is required", path)
	}
	opts = opts.withDefaults()
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open sqlite store %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		return nil, fmt.Errorf("open sqlite store %s: %w", path, err)
	}
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", opts.BusyTimeout.Milliseconds()))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", fmt.Sprintf("wal_autocheckpoint(%d)", walCheckpointPages))
	q.Add("_pragma", "foreign_keys(1)")
	// Transactions other components start through DB take the write lock
	// up front, so they wait under busy_timeout instead of failing when
	// they upgrade from read to write.
	q.Set("_txlock", "immediate")
	dsn := "file:" + (&url.URL{Path: abs}).EscapedPath() + "?" + q.Encode()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open sqlite store %s: %w", path, err)
	}
	// Connections are kept for the life of the store: each one holds its
	// own prepared statements, and reopening them costs far more than idling.
	// One of them is the store's own (see Store).
	conns := max(4, runtime.GOMAXPROCS(0)) + 1
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)

	s := &Store{
		opts:    opts,
		now:     opts.Now,
		db:      db,
		sem:     make(chan struct{}, 1),
		closing: make(chan struct{}),
	}
	s.locks.init(s)
	s.cache.init(opts.CacheBytes)
	s.inbox.init()
	s.convs.init()
	if err := s.init(); err != nil {
		s.closeAll()
		return nil, fmt.Errorf("open sqlite store %s: %w", path, err)
	}
	return s, nil
}

func (s *Store) init() error {
	ctx := context.Background()
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	s.conn = conn
	if err := migrate(ctx, conn); err != nil {
		return err
	}
	if err := s.q.prepare(ctx, conn); err != nil {
		return err
	}
	if err := s.pool.prepare(ctx, s.db); err != nil {
		return err
	}
	if err := s.loadStored(ctx); err != nil {
		return err
	}
	if err := s.loadActionTenants(ctx); err != nil {
		return err
	}
	return s.loadConversations(ctx)
}

// DB returns the underlying handle so other embedded components can keep
// their own tables in the same file. They must not touch this package's
// tables, and must not close the handle; Close does.
func (s *Store) DB() *sql.DB { return s.db }

// Close waits for the operation in progress, then closes the database. Lock
// waiters are woken with ErrUnavailable; every later call fails with
// ErrUnavailable. Closing twice is harmless.
func (s *Store) Close() error {
	var err error
	s.once.Do(func() {
		s.closed.Store(true)
		close(s.closing)
		s.sem <- struct{}{} // never released: no operation may start after this
		err = s.closeAll()
	})
	return err
}

func (s *Store) closeAll() error {
	var errs []error
	errs = append(errs, s.q.close(), s.pool.close())
	if s.conn != nil && s.cq.on != nil {
		errs = append(errs, s.conn.Raw(func(any) error { return s.cq.close() }))
	}
	if s.conn != nil {
		errs = append(errs, s.conn.Close())
	}
	errs = append(errs, s.db.Close())
	return errors.Join(errs...)
}

// acquireConn takes the store's connection, waiting at most as long as ctx
// allows.
func (s *Store) acquireConn(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case s.sem <- struct{}{}:
		if s.closed.Load() {
			<-s.sem
			return store.ErrUnavailable
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-s.closing:
		return store.ErrUnavailable
	}
}

func (s *Store) releaseConn() { <-s.sem }

// fail wraps err with the operation and key, adding store.ErrUnavailable
// when the database cannot serve requests (closed, locked past the busy
// timeout, out of space, I/O errors), so callers know to retry later.
func (s *Store) fail(op string, key any, err error) error {
	if !errors.Is(err, store.ErrUnavailable) && (s.closed.Load() || unavailable(err)) {
		return fmt.Errorf("%s %v: %w: %w", op, key, store.ErrUnavailable, err)
	}
	return fmt.Errorf("%s %v: %w", op, key, err)
}

func unavailable(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return errors.Is(err, sql.ErrConnDone)
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_NOMEM, sqlite3.SQLITE_READONLY,
		sqlite3.SQLITE_IOERR, sqlite3.SQLITE_FULL, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PROTOCOL:
		return true
	}
	return false
}

// Times are stored as Unix nanoseconds; the zero time is stored as 0 so it
// round-trips (its UnixNano is out of range).
func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromUnixNano(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// nullJSON makes an absent JSON value NULL instead of an empty blob.
func nullJSON(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return b
}

// noCancel is the context statements run under. A started operation runs
// to completion (bounded by the busy timeout), which keeps transactions
// whole; it also spares the driver a watcher goroutine per statement.
// Callers' contexts are honoured before the operation starts.
var noCancel = context.Background()

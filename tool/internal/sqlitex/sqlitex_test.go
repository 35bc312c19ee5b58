package sqlitex

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/tool/internal/sqlitetest"
	"github.com/arbiterhq/arbiter/tool/reply"
)

func openDB(t *testing.T) *sql.DB {
	t.Helper()
	db := sqlitetest.Open(t, sqlitetest.WAL)
	if _, err := db.Exec(`CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE)`); err != nil {
		t.Fatal(err)
	}
	return db
}

func count(t *testing.T, db *sql.DB) int {
	t.Helper()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM items`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// codedError is a driver error carrying an SQLite result code.
type codedError int

func (e codedError) Error() string { return fmt.Sprintf("sqlite error %d", int(e)) }
func (e codedError) Code() int     { return int(e) }

func TestStamp(t *testing.T) {
	at := time.Date(2026, 3, 29, 1, 30, 0, 5, time.FixedZone("x", 3*3600))
	s := Stamp(at)
	if s != "2026-03-28T22:30:00.000000005Z" {
		t.Errorf("Stamp = %s", s)
	}
	if got := ParseStamp(s); !got.Equal(at) {
		t.Errorf("ParseStamp(%s) = %v, want %v", s, got, at)
	}
	if a, b := Stamp(at), Stamp(at.Add(time.Second)); !(a < b) || len(a) != len(b) {
		t.Errorf("stamps %s and %s do not sort as strings", a, b)
	}
	for _, bad := range []string{"", "2026-03-28", "2026-03-28T22:30:00Z"} {
		if got := ParseStamp(bad); !got.IsZero() {
			t.Errorf("ParseStamp(%q) = %v, want zero", bad, got)
		}
	}
}

func TestSQLiteCode(t *testing.T) {
	tests := []struct {
		err  error
		want int
	}{
		{nil, 0},
		{errors.New("plain"), 0},
		{codedError(5), 5},
		{codedError(517), 5},   // SQLITE_BUSY_SNAPSHOT
		{codedError(2067), 19}, // SQLITE_CONSTRAINT_UNIQUE
		{fmt.Errorf("insert: %w", codedError(6)), 6},
	}
	for _, tt := range tests {
		if got := sqliteCode(tt.err); got != tt.want {
			t.Errorf("sqliteCode(%v) = %d, want %d", tt.err, got, tt.want)
		}
	}
}

func TestWriterDo(t *testing.T) {
	insert := func(name string) func(tx *sql.Tx) error {
		return func(tx *sql.Tx) error {
			_, err := tx.Exec(`INSERT INTO items (name) VALUES (?)`, name)
			return err
		}
	}
	failing := errors.New("fn failed")
	tests := []struct {
		name      string
		conflicts int                 // DoRetryingConflicts with this many; 0 for Do
		fails     []error             // errors the first runs of fn return before it inserts
		fn        func(*sql.Tx) error // instead of the failing-then-insert fn
		wantRuns  int
		wantRows  int
		wantErr   string
	}{
		{name: "commits", wantRuns: 1, wantRows: 1},
		{name: "error rolls back", fn: func(tx *sql.Tx) error {
			if err := insert("a")(tx); err != nil {
				return err
			}
			return failing
		}, wantRuns: 1, wantErr: "fn failed"},
		{name: "busy is retried", fails: []error{codedError(5), fmt.Errorf("read: %w", codedError(6))}, wantRuns: 3, wantRows: 1},
		{name: "constraint is final for Do", fails: []error{codedError(2067)}, wantRuns: 1, wantErr: "sqlite error 2067"},
		{name: "constraint retried", conflicts: 3, fails: []error{codedError(2067), codedError(5), codedError(2067)}, wantRuns: 4, wantRows: 1},
		{name: "constraint retries run out", conflicts: 2, fails: []error{codedError(19), codedError(19), codedError(19)}, wantRuns: 3, wantErr: "sqlite error 19"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := openDB(t)
			w := NewWriter(db)
			runs := 0
			fn := func(tx *sql.Tx) error {
				runs++
				if tt.fn != nil {
					return tt.fn(tx)
				}
				if err := insert("a")(tx); err != nil {
					return err
				}
				if runs <= len(tt.fails) {
					return tt.fails[runs-1]
				}
				return nil
			}
			var err error
			if tt.conflicts > 0 {
				err = w.DoRetryingConflicts(context.Background(), tt.conflicts, fn)
			} else {
				err = w.Do(context.Background(), fn)
			}
			if (err == nil) != (tt.wantErr == "") || (err != nil && err.Error() != tt.wantErr) {
				t.Errorf("err = %v, want %q", err, tt.wantErr)
			}
			if runs != tt.wantRuns {
				t.Errorf("fn ran %d times, want %d", runs, tt.wantRuns)
			}
			if n := count(t, db); n != tt.wantRows {
				t.Errorf("%d rows, want %d", n, tt.wantRows)
			}
		})
	}
}

func TestWriterBusyUntilContextEnds(t *testing.T) {
	w := NewWriter(openDB(t))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := w.Do(ctx, func(*sql.Tx) error { return codedError(5) })
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "database busy: sqlite error 5") {
		t.Errorf("err = %v, want the deadline with the busy error", err)
	}
}

func TestWriterSerializes(t *testing.T) {
	db := openDB(t)
	w := NewWriter(db)
	var inside, most atomic.Int32
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			err := w.Do(context.Background(), func(tx *sql.Tx) error {
				n := inside.Add(1)
				defer inside.Add(-1)
				for {
					m := most.Load()
					if n <= m || most.CompareAndSwap(m, n) {
						break
					}
				}
				time.Sleep(time.Millisecond)
				_, err := tx.Exec(`INSERT INTO items (name) VALUES (?)`, fmt.Sprint(i))
				return err
			})
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if most.Load() != 1 {
		t.Errorf("%d transactions ran at once, want 1", most.Load())
	}
	if n := count(t, db); n != 8 {
		t.Errorf("%d rows, want 8", n)
	}

	// A call whose context ends while it waits for its turn gives up.
	release, started, finished := make(chan struct{}), make(chan struct{}), make(chan error)
	go func() {
		finished <- w.Do(context.Background(), func(*sql.Tx) error { close(started); <-release; return nil })
	}()
	<-started
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := w.Do(ctx, func(*sql.Tx) error { t.Error("ran after its context ended"); return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("queued call = %v, want context.Canceled", err)
	}
	close(release)
	if err := <-finished; err != nil {
		t.Errorf("holding call = %v", err)
	}
}

func TestApplied(t *testing.T) {
	db := openDB(t)
	applied := Applied{Table: "x_applied", IDColumn: "row_id", IDType: "INTEGER"}
	if _, err := db.Exec(applied.DDL()); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	rb := reply.Builder{Source: "x", Now: func() time.Time { return at }}
	w := NewWriter(db)
	ctx := context.Background()
	call := func(tenant, key string) tool.Call {
		return tool.Call{IdempotencyKey: key, Caller: tool.Caller{TenantID: tenant, UserID: "u1", Language: "en"}}
	}
	first := rb.OK(map[string]int{"id": 7}, "Saved.")
	for _, c := range []tool.Call{call("t1", "k1"), call("t1", "")} {
		if err := w.Do(ctx, func(tx *sql.Tx) error { return applied.Record(ctx, tx, c, "add", 7, first, at) }); err != nil {
			t.Fatal(err)
		}
	}
	var stored int
	var stamp string
	if err := db.QueryRow(`SELECT count(*), max(at) FROM x_applied`).Scan(&stored, &stamp); err != nil || stored != 1 || stamp != Stamp(at) {
		t.Fatalf("stored %d keys at %s (%v), want the one key at %s", stored, stamp, err, Stamp(at))
	}
	tests := []struct {
		name     string
		call     tool.Call
		action   string
		wantDone bool
		want     string // Result.Text
	}{
		{"same key and action", call("t1", "k1"), "add", true, "Saved."},
		{"same key, other action", call("t1", "k1"), "delete", true, "This action key was already used for another action; refused."},
		{"new key", call("t1", "k2"), "add", false, ""},
		{"other tenant", call("t2", "k1"), "add", false, ""},
		{"no key", call("t1", ""), "add", false, ""},
	}
	for _, tt := range tests {
		r, done, err := applied.Replay(ctx, db, rb, tt.call, tt.action)
		if err != nil || done != tt.wantDone || r.Text != tt.want {
			t.Errorf("%s: Replay = %+v, %v, %v; want done %v, text %q", tt.name, r, done, err, tt.wantDone, tt.want)
		}
	}
	r, _, _ := applied.Replay(ctx, db, rb, call("t1", "k1"), "add")
	if r.Status != tool.StatusOK || string(r.Data) != `{"id":7}` || !r.ObservedAt.Equal(at) {
		t.Errorf("replayed %+v, want the first result", r)
	}
	if _, err := db.Exec(`UPDATE x_applied SET result = 'not json'`); err != nil {
		t.Fatal(err)
	}
	if _, done, err := applied.Replay(ctx, db, rb, call("t1", "k1"), "add"); err == nil || done {
		t.Errorf("unreadable stored result: done %v, err %v; want an error", done, err)
	}
}

// A timeout is told as one, never as "not found"; any other failure as
// the store's.
func TestFailure(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	rb := reply.Builder{Source: "x", Now: func() time.Time { return at }}
	for _, tt := range []struct {
		err     error
		errText string
		human   string
	}{
		{context.DeadlineExceeded, "x store timed out: context deadline exceeded", "late"},
		{fmt.Errorf("query: %w", context.Canceled), "x store timed out: query: context canceled", "late"},
		{errors.New("disk I/O error"), "x store storage failed: disk I/O error", "failed"},
	} {
		res := Failure(rb, tt.err, "x store", "late", "failed")
		if res.Status != tool.StatusError || res.Error != tt.errText || res.Text != tt.human || res.Source != "x" || !res.ObservedAt.Equal(at) {
			t.Errorf("Failure(%v) = %+v", tt.err, res)
		}
	}
}

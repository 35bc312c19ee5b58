// Package sqlitetest opens the SQLite databases the tools' tests run on:
// a fresh file each, with its pragmas in the DSN so that every pooled
// connection gets them.
package sqlitetest

import (
	"database/sql"
	"path/filepath"
	"testing"

	_ "modernc.org/sqlite" // the driver the tools' stores run on
)

// WAL is the pragmas of a database that concurrent writers share: they
// wait for each other's locks rather than fail at once.
const WAL = "?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)"

// Open opens a new database file with pragmas (a DSN query such as WAL)
// in t's temporary directory, closed when t ends.
func Open(t testing.TB, pragmas string) *sql.DB {
	t.Helper()
	dsn := filepath.Join(t.TempDir(), "test.db") + pragmas
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		t.Fatalf("open %s: %v", dsn, err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

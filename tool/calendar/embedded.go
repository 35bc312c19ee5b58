package calendar

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base32"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/arbiterhq/arbiter/tool/internal/sqlitex"
)

// Store is the embedded backend: events of every tenant in SQLite tables
// prefixed "calendar_", times stored in UTC. A member is busy during every
// event they organize or attend. It is safe for concurrent use; writes of
// one Store are serialized, and a busy database is retried until the
// context ends.
type Store struct {
	db     *sql.DB
	now    func() time.Time
	writer *sqlitex.Writer
}

var _ Backend = (*Store)(nil)

var storeDDL = []string{
	`CREATE TABLE IF NOT EXISTS calendar_events (
		id          TEXT NOT NULL,
		tenant      TEXT NOT NULL,
		organizer   TEXT NOT NULL,
		title       TEXT NOT NULL,
		description TEXT NOT NULL DEFAULT '',
		start_utc   TEXT NOT NULL,
		end_utc     TEXT NOT NULL,
		timezone    TEXT NOT NULL,
		created_at  TEXT NOT NULL,
		idem_key    TEXT NOT NULL DEFAULT '',
		PRIMARY KEY (tenant, id)
	)`,
	`CREATE UNIQUE INDEX IF NOT EXISTS calendar_events_idem ON calendar_events (tenant, organizer, idem_key) WHERE idem_key <> ''`,
	`CREATE TABLE IF NOT EXISTS calendar_attendees (
		tenant    TEXT NOT NULL,
		event_id  TEXT NOT NULL,
		member_id TEXT NOT NULL,
		name      TEXT NOT NULL,
		position  INTEGER NOT NULL,
		PRIMARY KEY (tenant, event_id, member_id)
	)`,
	`CREATE INDEX IF NOT EXISTS calendar_attendees_member ON calendar_attendees (tenant, member_id, event_id)`,
}

// NewStore creates the embedded backend's tables on db if they do not
// exist. It returns an error for a nil db or a failed table creation.
func NewStore(db *sql.DB) (*Store, error) {
	if db == nil {
		return nil, errors.New("calendar: store needs a database")
	}
	for _, stmt := range storeDDL {
		if _, err := db.Exec(stmt); err != nil {
			return nil, fmt.Errorf("calendar: create tables: %w", err)
		}
	}
	return &Store{db: db, now: time.Now, writer: sqlitex.NewWriter(db)}, nil
}

// Kind returns "embedded".
func (s *Store) Kind() string { return "embedded" }

// stampLayout is fixed-width UTC, so stored stamps compare as strings.
const stampLayout = "2006-01-02T15:04:05Z"

func stamp(t time.Time) string { return t.UTC().Format(stampLayout) }

func parseStamp(s string) (time.Time, error) { return time.Parse(stampLayout, s) }

// Busy returns the events each member of who organizes or attends that
// overlap span. Members without events get no entry.
func (s *Store) Busy(ctx context.Context, tenant string, _ Member, who []Member, span Interval) (map[string][]Interval, error) {
	out := make(map[string][]Interval, len(who))
	if len(who) == 0 {
		return out, nil
	}
	args := []any{tenant, stamp(span.End), stamp(span.Start)}
	marks := make([]string, len(who))
	for i, m := range who {
		marks[i] = "?"
		args = append(args, m.ID)
	}
	rows, err := s.db.QueryContext(ctx, `SELECT a.member_id, e.start_utc, e.end_utc
		FROM calendar_attendees a JOIN calendar_events e ON e.tenant = a.tenant AND e.id = a.event_id
		WHERE a.tenant = ? AND e.start_utc < ? AND e.end_utc > ? AND a.member_id IN (`+strings.Join(marks, ",")+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("read busy time: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, start, end string
		if err := rows.Scan(&id, &start, &end); err != nil {
			return nil, fmt.Errorf("read busy time: %w", err)
		}
		st, err1 := parseStamp(start)
		en, err2 := parseStamp(end)
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("read busy time: %w", err)
		}
		out[id] = append(out[id], Interval{st, en})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read busy time: %w", err)
	}
	return out, nil
}

// Book stores ev with the organizer and ev.Attendees as attendees. A
// non-empty key is unique per tenant and organizer (a unique index), so a
// repeated key returns the first event with replayed true and writes
// nothing, even when the two calls race.
func (s *Store) Book(ctx context.Context, tenant string, organizer Member, ev NewEvent, key string) (Event, bool, error) {
	if !ev.Start.Before(ev.End) {
		return Event{}, false, errors.New("book: the event ends before it starts")
	}
	var out Event
	var replayed bool
	err := s.write(ctx, func(tx *sql.Tx) error {
		if key != "" {
			e, ok, err := s.byKey(ctx, tx, tenant, organizer.ID, key)
			if err != nil {
				return err
			}
			if ok {
				out, replayed = e, true
				return nil
			}
		}
		id, err := NewEventID()
		if key != "" {
			// The key names one booking, so it can name its event too:
			// stable across retries and reproducible in transcripts.
			id, err = keyedEventID(tenant, organizer.ID, key), nil
		}
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO calendar_events
			(id, tenant, organizer, title, description, start_utc, end_utc, timezone, created_at, idem_key)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			id, tenant, organizer.ID, ev.Title, ev.Description, stamp(ev.Start), stamp(ev.End),
			ev.Timezone, stamp(s.now()), key); err != nil {
			return fmt.Errorf("insert event: %w", err)
		}
		people := append([]Member{organizer}, ev.Attendees...)
		seen := map[string]bool{}
		for _, m := range people {
			if seen[m.ID] {
				continue
			}
			seen[m.ID] = true
			if _, err := tx.ExecContext(ctx, `INSERT INTO calendar_attendees (tenant, event_id, member_id, name, position)
				VALUES (?, ?, ?, ?, ?)`, tenant, id, m.ID, m.Name, len(seen)); err != nil {
				return fmt.Errorf("insert attendee: %w", err)
			}
		}
		e, err := s.event(ctx, tx, tenant, id)
		out = e
		return err
	})
	if err != nil {
		return Event{}, false, err
	}
	return out, replayed, nil
}

// Booked returns the event organizer booked under key.
func (s *Store) Booked(ctx context.Context, tenant string, organizer Member, key string) (Event, bool, error) {
	if key == "" {
		return Event{}, false, nil
	}
	return s.byKey(ctx, s.db, tenant, organizer.ID, key)
}

// Upcoming returns user's events overlapping span, earliest first.
func (s *Store) Upcoming(ctx context.Context, tenant string, user Member, span Interval, limit int) ([]Event, error) {
	return s.query(ctx, s.db, `WHERE e.tenant = ? AND e.start_utc < ? AND e.end_utc > ?
		AND EXISTS (SELECT 1 FROM calendar_attendees a WHERE a.tenant = e.tenant AND a.event_id = e.id AND a.member_id = ?)
		ORDER BY e.start_utc, e.id LIMIT ?`, tenant, stamp(span.End), stamp(span.Start), user.ID, limit)
}

// Events returns every event of tenant, earliest first; for views and
// tests.
func (s *Store) Events(ctx context.Context, tenant string) ([]Event, error) {
	return s.query(ctx, s.db, `WHERE e.tenant = ? ORDER BY e.start_utc, e.id`, tenant)
}

// querier is what reads need from *sql.DB and *sql.Tx.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func (s *Store) byKey(ctx context.Context, q querier, tenant, organizer, key string) (Event, bool, error) {
	evs, err := s.query(ctx, q, `WHERE e.tenant = ? AND e.organizer = ? AND e.idem_key = ?`, tenant, organizer, key)
	if err != nil || len(evs) == 0 {
		return Event{}, false, err
	}
	return evs[0], true, nil
}

func (s *Store) event(ctx context.Context, q querier, tenant, id string) (Event, error) {
	evs, err := s.query(ctx, q, `WHERE e.tenant = ? AND e.id = ?`, tenant, id)
	if err == nil && len(evs) == 0 {
		err = fmt.Errorf("event %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return Event{}, err
	}
	return evs[0], nil
}

// query reads the events selected by where (which must filter on tenant)
// with their attendees.
func (s *Store) query(ctx context.Context, q querier, where string, args ...any) ([]Event, error) {
	rows, err := q.QueryContext(ctx, `SELECT e.id, e.tenant, e.organizer, e.title, e.description, e.start_utc,
		e.end_utc, e.timezone FROM calendar_events e `+where, args...)
	if err != nil {
		return nil, fmt.Errorf("read events: %w", err)
	}
	var evs []Event
	var tenant string
	for rows.Next() {
		var e Event
		var start, end string
		if err := rows.Scan(&e.ID, &tenant, &e.Organizer, &e.Title, &e.Description, &start, &end, &e.Timezone); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read events: %w", err)
		}
		st, err1 := parseStamp(start)
		en, err2 := parseStamp(end)
		if err := errors.Join(err1, err2); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read event %s: %w", e.ID, err)
		}
		e.Start, e.End = st, en
		evs = append(evs, e)
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return nil, fmt.Errorf("read events: %w", err)
	}
	for i := range evs {
		if err := s.attendees(ctx, q, tenant, &evs[i]); err != nil {
			return nil, err
		}
	}
	return evs, nil
}

func (s *Store) attendees(ctx context.Context, q querier, tenant string, e *Event) error {
	rows, err := q.QueryContext(ctx, `SELECT member_id, name FROM calendar_attendees
		WHERE tenant = ? AND event_id = ? ORDER BY position`, tenant, e.ID)
	if err != nil {
		return fmt.Errorf("read attendees of %s: %w", e.ID, err)
	}
	defer rows.Close()
	for rows.Next() {
		var a Attendee
		if err := rows.Scan(&a.ID, &a.Name); err != nil {
			return fmt.Errorf("read attendees of %s: %w", e.ID, err)
		}
		e.Attendees = append(e.Attendees, a)
	}
	return rows.Err()
}

// write runs fn in one transaction, retrying while the database is busy
// until ctx ends. A constraint failure is retried a few times: fn re-reads
// what it depends on, so a writer that lost a race on the idempotency index
// finds the winner's event.
func (s *Store) write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	return s.writer.DoRetryingConflicts(ctx, 3, fn)
}

// EventIDEncoding is base32hex in lower case: the alphabet Google Calendar event
// ids use, so ids look alike on both backends.
var EventIDEncoding = base32.NewEncoding("0123456789abcdefghijklmnopqrstuv").WithPadding(base32.NoPadding)

// keyedEventID derives an event id from a booking's idempotency key.
func keyedEventID(tenant, organizer, key string) string {
	sum := sha256.Sum256([]byte(tenant + "\x00" + organizer + "\x00" + key))
	return EventIDEncoding.EncodeToString(sum[:10])
}

// NewEventID returns 16 random base32hex characters (80 bits).
func NewEventID() (string, error) {
	var b [10]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("event id: %w", err)
	}
	return EventIDEncoding.EncodeToString(b[:]), nil
}

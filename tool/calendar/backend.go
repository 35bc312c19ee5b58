package calendar

import (
	"context"
	"errors"
	"time"
)

// Interval is the half-open span [Start, End).
type Interval struct {
	Start, End time.Time
}

// Duration is End − Start.
func (iv Interval) Duration() time.Duration { return iv.End.Sub(iv.Start) }

// Overlaps reports whether iv and o share an instant; intervals that only
// touch do not overlap.
func (iv Interval) Overlaps(o Interval) bool {
	return iv.Start.Before(o.End) && o.Start.Before(iv.End)
}

// Attendee is one person invited to an event.
type Attendee struct {
	ID    string // member id; empty when the backend knows only the address
	Name  string
	Email string
}

// Event is a booked event. Start and End are in UTC.
type Event struct {
	ID          string
	Title       string
	Description string
	Start, End  time.Time
	// Timezone is the IANA zone the event was booked in.
	Timezone  string
	Organizer string // member id of the organizer
	// Attendees lists everyone taking part, the organizer included.
	Attendees []Attendee
	URL       string // a link to the event, when the backend has one
}

// NewEvent is an event to book.
type NewEvent struct {
	Title       string
	Description string
	Start, End  time.Time
	Timezone    string   // the organizer's IANA zone
	Attendees   []Member // participants other than the organizer
}

// Backend is where events are kept and where free/busy comes from.
// Implementations are safe for concurrent use and scope every operation to
// the tenant they are given.
//
// Errors: ErrNotConnected when the user has no access to a calendar at all
// (no token), errors wrapping ErrNotFound when a named calendar does not
// exist or is not visible, errors wrapping ErrAccessDenied when the backend
// refused the credentials, and any other error for a failure (including a
// context that ended), which callers report as an error, never as "not
// found".
type Backend interface {
	// Kind names the backend: "embedded" or "google".
	Kind() string
	// Busy returns, for the id of each member of who, the intervals within
	// span in which that member is busy, read with the access of caller.
	Busy(ctx context.Context, tenant string, caller Member, who []Member, span Interval) (map[string][]Interval, error)
	// Book creates ev on organizer's calendar and returns it. A non-empty
	// key is applied at most once per tenant and organizer: a repeated key
	// creates nothing and returns the event it created first, with
	// replayed true.
	Book(ctx context.Context, tenant string, organizer Member, ev NewEvent, key string) (e Event, replayed bool, err error)
	// Booked returns the event organizer booked under key, ok false when
	// there is none.
	Booked(ctx context.Context, tenant string, organizer Member, key string) (e Event, ok bool, err error)
	// Upcoming returns up to limit of user's events overlapping span,
	// earliest first.
	Upcoming(ctx context.Context, tenant string, user Member, span Interval, limit int) ([]Event, error)
}

// Backend errors; see Backend.
var (
	ErrNotConnected = errors.New("calendar: not connected")
	ErrNotFound     = errors.New("calendar: not found")
	ErrAccessDenied = errors.New("calendar: access denied")
)

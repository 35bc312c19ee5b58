// Package calendar gives the engine two calendar tools and the live
// calendar context the model reads before deciding:
//
//   - create_event (write:safe, confirmed always) books one event for the
//     caller and the named participants;
//   - schedule_team_meeting (read) finds the earliest common free slots of
//     the participants and offers them as choices; it books nothing.
//
// The model proposes, code disposes: which member a name means, what a
// time string means in which zone, who is busy when and what lies inside
// working hours are all decided here, in code. Names are matched against
// the tenant's members (several matches are an ambiguous result, none a
// not-found result, never a guess); times are parsed with their zones,
// zone-less times are read in the caller's zone, working hours are applied
// in each participant's own zone on each local date (so a 10:00 meeting on
// the day the clocks change is at 10:00 local time), times are shown in the
// caller's zone and kept in UTC.
//
// Events live in a Backend: the embedded Store (SQLite tables prefixed
// "calendar_", the default) or Google Calendar (NewGoogle), which reads
// free/busy through freeBusy.query and books through events.insert with
// each user's OAuth token. A booking is applied at most once per
// tool.Call.IdempotencyKey on either backend.
//
// The package does not open databases, serve HTTP, obtain OAuth tokens or
// decide at run time whether an action needs confirmation: the engine does
// that from each tool's Spec.
package calendar

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/tool/reply"
)

// Action names.
const (
	ActionCreateEvent = "create_event"
	ActionSchedule    = "schedule_team_meeting"
)

// SourceName is the Name of the calendar as a context source and the Source
// of every Result it returns.
const SourceName = "calendar"

// Defaults for a zero Config.
const (
	DefaultSlotStep        = 30 * time.Minute
	DefaultMinNotice       = 30 * time.Minute
	DefaultSearchDays      = 7
	DefaultEventDuration   = 30 * time.Minute
	DefaultMaxSlots        = 3
	DefaultWorkStart       = 9 * time.Hour
	DefaultWorkEnd         = 18 * time.Hour
	maxSearchDays          = 31
	maxParticipants        = 20
	maxContextEvents       = 10
	maxContextZoneLines    = 12
	maxScheduleDurationMin = 480
)

// Member is a tenant member who can take part in events.
type Member struct {
	ID   string
	Name string // full name, e.g. "Ольга Смирнова"
	// Timezone is the member's IANA zone ("Europe/Berlin"). Empty or
	// unknown means the tenant's default zone, or the caller's zone when
	// the tenant has none.
	Timezone string
	// Email is the member's calendar id on Google Calendar (free/busy item
	// and attendee address). The embedded backend ignores it.
	Email string
}

// WorkHours is the part of each local day in which meetings may be
// proposed, applied in every participant's own zone.
type WorkHours struct {
	// Start and End are offsets from local midnight; 0 ≤ Start < End ≤ 24h,
	// whole minutes. Zero values mean 09:00 and 18:00.
	Start, End time.Duration
	// Days are the working weekdays; empty means Monday to Friday.
	Days []time.Weekday
}

// Config configures a Calendar. Zero values select the documented defaults.
type Config struct {
	// Backend holds the events. Nil selects the embedded Store on DB.
	Backend Backend
	// DB is a SQLite handle, possibly shared with other components, for the
	// embedded Store; required when Backend is nil, ignored otherwise.
	DB *sql.DB
	// Members returns a tenant's members. It is called once per call and
	// must be safe for concurrent use.
	Members func(tenant string) []Member
	// TenantTimezone returns the tenant's default IANA zone, "" for none.
	// Optional; must be safe for concurrent use.
	TenantTimezone func(tenant string) string
	// WorkHours bounds proposed slots; default 09:00–18:00 Monday–Friday.
	WorkHours WorkHours
	// SlotStep is the grid proposed starts lie on in the caller's zone
	// (:00 and :30 by default). It must divide an hour into whole minutes.
	// Default DefaultSlotStep.
	SlotStep time.Duration
	// MinNotice is how far ahead of now the first proposed slot may start.
	// Default DefaultMinNotice; negative means none.
	MinNotice time.Duration
	// SearchDays is how many calendar days schedule_team_meeting searches
	// when the call gives no withinDays. Default DefaultSearchDays.
	SearchDays int
	// EventDuration is the length of an event created with neither endIso
	// nor durationMin. Default DefaultEventDuration.
	EventDuration time.Duration
	// Now is the clock used when a call carries no time; default time.Now.
	Now func() time.Time
	// Requires names the integration a user must have connected to be
	// shown the calendar tools (tool.Spec.Requires); empty: everyone.
	Requires string
}

// Calendar is the calendar tool set of every tenant. It is safe for
// concurrent use; it holds no state of its own besides its configuration,
// and the backend serializes what it must.
type Calendar struct {
	backend    Backend
	members    func(string) []Member
	tenantZone func(string) string
	hours      WorkHours
	step       time.Duration
	notice     time.Duration
	searchDays int
	eventDur   time.Duration
	now        func() time.Time
	reply      reply.Builder
	requires   string
}

var _ tool.ContextSource = (*Calendar)(nil)

// New validates cfg and, for the embedded backend, creates its tables. It
// returns an error for a missing backend and DB, invalid working hours, a
// slot step that does not divide an hour, or a failed table creation.
func New(cfg Config) (*Calendar, error) {
	c := &Calendar{
		backend:    cfg.Backend,
		members:    cfg.Members,
		tenantZone: cfg.TenantTimezone,
		hours:      cfg.WorkHours,
		step:       cfg.SlotStep,
		notice:     cfg.MinNotice,
		searchDays: cfg.SearchDays,
		eventDur:   cfg.EventDuration,
		now:        cfg.Now,
		requires:   cfg.Requires,
	}
	if c.backend == nil {
		if cfg.DB == nil {
			return nil, errors.New("calendar: Config.DB is required for the embedded backend")
		}
		s, err := NewStore(cfg.DB)
		if err != nil {
			return nil, err
		}
		c.backend = s
	}
	h, err := c.hours.normalized()
	if err != nil {
		return nil, err
	}
	c.hours = h
	if c.step == 0 {
		c.step = DefaultSlotStep
	}
	if c.step < time.Minute || c.step%time.Minute != 0 || time.Hour%c.step != 0 {
		return nil, fmt.Errorf("calendar: slot step %v must be whole minutes dividing an hour", c.step)
	}
	switch {
	case c.notice == 0:
		c.notice = DefaultMinNotice
	case c.notice < 0:
		c.notice = 0
	}
	if c.searchDays == 0 {
		c.searchDays = DefaultSearchDays
	}
	if c.searchDays < 1 || c.searchDays > maxSearchDays {
		return nil, fmt.Errorf("calendar: search days %d outside 1..%d", c.searchDays, maxSearchDays)
	}
	if c.eventDur == 0 {
		c.eventDur = DefaultEventDuration
	}
	if c.eventDur < time.Minute {
		return nil, fmt.Errorf("calendar: event duration %v is shorter than a minute", c.eventDur)
	}
	if c.now == nil {
		c.now = time.Now
	}
	c.reply = reply.Builder{Source: SourceName, Now: c.now, EncodeFailure: "не удалось сформировать ответ календаря"}
	return c, nil
}

// normalized fills in defaults and validates h.
func (h WorkHours) normalized() (WorkHours, error) {
	if h.Start == 0 && h.End == 0 {
		h.Start, h.End = DefaultWorkStart, DefaultWorkEnd
	}
	if h.Start < 0 || h.End > 24*time.Hour || h.Start >= h.End ||
		h.Start%time.Minute != 0 || h.End%time.Minute != 0 {
		return h, fmt.Errorf("calendar: working hours %v–%v must be whole minutes with 0 ≤ start < end ≤ 24h", h.Start, h.End)
	}
	if len(h.Days) == 0 {
		h.Days = []time.Weekday{time.Monday, time.Tuesday, time.Wednesday, time.Thursday, time.Friday}
	}
	seen := map[time.Weekday]bool{}
	days := make([]time.Weekday, 0, len(h.Days))
	for _, d := range h.Days {
		if d < time.Sunday || d > time.Saturday {
			return h, fmt.Errorf("calendar: weekday %d out of range", d)
		}
		if !seen[d] {
			seen[d] = true
			days = append(days, d)
		}
	}
	// Monday first, Sunday last, as people read a week.
	sort.Slice(days, func(i, j int) bool { return (days[i]+6)%7 < (days[j]+6)%7 })
	h.Days = days
	return h, nil
}

// works reports whether d is a working weekday.
func (h WorkHours) works(d time.Weekday) bool {
	for _, w := range h.Days {
		if w == d {
			return true
		}
	}
	return false
}

// String renders h compactly, e.g. "09:00–18:00 Mon–Fri".
func (h WorkHours) String() string {
	clock := func(d time.Duration) string {
		return fmt.Sprintf("%02d:%02d", int(d/time.Hour), int(d%time.Hour/time.Minute))
	}
	names := make([]string, len(h.Days))
	contiguous := len(h.Days) > 2
	for i, d := range h.Days {
		names[i] = d.String()[:3]
		if i > 0 && (h.Days[i-1]+1)%7 != d {
			contiguous = false
		}
	}
	days := strings.Join(names, ", ")
	if contiguous {
		days = names[0] + "–" + names[len(names)-1]
	}
	return clock(h.Start) + "–" + clock(h.End) + " " + days
}

// Name returns "calendar".
func (c *Calendar) Name() string { return SourceName }

// Backend returns the backend the calendar books on.
func (c *Calendar) Backend() Backend { return c.backend }

// Tools returns create_event and schedule_team_meeting.
func (c *Calendar) Tools() []tool.Tool {
	return []tool.Tool{
		c.newAction(ActionCreateEvent, c.createEvent),
		c.newAction(ActionSchedule, c.scheduleMeeting),
	}
}

// Members returns the tenant's members from Config.Members with blank ids
// dropped, the first of each id kept, and names and zones trimmed.
func (c *Calendar) Members(tenant string) []Member {
	if c.members == nil {
		return nil
	}
	all := c.members(tenant)
	seen := make(map[string]bool, len(all))
	out := make([]Member, 0, len(all))
	for _, m := range all {
		m.ID = strings.TrimSpace(m.ID)
		if m.ID == "" || seen[m.ID] {
			continue
		}
		seen[m.ID] = true
		m.Name = strings.Join(strings.Fields(m.Name), " ")
		if m.Name == "" {
			m.Name = m.ID
		}
		m.Timezone = strings.TrimSpace(m.Timezone)
		m.Email = strings.TrimSpace(m.Email)
		out = append(out, m)
	}
	return out
}

// team is a tenant's members seen from one caller, with zones resolved.
type team struct {
	members  []Member
	self     Member         // the caller as a member
	selfZone *time.Location // the caller's zone
	fallback *time.Location // zone of a member without a usable one
}

// teamOf resolves the caller and the zones of the tenant's members. The
// caller's zone is Caller.Timezone, else the caller's member zone, else the
// tenant's, else UTC; a member's is its own, else the tenant's, else the
// caller's.
func (c *Calendar) teamOf(caller tool.Caller) team {
	t := team{members: c.Members(caller.TenantID)}
	t.self = Member{ID: caller.UserID, Name: strings.TrimSpace(caller.Name)}
	for _, m := range t.members {
		if m.ID == caller.UserID {
			t.self = m
			break
		}
	}
	if t.self.Name == "" {
		t.self.Name = caller.UserID
	}
	var tenantLoc *time.Location
	if c.tenantZone != nil {
		tenantLoc, _ = LoadZone(c.tenantZone(caller.TenantID))
	}
	self, err := LoadZone(caller.Timezone)
	if err != nil {
		self, err = LoadZone(t.self.Timezone)
	}
	if err != nil {
		self = tenantLoc
	}
	if self == nil {
		self = time.UTC
	}
	t.selfZone = self
	t.fallback = tenantLoc
	if t.fallback == nil {
		t.fallback = self
	}
	t.self.Timezone = self.String()
	return t
}

// zoneOf is member m's zone as seen by t.
func (t team) zoneOf(m Member) *time.Location {
	if m.ID == t.self.ID {
		return t.selfZone
	}
	if loc, err := LoadZone(m.Timezone); err == nil {
		return loc
	}
	return t.fallback
}

// clock is the time of call: call.Now when the engine set it.
func (c *Calendar) clock(call tool.Call) time.Time {
	if !call.Now.IsZero() {
		return call.Now
	}
	return c.now()
}

// LiveContext returns what the model needs before a calendar decision: the
// caller's next events today and tomorrow (in the caller's zone) and the
// team's zones with their current local times and the working hours. It
// only reads. A caller whose calendar is not connected gets a line saying
// so; any other backend failure is returned as an error.
func (c *Calendar) LiveContext(ctx context.Context, caller tool.Caller, now time.Time) ([]tool.ContextSection, error) {
	t := c.teamOf(caller)
	loc := t.selfZone
	local := now.In(loc)
	dayAfter := time.Date(local.Year(), local.Month(), local.Day()+2, 0, 0, 0, 0, loc)
	lang := caller.Language
	var lines []string
	events, err := c.backend.Upcoming(ctx, caller.TenantID, t.self, Interval{now, dayAfter}, maxContextEvents+1)
	switch {
	case errors.Is(err, ErrNotConnected):
		lines = append(lines, "(the caller's calendar is not connected; create_event and schedule_team_meeting will fail until it is)")
	case err != nil:
		return nil, fmt.Errorf("calendar context: %w", err)
	default:
		for i, e := range events {
			if i == maxContextEvents {
				lines = append(lines, "… and more")
				break
			}
			line := fmt.Sprintf("%s «%s» (id %s)", formatSpan(e.Start, e.End, loc, lang, now), e.Title, e.ID)
			if others := attendeeNames(e, t.self.ID); others != "" {
				line += " — " + others
			}
			lines = append(lines, line)
		}
		if len(events) == 0 {
			lines = append(lines, "(none)")
		}
	}
	return []tool.ContextSection{
		{Title: fmt.Sprintf("Caller's next events today and tomorrow (now %s %s)", local.Format("2006-01-02 15:04"), loc), Lines: lines},
		{Title: "Team time zones (working hours " + c.hours.String() + " in each member's own zone)", Lines: c.zoneLines(t, now)},
	}, nil
}

// zoneLines groups the team by zone: "Europe/Berlin, now 09:30 — Ольга
// Смирнова, …", the caller's zone first.
func (c *Calendar) zoneLines(t team, now time.Time) []string {
	type group struct {
		loc   *time.Location
		names []string
	}
	var groups []*group
	byZone := map[string]*group{}
	add := func(loc *time.Location, name string) {
		g := byZone[loc.String()]
		if g == nil {
			g = &group{loc: loc}
			byZone[loc.String()] = g
			groups = append(groups, g)
		}
		g.names = append(g.names, name)
	}
	add(t.selfZone, t.self.Name+" (caller)")
	for _, m := range t.members {
		if m.ID != t.self.ID {
			add(t.zoneOf(m), m.Name)
		}
	}
	lines := make([]string, 0, min(len(groups), maxContextZoneLines+1))
	for i, g := range groups {
		if i == maxContextZoneLines {
			lines = append(lines, fmt.Sprintf("… %d more zones", len(groups)-i))
			break
		}
		names := g.names
		if len(names) > 8 {
			names = append(names[:8:8], fmt.Sprintf("… %d more", len(g.names)-8))
		}
		lines = append(lines, fmt.Sprintf("%s, now %s — %s", g.loc, now.In(g.loc).Format("Mon 15:04"), strings.Join(names, ", ")))
	}
	return lines
}

// attendeeNames lists the attendees of e other than the one with id self.
func attendeeNames(e Event, self string) string {
	var names []string
	for _, a := range e.Attendees {
		if a.ID != self || self == "" {
			n := a.Name
			if n == "" {
				n = a.Email
			}
			if n != "" {
				names = append(names, n)
			}
		}
	}
	return strings.Join(names, ", ")
}

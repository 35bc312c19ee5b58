package calendar

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/tool/internal/sqlitetest"
	"github.com/arbiterhq/arbiter/tool/tooltest"
)

// testNow is Tuesday 1 December 2026, 10:30 in Moscow, 08:30 in Berlin.
var testNow = time.Date(2026, 12, 1, 7, 30, 0, 0, time.UTC)

func testMembers(tenant string) []Member {
	switch tenant {
	case "acme":
		return []Member{
			{ID: "u1", Name: "Дмитрий Иванов", Timezone: "Europe/Moscow", Email: "dmitry@acme.test"},
			{ID: "u2", Name: "Дмитрий Петров", Timezone: "Europe/Moscow", Email: "petrov@acme.test"},
			{ID: "u3", Name: "Ольга Смирнова", Timezone: "Europe/Berlin", Email: "olga@acme.test"},
			{ID: "u4", Name: "John Smith", Timezone: "America/Los_Angeles", Email: "john@acme.test"},
			{ID: "u5", Name: "Алёна Ким", Email: "alena@acme.test"}, // no zone: the tenant's
			{ID: "u6", Name: "Анна Соколова", Timezone: "Europe/Moscow"},
			{ID: "u7", Name: "Анна Соколова", Timezone: "Asia/Yekaterinburg"},
		}
	case "globex":
		return []Member{{ID: "u1", Name: "Hank Scorpio", Timezone: "America/New_York"}, {ID: "g2", Name: "Homer Simpson"}}
	}
	return nil
}

func newCalendar(t *testing.T, backend Backend) *Calendar {
	t.Helper()
	c, err := New(Config{
		Backend: backend,
		DB:      sqlitetest.Open(t, sqlitetest.WAL),
		Members: testMembers,
		TenantTimezone: func(tenant string) string {
			if tenant == "acme" {
				return "Europe/Moscow"
			}
			return ""
		},
		Now: func() time.Time { return testNow },
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

var (
	dmitry = tooltest.Dmitry
	olga   = tool.Caller{TenantID: "acme", UserID: "u3", Name: "Ольга Смирнова", Language: "en", Timezone: "Europe/Berlin"}
	hank   = tooltest.Hank
)

func toolNamed(t *testing.T, c *Calendar, name string) tool.Tool {
	return tooltest.Named(t, c.Tools(), name)
}

func run(t *testing.T, c *Calendar, name string, caller tool.Caller, key, args string) tool.Result {
	t.Helper()
	return runAt(t, c, name, caller, key, args, testNow)
}

func runAt(t *testing.T, c *Calendar, name string, caller tool.Caller, key, args string, now time.Time) tool.Result {
	t.Helper()
	return tooltest.MustCall(t, toolNamed(t, c, name), caller, key, args, now)
}

type createdData struct {
	Event struct {
		ID           string   `json:"id"`
		StartUTC     string   `json:"startUtc"`
		EndUTC       string   `json:"endUtc"`
		When         string   `json:"when"`
		Participants []string `json:"participants"`
		URL          string   `json:"url"`
	} `json:"event"`
	Busy []string `json:"busyAtThatTime"`
}

type proposedData struct {
	Participants []struct {
		Name string `json:"name"`
		Zone string `json:"zone"`
	} `json:"participants"`
	Booked bool       `json:"booked"`
	Slots  []slotView `json:"slots"`
}

func TestSpecs(t *testing.T) {
	c := newCalendar(t, nil)
	tests := []struct {
		tool   string
		args   string
		accept bool
	}{
		{ActionCreateEvent, `{"title":"Планёрка","startIso":"2026-12-02T10:00"}`, true},
		{ActionCreateEvent, `{"title":"Планёрка","startIso":"2026-12-02T10:00","endIso":null,"durationMin":45,"participants":["Ольга"],"description":null}`, true},
		{ActionCreateEvent, `{"title":"Планёрка","startIso":"2026-12-02T10:00","participants":null}`, true},
		{ActionCreateEvent, `{"title":"Планёрка"}`, false},
		{ActionCreateEvent, `{"title":"","startIso":"2026-12-02T10:00"}`, false},
		{ActionCreateEvent, `{"title":"X","startIso":"2026-12-02T10:00","durationMin":2}`, false},
		{ActionCreateEvent, `{"title":"X","startIso":"2026-12-02T10:00","durationMin":30.5}`, false},
		{ActionCreateEvent, `{"title":"X","startIso":"2026-12-02T10:00","room":"A"}`, false},
		{ActionSchedule, `{"title":"Планёрка","participants":["Ольга"],"durationMin":30}`, true},
		{ActionSchedule, `{"title":"Планёрка","participants":["Ольга"],"durationMin":30,"withinDays":3,"earliestIso":"2026-12-03"}`, true},
		{ActionSchedule, `{"title":"Планёрка","participants":[],"durationMin":30}`, false},
		{ActionSchedule, `{"title":"Планёрка","participants":["Ольга"]}`, false},
		{ActionSchedule, `{"title":"Планёрка","participants":["Ольга"],"durationMin":30,"withinDays":40}`, false},
	}
	schemas := map[string]*tool.Schema{}
	for _, tl := range c.Tools() {
		s := tl.Spec()
		compiled, err := tool.CompileSchema(s.Name, s.InputSchema)
		if err != nil {
			t.Fatalf("schema of %s: %v", s.Name, err)
		}
		schemas[s.Name] = compiled
		switch s.Name {
		case ActionCreateEvent:
			if s.Risk != tool.RiskWriteSafe || s.Confirm != tool.ConfirmAlways || !s.Idempotent {
				t.Errorf("create_event spec %+v", s)
			}
		case ActionSchedule:
			if s.Risk != tool.RiskRead || s.Confirm != tool.ConfirmNever || s.Idempotent {
				t.Errorf("schedule_team_meeting spec %+v", s)
			}
		}
	}
	if _, err := tool.NewRegistry(c.Tools()...); err != nil {
		t.Fatalf("registry: %v", err)
	}
	for _, tt := range tests {
		err := schemas[tt.tool].Validate(tt.tool, []byte(tt.args))
		if tt.accept != (err == nil) {
			t.Errorf("%s %s: accept %v, error %v", tt.tool, tt.args, tt.accept, err)
		}
	}
}

func TestCreateEvent(t *testing.T) {
	c := newCalendar(t, nil)
	res := run(t, c, ActionCreateEvent, dmitry, "k1",
		`{"title":"Планёрка","startIso":"2026-12-02T10:00","durationMin":45,"participants":["Ольгу","me"],"description":"Итоги недели"}`)
	tooltest.WantStatus(t, res, tool.StatusOK)
	d := tooltest.Data[createdData](t, res)
	if d.Event.StartUTC != "2026-12-02T07:00:00Z" || d.Event.EndUTC != "2026-12-02T07:45:00Z" {
		t.Errorf("booked %s–%s, want 07:00–07:45 UTC (10:00 Moscow)", d.Event.StartUTC, d.Event.EndUTC)
	}
	if d.Event.When != "ср 02.12 10:00–10:45 (Europe/Moscow)" {
		t.Errorf("when %q", d.Event.When)
	}
	if strings.Join(d.Event.Participants, "; ") != "Дмитрий Иванов; Ольга Смирнова (08:00–08:45 Europe/Berlin)" {
		t.Errorf("participants %q", d.Event.Participants)
	}
	if !strings.Contains(res.Text, "Встреча «Планёрка» создана: ср 02.12 10:00–10:45 (Europe/Moscow)") {
		t.Errorf("text %q", res.Text)
	}
	evs, err := c.Backend().(*Store).Events(context.Background(), "acme")
	if err != nil || len(evs) != 1 {
		t.Fatalf("events %v, %v", evs, err)
	}
	e := evs[0]
	if e.Start.Location() != time.UTC || UTCStamp(e.Start) != "2026-12-02T07:00:00Z" || e.Timezone != "Europe/Moscow" ||
		e.Organizer != "u1" || e.Description != "Итоги недели" || len(e.Attendees) != 2 || e.Attendees[1].ID != "u3" {
		t.Errorf("stored %+v", e)
	}

	// An explicit offset is that instant, whatever the caller's zone.
	res = run(t, c, ActionCreateEvent, olga, "k2", `{"title":"Sync","startIso":"2026-12-03T15:00:00+03:00","endIso":"2026-12-03T12:30:00Z"}`)
	tooltest.WantStatus(t, res, tool.StatusOK)
	if d := tooltest.Data[createdData](t, res); d.Event.StartUTC != "2026-12-03T12:00:00Z" || d.Event.When != "Thu 03 Dec 13:00–13:30 (Europe/Berlin)" {
		t.Errorf("offset booking %+v", d.Event)
	}

	// Without end or duration the default length applies.
	res = run(t, c, ActionCreateEvent, olga, "k3", `{"title":"Default","startIso":"2026-12-04T09:00"}`)
	if d := tooltest.Data[createdData](t, res); d.Event.StartUTC != "2026-12-04T08:00:00Z" || d.Event.EndUTC != "2026-12-04T08:30:00Z" {
		t.Errorf("default length %+v", d.Event)
	}
}

// TestCreateEventOnClockChange: a 10:00 meeting on the day the clocks
// change is at 10:00 local time; a time the clocks skip is refused.
func TestCreateEventOnClockChange(t *testing.T) {
	c := newCalendar(t, nil)
	berliner := tool.Caller{TenantID: "acme", UserID: "u3", Language: "en", Timezone: "Europe/Berlin"}
	now := time.Date(2026, 3, 27, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct{ start, want string }{
		{"2026-03-28T10:00", "2026-03-28T09:00:00Z"},
		{"2026-03-29T10:00", "2026-03-29T08:00:00Z"},
		{"2026-03-30T10:00", "2026-03-30T08:00:00Z"},
	} {
		res := runAt(t, c, ActionCreateEvent, berliner, "dst-"+tt.start, `{"title":"Standup","startIso":"`+tt.start+`"}`, now)
		tooltest.WantStatus(t, res, tool.StatusOK)
		if d := tooltest.Data[createdData](t, res); d.Event.StartUTC != tt.want || !strings.Contains(d.Event.When, "10:00–10:30") {
			t.Errorf("%s: booked %s (%s), want %s", tt.start, d.Event.StartUTC, d.Event.When, tt.want)
		}
	}
	res := runAt(t, c, ActionCreateEvent, berliner, "gap", `{"title":"Standup","startIso":"2026-03-29T02:30"}`, now)
	tooltest.WantStatus(t, res, tool.StatusError)
	if res.Field != "startIso" || !strings.Contains(res.Text, "does not exist") {
		t.Errorf("skipped time: %+v", res)
	}
}

func TestCreateEventRejects(t *testing.T) {
	c := newCalendar(t, nil)
	tests := []struct {
		name, args string
		status     tool.Status
		field      string
	}{
		{"end before start", `{"title":"X","startIso":"2026-12-02T10:00","endIso":"2026-12-02T09:00"}`, tool.StatusError, "endIso"},
		{"end and duration disagree", `{"title":"X","startIso":"2026-12-02T10:00","endIso":"2026-12-02T11:00","durationMin":30}`, tool.StatusError, "endIso"},
		{"too long", `{"title":"X","startIso":"2026-12-02T10:00","endIso":"2026-12-03T10:01"}`, tool.StatusError, "endIso"},
		{"past", `{"title":"X","startIso":"2026-11-30T10:00"}`, tool.StatusError, "startIso"},
		{"far future", `{"title":"X","startIso":"2062-11-30T10:00"}`, tool.StatusError, "startIso"},
		{"not a time", `{"title":"X","startIso":"завтра в 10"}`, tool.StatusError, "startIso"},
		{"date only", `{"title":"X","startIso":"2026-12-02"}`, tool.StatusError, "startIso"},
		{"unknown member", `{"title":"X","startIso":"2026-12-02T10:00","participants":["Сергей"]}`, tool.StatusNotFound, "participants"},
		{"ambiguous member", `{"title":"X","startIso":"2026-12-02T10:00","participants":["Дмитрий"]}`, tool.StatusAmbiguous, "participants"},
		{"unknown field", `{"title":"X","startIso":"2026-12-02T10:00","room":"A"}`, tool.StatusError, ""},
		{"fractional duration", `{"title":"X","startIso":"2026-12-02T10:00","durationMin":30.5}`, tool.StatusError, "durationMin"},
	}
	for _, tt := range tests {
		res := run(t, c, ActionCreateEvent, dmitry, "", tt.args)
		if res.Status != tt.status || res.Field != tt.field || res.Text == "" {
			t.Errorf("%s: %+v, want %s on %q", tt.name, res, tt.status, tt.field)
		}
	}
	if evs, _ := c.Backend().(*Store).Events(context.Background(), "acme"); len(evs) != 0 {
		t.Errorf("rejected calls booked %v", evs)
	}
	if _, err := toolNamed(t, c, ActionCreateEvent).Call(context.Background(), tool.Call{Caller: tool.Caller{UserID: "u1"}}); err == nil {
		t.Error("a call without tenant ran")
	}
}

func TestParticipantAmbiguity(t *testing.T) {
	c := newCalendar(t, nil)
	res := run(t, c, ActionSchedule, olga, "", `{"title":"Sync","participants":["Дмитрий"],"durationMin":30}`)
	tooltest.WantStatus(t, res, tool.StatusAmbiguous)
	if res.Field != "participants" || strings.Join(res.Candidates, "|") != "Дмитрий Иванов|Дмитрий Петров" {
		t.Fatalf("ambiguous %+v", res)
	}
	// Same names are told apart by id, and the labelled candidate resolves.
	res = run(t, c, ActionSchedule, olga, "", `{"title":"Sync","participants":["Анна"],"durationMin":30}`)
	if strings.Join(res.Candidates, "|") != "Анна Соколова (u6)|Анна Соколова (u7)" {
		t.Fatalf("same-name candidates %+v", res)
	}
	res = run(t, c, ActionSchedule, olga, "", `{"title":"Sync","participants":["Анна Соколова (u7)","Дмитрия Петрова"],"durationMin":30}`)
	tooltest.WantStatus(t, res, tool.StatusAmbiguous)
	d := tooltest.Data[proposedData](t, res)
	var who []string
	for _, p := range d.Participants {
		who = append(who, p.Name+" "+p.Zone)
	}
	if res.Field != "slot" || strings.Join(who, "|") != "Ольга Смирнова Europe/Berlin|Анна Соколова Asia/Yekaterinburg|Дмитрий Петров Europe/Moscow" {
		t.Fatalf("resolved %+v %s", res, res.Data)
	}
	// Names copied with a note in parentheses still resolve.
	res = run(t, c, ActionCreateEvent, dmitry, "", `{"title":"X","startIso":"2026-12-02T10:00","participants":["Ольга Смирнова (Europe/Berlin)","Дмитрий Петров (10:00–10:30 Europe/Moscow)"]}`)
	if got := tooltest.Data[createdData](t, res); res.Status != tool.StatusOK || len(got.Event.Participants) != 3 {
		t.Fatalf("noted names: %+v", res)
	}
	res = run(t, c, ActionSchedule, olga, "", `{"title":"Sync","participants":["Marge"],"durationMin":30}`)
	tooltest.WantStatus(t, res, tool.StatusNotFound)
	if !strings.Contains(res.Text, "Ольга Смирнова") {
		t.Errorf("not found should list members: %q", res.Text)
	}
}

func TestScheduleProposesAndCreateBooks(t *testing.T) {
	c := newCalendar(t, nil)
	// Olga (Berlin) is busy 09:00–10:00 Berlin on Wednesday.
	res := run(t, c, ActionCreateEvent, olga, "busy", `{"title":"Dentist","startIso":"2026-12-02T09:00","durationMin":60}`)
	tooltest.WantStatus(t, res, tool.StatusOK)

	args := `{"title":"Планёрка","participants":["Ольга"],"durationMin":60,"earliestIso":"2026-12-02"}`
	res = run(t, c, ActionSchedule, dmitry, "", args)
	tooltest.WantStatus(t, res, tool.StatusAmbiguous)
	// Common hours: Moscow 11:00–18:00 = Berlin 09:00–16:00; Olga's 09:00
	// Berlin hour is taken, so Wednesday starts at 12:00 Moscow.
	want := []string{"ср 02.12 12:00–13:00 (Europe/Moscow)", "ср 02.12 13:00–14:00 (Europe/Moscow)", "ср 02.12 14:00–15:00 (Europe/Moscow)"}
	if res.Field != "slot" || strings.Join(res.Candidates, "|") != strings.Join(want, "|") {
		t.Fatalf("candidates %q, want %q", res.Candidates, want)
	}
	d := tooltest.Data[proposedData](t, res)
	if d.Booked || len(d.Slots) != 3 || d.Slots[0].StartUTC != "2026-12-02T09:00:00Z" || d.Slots[0].EndUTC != "2026-12-02T10:00:00Z" ||
		d.Slots[0].Label != want[0] {
		t.Fatalf("data %s", res.Data)
	}
	if !strings.Contains(res.Text, "Europe/Berlin 10:00–11:00") {
		t.Errorf("text should show Olga's local time: %q", res.Text)
	}
	for _, l := range res.Candidates {
		if len(l) > maxLabelBytes {
			t.Errorf("candidate %q too long for a button", l)
		}
	}
	if evs, _ := c.Backend().(*Store).Events(context.Background(), "acme"); len(evs) != 1 {
		t.Fatalf("scheduling booked something: %v", evs)
	}

	// The user picks the second slot; create_event takes its UTC bounds.
	pick := d.Slots[1]
	res = run(t, c, ActionCreateEvent, dmitry, "pick", `{"title":"Планёрка","startIso":"`+pick.StartUTC+`","endIso":"`+pick.EndUTC+`","participants":["Ольга"]}`)
	tooltest.WantStatus(t, res, tool.StatusOK)
	if got := tooltest.Data[createdData](t, res); got.Event.When != want[1] || len(got.Busy) != 0 {
		t.Fatalf("booked %+v", got)
	}
	// Proposed again, the booked hour is gone.
	res = run(t, c, ActionSchedule, dmitry, "", args)
	if strings.Join(res.Candidates, "|") != want[0]+"|ср 02.12 14:00–15:00 (Europe/Moscow)|ср 02.12 15:00–16:00 (Europe/Moscow)" {
		t.Fatalf("after booking: %q", res.Candidates)
	}
	// Booking over Olga's dentist goes ahead but says so.
	res = run(t, c, ActionCreateEvent, dmitry, "clash", `{"title":"Clash","startIso":"2026-12-02T11:30","durationMin":30,"participants":["Ольга"]}`)
	if got := tooltest.Data[createdData](t, res); strings.Join(got.Busy, ",") != "Ольга Смирнова" || !strings.Contains(res.Text, "заняты: Ольга Смирнова") {
		t.Fatalf("conflict not reported: %+v %q", got, res.Text)
	}
}

func TestScheduleWindowAndZones(t *testing.T) {
	c := newCalendar(t, nil)
	// Moscow and Los Angeles share no working hour.
	res := run(t, c, ActionSchedule, dmitry, "", `{"title":"Sync","participants":["John"],"durationMin":30}`)
	tooltest.WantStatus(t, res, tool.StatusNotFound)
	if res.Field != "slot" || !strings.Contains(res.Text, "09:00–18:00 Mon–Fri") {
		t.Errorf("no common hours: %+v", res)
	}
	// A member without a zone takes the tenant's (Moscow): from now
	// (10:30) plus the notice, the first slot is 11:00 today.
	res = run(t, c, ActionSchedule, dmitry, "", `{"title":"Sync","participants":["Алёна"],"durationMin":30,"withinDays":1}`)
	if len(res.Candidates) != 3 || res.Candidates[0] != "вт 01.12 11:00–11:30 (Europe/Moscow)" {
		t.Fatalf("today %+v", res)
	}
	// Friday afternoon with one day to search ends on Friday.
	res = run(t, c, ActionSchedule, dmitry, "", `{"title":"Sync","participants":["Алёна"],"durationMin":480,"earliestIso":"2026-12-04T12:00","withinDays":1}`)
	tooltest.WantStatus(t, res, tool.StatusNotFound)
	res = run(t, c, ActionSchedule, dmitry, "", `{"title":"Sync","participants":["Алёна"],"durationMin":480,"earliestIso":"2026-12-04T12:00","withinDays":4}`)
	if len(res.Candidates) == 0 || res.Candidates[0] != "пн 07.12 09:00–17:00 (Europe/Moscow)" {
		t.Fatalf("over the weekend %+v", res)
	}
	res = run(t, c, ActionSchedule, dmitry, "", `{"title":"Sync","participants":["Алёна"],"durationMin":600}`)
	if res.Status != tool.StatusError || res.Field != "durationMin" {
		t.Errorf("longer than a working day: %+v", res)
	}
}

func TestLiveContext(t *testing.T) {
	c := newCalendar(t, nil)
	for _, args := range []string{
		`{"title":"Сегодня","startIso":"2026-12-01T15:00","participants":["Ольга"]}`,
		`{"title":"Завтра","startIso":"2026-12-02T09:30"}`,
		`{"title":"Послезавтра","startIso":"2026-12-03T09:30"}`,
	} {
		tooltest.WantStatus(t, run(t, c, ActionCreateEvent, dmitry, "", args), tool.StatusOK)
	}
	secs, err := c.LiveContext(context.Background(), dmitry, testNow)
	if err != nil || len(secs) != 2 {
		t.Fatalf("context %v, %v", secs, err)
	}
	events := strings.Join(secs[0].Lines, "\n")
	if !strings.Contains(secs[0].Title, "now 2026-12-01 10:30 Europe/Moscow") ||
		!strings.Contains(events, "вт 01.12 15:00–15:30 «Сегодня»") || !strings.Contains(events, "— Ольга Смирнова") ||
		!strings.Contains(events, "ср 02.12 09:30–10:00 «Завтра»") || strings.Contains(events, "Послезавтра") {
		t.Errorf("events section %q: %s", secs[0].Title, events)
	}
	zonesText := strings.Join(secs[1].Lines, "\n")
	for _, want := range []string{
		"Europe/Moscow, now Tue 10:30 — Дмитрий Иванов (caller), Дмитрий Петров, Алёна Ким, Анна Соколова",
		"Europe/Berlin, now Tue 08:30 — Ольга Смирнова",
		"America/Los_Angeles, now Mon 23:30 — John Smith",
	} {
		if !strings.Contains(zonesText, want) {
			t.Errorf("zones section lacks %q:\n%s", want, zonesText)
		}
	}
	if !strings.Contains(secs[1].Title, "09:00–18:00 Mon–Fri") {
		t.Errorf("zones title %q", secs[1].Title)
	}
	// Another tenant sees none of it; a caller without a zone of its own
	// has its member zone.
	secs, _ = c.LiveContext(context.Background(), hank, testNow)
	if strings.Join(secs[0].Lines, "") != "(none)" || !strings.Contains(secs[0].Title, "America/New_York") ||
		strings.Join(secs[1].Lines, "") != "America/New_York, now Tue 02:30 — Hank Scorpio (caller), Homer Simpson" {
		t.Errorf("other tenant: %+v", secs)
	}
}

func TestNewValidates(t *testing.T) {
	db := sqlitetest.Open(t, sqlitetest.WAL)
	bad := []Config{
		{},
		{DB: db, SlotStep: 7 * time.Minute},
		{DB: db, SlotStep: 90 * time.Minute},
		{DB: db, WorkHours: WorkHours{Start: 10 * time.Hour, End: 9 * time.Hour}},
		{DB: db, SearchDays: 40},
	}
	for i, cfg := range bad {
		if _, err := New(cfg); err == nil {
			t.Errorf("config %d accepted", i)
		}
	}
	if _, err := New(Config{DB: db}); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{DB: db}); err != nil {
		t.Fatalf("tables are not created idempotently: %v", err)
	}
}

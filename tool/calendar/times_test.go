package calendar

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseISO(t *testing.T) {
	moscow, berlin, ny := mustZone(t, "Europe/Moscow"), mustZone(t, "Europe/Berlin"), mustZone(t, "America/New_York")
	tests := []struct {
		in        string
		loc       *time.Location
		allowDate bool
		want      string // UTC; empty when an error is expected
		errHas    string
		skipped   bool
	}{
		{in: "2026-12-02T10:00:00+03:00", loc: berlin, want: "2026-12-02T07:00:00Z"},
		{in: "2026-12-02T07:00:00Z", loc: berlin, want: "2026-12-02T07:00:00Z"},
		{in: "2026-12-02T07:00Z", loc: berlin, want: "2026-12-02T07:00:00Z"},
		{in: "2026-12-02T10:00:00.123+03:00", loc: berlin, want: "2026-12-02T07:00:00Z"},
		{in: "2026-12-02T10:00:00+0300", loc: berlin, want: "2026-12-02T07:00:00Z"},
		{in: "2026-12-02 10:00+03:00", loc: berlin, want: "2026-12-02T07:00:00Z"},
		{in: " 2026-12-02T10:00 ", loc: moscow, want: "2026-12-02T07:00:00Z"},
		{in: "2026-12-02T10:00:30", loc: moscow, want: "2026-12-02T07:00:30Z"},
		{in: "2026-12-02 10:00", loc: berlin, want: "2026-12-02T09:00:00Z"},
		{in: "2026-07-02T10:00", loc: berlin, want: "2026-07-02T08:00:00Z"},
		{in: "2026-12-02T10:00[America/New_York]", loc: moscow, want: "2026-12-02T15:00:00Z"},
		{in: "2026-12-02T10:00-05:00[America/New_York]", loc: moscow, want: "2026-12-02T15:00:00Z"},
		{in: "2026-12-02T10:00+03:00[America/New_York]", loc: moscow, errHas: "disagrees"},
		{in: "2026-12-02T10:00[Mars/Olympus]", loc: moscow, errHas: "unknown time zone"},
		// Days the clocks change: a wall clock is that wall clock.
		{in: "2026-03-29T10:00", loc: berlin, want: "2026-03-29T08:00:00Z"},
		{in: "2026-03-28T10:00", loc: berlin, want: "2026-03-28T09:00:00Z"},
		{in: "2026-03-08T10:00", loc: ny, want: "2026-03-08T14:00:00Z"},
		{in: "2026-03-07T10:00", loc: ny, want: "2026-03-07T15:00:00Z"},
		{in: "2026-11-01T10:00", loc: ny, want: "2026-11-01T15:00:00Z"},
		// Skipped and repeated wall clocks.
		{in: "2026-03-29T02:30", loc: berlin, skipped: true},
		{in: "2026-03-08T02:15", loc: ny, skipped: true},
		{in: "2026-10-25T02:30", loc: berlin, want: "2026-10-25T00:30:00Z"}, // first occurrence, CEST
		{in: "2026-11-01T01:30", loc: ny, want: "2026-11-01T05:30:00Z"},     // first occurrence, EDT
		// Dates.
		{in: "2026-12-02", loc: moscow, allowDate: true, want: "2026-12-01T21:00:00Z"},
		{in: "2026-12-02", loc: moscow, errHas: "without a time"},
		{in: "2026-09-06", loc: mustZone(t, "America/Santiago"), allowDate: true, want: "2026-09-06T04:00:00Z"}, // midnight skipped: 01:00 -03
		// Not times.
		{in: "завтра в 10", loc: moscow, errHas: "not an ISO 8601 time"},
		{in: "2026-13-02T10:00", loc: moscow, errHas: "not an ISO 8601 time"},
		{in: "", loc: moscow, errHas: "not an ISO 8601 time"},
	}
	for _, tt := range tests {
		got, _, err := parseISO(tt.in, tt.loc, tt.allowDate)
		switch {
		case tt.skipped:
			if !errors.Is(err, errSkipped) {
				t.Errorf("parseISO(%q, %s) = %v, %v; want a skipped-time error", tt.in, tt.loc, got, err)
			}
		case tt.errHas != "":
			if err == nil || !strings.Contains(err.Error(), tt.errHas) {
				t.Errorf("parseISO(%q, %s) = %v, %v; want an error containing %q", tt.in, tt.loc, got, err, tt.errHas)
			}
		case err != nil:
			t.Errorf("parseISO(%q, %s): %v", tt.in, tt.loc, err)
		case UTCStamp(got) != tt.want:
			t.Errorf("parseISO(%q, %s) = %s, want %s", tt.in, tt.loc, UTCStamp(got), tt.want)
		}
	}
}

func TestFormatting(t *testing.T) {
	moscow, berlin := mustZone(t, "Europe/Moscow"), mustZone(t, "Europe/Berlin")
	now := time.Date(2026, 12, 1, 7, 30, 0, 0, time.UTC)
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	iv := Interval{at("2026-12-02T07:00:00Z"), at("2026-12-02T07:30:00Z")}
	tests := []struct {
		name, got, want string
	}{
		{"label ru", slotLabel(iv, moscow, "ru", now), "ср 02.12 10:00–10:30 (Europe/Moscow)"},
		{"label en", slotLabel(iv, berlin, "en-GB", now), "Wed 02 Dec 08:00–08:30 (Europe/Berlin)"},
		{"label next year", slotLabel(Interval{at("2027-01-12T07:00:00Z"), at("2027-01-12T08:00:00Z")}, moscow, "ru", now),
			"вт 12.01.2027 10:00–11:00 (Europe/Moscow)"},
		{"label long zone", slotLabel(iv, mustZone(t, "America/Argentina/ComodRivadavia"), "ru", now),
			"ср 02.12 04:00–04:30 (America/Argentina/ComodRivadavia)"},
		{"span across midnight", formatSpan(at("2026-12-04T20:30:00Z"), at("2026-12-04T21:30:00Z"), moscow, "ru", now),
			"пт 04.12 23:30 – сб 05.12 00:30"},
		{"span on spring forward day", formatSpan(at("2026-03-29T08:00:00Z"), at("2026-03-29T08:30:00Z"), berlin, "en", now),
			"Sun 29 Mar 10:00–10:30"},
		{"clock span same day", clockSpan(iv, berlin, iv.Start, moscow, "ru", now), "08:00–08:30"},
		{"clock span other day", clockSpan(Interval{at("2026-12-02T06:00:00Z"), at("2026-12-02T06:30:00Z")},
			mustZone(t, "America/Los_Angeles"), at("2026-12-02T06:00:00Z"), moscow, "ru", now), "вт 01.12 22:00–22:30"},
		{"work hours default", mustHours(t, WorkHours{}).String(), "09:00–18:00 Mon–Fri"},
		{"work hours odd days", mustHours(t, WorkHours{Start: 8*time.Hour + 30*time.Minute, End: 24 * time.Hour,
			Days: []time.Weekday{time.Sunday, time.Wednesday, time.Monday}}).String(), "08:30–24:00 Mon, Wed, Sun"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, tt.got, tt.want)
		}
	}
	for _, name := range []string{"America/Argentina/ComodRivadavia", "America/North_Dakota/New_Salem", "Europe/Moscow"} {
		l := slotLabel(Interval{at("2027-12-29T07:00:00Z"), at("2027-12-29T07:30:00Z")}, mustZone(t, name), "ru", now)
		if len(l) > maxLabelBytes {
			t.Errorf("label %q is %d bytes, longer than a button allows", l, len(l))
		}
	}
}

func mustHours(t *testing.T, h WorkHours) WorkHours {
	t.Helper()
	n, err := h.normalized()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestWorkHoursValidation(t *testing.T) {
	bad := []WorkHours{
		{Start: 18 * time.Hour, End: 9 * time.Hour},
		{Start: 9 * time.Hour, End: 25 * time.Hour},
		{Start: 9*time.Hour + 30*time.Second, End: 18 * time.Hour},
		{Start: 9 * time.Hour, End: 18 * time.Hour, Days: []time.Weekday{7}},
	}
	for _, h := range bad {
		if _, err := h.normalized(); err == nil {
			t.Errorf("working hours %+v accepted", h)
		}
	}
}

func TestRandomEventIDs(t *testing.T) {
	r, err := NewEventID()
	if err != nil || len(r) != 16 || strings.Trim(r, "0123456789abcdefghijklmnopqrstuv") != "" {
		t.Fatalf("random id %q, %v", r, err)
	}
}

func TestStartOfDayNormalizesDate(t *testing.T) {
	loc, _ := time.LoadLocation("Europe/Moscow")
	got := StartOfDay(2026, time.November, 30+7, loc)
	want := time.Date(2026, time.December, 7, 0, 0, 0, 0, loc)
	if !got.Equal(want) {
		t.Errorf("StartOfDay(2026-11-37) = %v, want %v", got, want)
	}
}

package calendar

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// zones caches loaded time zones: loading one reads the zone database.
var zones sync.Map

// LoadZone loads an IANA zone by name; "" and unknown names are errors.
// "Local" is refused so that results never depend on the host.
func LoadZone(name string) (*time.Location, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return nil, errors.New("no time zone")
	}
	if v, ok := zones.Load(name); ok {
		return v.(*time.Location), nil
	}
	if strings.EqualFold(name, "local") {
		return nil, fmt.Errorf("time zone %q is not a zone name", name)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("unknown time zone %q", name)
	}
	zones.Store(name, loc)
	return loc, nil
}

// errSkipped marks a local time that a zone skips when its clocks jump
// forward.
var errSkipped = errors.New("local time does not exist")

// wallClock resolves a local date and time in loc. A time the clocks pass
// twice (when they fall back) is its first occurrence; a time they skip
// (when they jump forward) is an error wrapping errSkipped. time.Date alone
// leaves both cases unspecified.
func wallClock(y int, mo time.Month, d, h, mi, s int, loc *time.Location) (time.Time, error) {
	naive := time.Date(y, mo, d, h, mi, s, 0, time.UTC)
	var best time.Time
	seen := map[int]bool{}
	// Zone offsets in force a day either side cover every transition
	// that can affect this wall clock: transitions are weeks apart.
	for _, probe := range []time.Duration{-36 * time.Hour, 0, 36 * time.Hour} {
		_, off := naive.Add(probe).In(loc).Zone()
		if seen[off] {
			continue
		}
		seen[off] = true
		u := naive.Add(-time.Duration(off) * time.Second)
		l := u.In(loc)
		if l.Year() == y && l.Month() == mo && l.Day() == d && l.Hour() == h && l.Minute() == mi && l.Second() == s {
			if best.IsZero() || u.Before(best) {
				best = u
			}
		}
	}
	if best.IsZero() {
		return time.Time{}, fmt.Errorf("%04d-%02d-%02d %02d:%02d in %s: %w (the clocks jump forward)", y, mo, d, h, mi, loc, errSkipped)
	}
	return best.UTC(), nil
}

// Layouts accepted by parseISO.
var (
	offsetLayouts = []string{
		time.RFC3339,
		"2006-01-02T15:04Z07:00",
		"2006-01-02T15:04:05Z0700",
		"2006-01-02T15:04Z0700",
		"2006-01-02 15:04:05Z07:00",
		"2006-01-02 15:04Z07:00",
	}
	localLayouts = []string{
		"2006-01-02T15:04:05",
		"2006-01-02T15:04",
		"2006-01-02 15:04:05",
		"2006-01-02 15:04",
	}
)

// parseISO reads an ISO 8601 time:
//
//   - with a UTC offset or Z ("2026-12-02T10:00:00+03:00", "…T07:00Z"): that
//     instant;
//   - with a zone in brackets ("2026-12-02T10:00[Europe/Berlin]", with or
//     without a matching offset before it): that wall clock in that zone;
//   - without either ("2026-12-02T10:00", "2026-12-02 10:00:05"): that wall
//     clock in loc;
//   - a date alone ("2026-12-02"), only when allowDate: local midnight of
//     that day in loc, or the first instant of the day when midnight is
//     skipped.
//
// Sub-second digits are dropped. Wall clocks resolve as wallClock does.
func parseISO(s string, loc *time.Location, allowDate bool) (t time.Time, dateOnly bool, err error) {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '['); i >= 0 && strings.HasSuffix(s, "]") {
		zl, zerr := LoadZone(s[i+1 : len(s)-1])
		if zerr != nil {
			return time.Time{}, false, zerr
		}
		body := s[:i]
		for _, layout := range offsetLayouts {
			if at, perr := time.Parse(layout, body); perr == nil {
				_, want := at.Zone()
				if _, got := at.In(zl).Zone(); got != want {
					return time.Time{}, false, fmt.Errorf("offset of %q disagrees with %s", s, zl)
				}
				return at.Truncate(time.Second).UTC(), false, nil
			}
		}
		loc, s = zl, body
	} else {
		for _, layout := range offsetLayouts {
			if at, perr := time.Parse(layout, s); perr == nil {
				return at.Truncate(time.Second).UTC(), false, nil
			}
		}
	}
	for _, layout := range localLayouts {
		if w, perr := time.Parse(layout, s); perr == nil {
			at, werr := wallClock(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute(), w.Second(), loc)
			return at, false, werr
		}
	}
	if d, perr := time.Parse(time.DateOnly, s); perr == nil {
		if !allowDate {
			return time.Time{}, true, fmt.Errorf("%q is a date without a time", s)
		}
		return StartOfDay(d.Year(), d.Month(), d.Day(), loc), true, nil
	}
	return time.Time{}, false, fmt.Errorf("%q is not an ISO 8601 time such as 2026-12-02T10:00 or 2026-12-02T10:00:00+03:00", s)
}

// StartOfDay is the first instant of a local date in loc (midnight, or the
// end of a jump that skips it).
// The date may be out of range (January 32nd) and is normalized first,
// as time.Date would.
func StartOfDay(y int, mo time.Month, d int, loc *time.Location) time.Time {
	y, mo, d = time.Date(y, mo, d, 12, 0, 0, 0, time.UTC).Date()
	if t, err := wallClock(y, mo, d, 0, 0, 0, loc); err == nil {
		return t
	}
	// Midnight is skipped: the day starts where the jump ends, found by
	// scanning forward from the last instant of the previous day.
	t := time.Date(y, mo, d, 0, 0, 0, 0, loc).Add(-2 * time.Hour)
	for t.In(loc).Day() != d {
		t = t.Add(time.Minute)
	}
	return t.UTC()
}

// Weekday abbreviations, Sunday first as time.Weekday counts.
var (
	ruWeekdays = [7]string{"вс", "пн", "вт", "ср", "чт", "пт", "сб"}
	enWeekdays = [7]string{"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"}
)

func isEnglish(lang string) bool { return strings.HasPrefix(strings.ToLower(lang), "en") }

// dayLabel renders a local date: "вт 02.12" or "Tue 02 Dec", with the year
// when it is not the current one.
func dayLabel(l time.Time, lang string, withYear bool) string {
	if isEnglish(lang) {
		s := enWeekdays[l.Weekday()] + " " + l.Format("02 Jan")
		if withYear {
			s += " " + l.Format("2006")
		}
		return s
	}
	s := ruWeekdays[l.Weekday()] + " " + l.Format("02.01")
	if withYear {
		s += "." + l.Format("2006")
	}
	return s
}

// formatSpan renders [start, end) in loc without the zone: "вт 02.12
// 10:00–10:30", or "пт 27.03 23:30 – сб 28.03 00:30" across midnight. The
// year is shown when it differs from now's in loc.
func formatSpan(start, end time.Time, loc *time.Location, lang string, now time.Time) string {
	ls, le := start.In(loc), end.In(loc)
	year := now.In(loc).Year()
	s := dayLabel(ls, lang, ls.Year() != year) + " " + ls.Format("15:04")
	if ls.Year() == le.Year() && ls.YearDay() == le.YearDay() {
		return s + "–" + le.Format("15:04")
	}
	return s + " – " + dayLabel(le, lang, le.Year() != year) + " " + le.Format("15:04")
}

// maxLabelBytes bounds a slot label so the engine can show it as a button.
const maxLabelBytes = 64

// slotLabel renders a proposed slot with its zone: "вт 02.12 10:00–10:30
// (Europe/Moscow)". A label longer than a button allows names the zone by
// its offset instead ("UTC+03:00").
func slotLabel(iv Interval, loc *time.Location, lang string, now time.Time) string {
	span := formatSpan(iv.Start, iv.End, loc, lang, now)
	label := span + " (" + loc.String() + ")"
	if len(label) <= maxLabelBytes {
		return label
	}
	return span + " (UTC" + iv.Start.In(loc).Format("-07:00") + ")"
}

// clockSpan renders [start, end) as local clock times in loc, with the
// date when it differs from ref's in refLoc: "08:00–08:30" or "пн 01.12
// 23:00–23:30".
func clockSpan(iv Interval, loc *time.Location, ref time.Time, refLoc *time.Location, lang string, now time.Time) string {
	ls, rs := iv.Start.In(loc), ref.In(refLoc)
	if ls.YearDay() == rs.YearDay() && ls.Year() == rs.Year() && iv.End.In(loc).YearDay() == ls.YearDay() {
		return ls.Format("15:04") + "–" + iv.End.In(loc).Format("15:04")
	}
	return formatSpan(iv.Start, iv.End, loc, lang, now)
}

// UTCStamp renders an instant as RFC 3339 in UTC, seconds precision.
func UTCStamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

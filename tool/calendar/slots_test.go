package calendar

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

func mustZone(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := LoadZone(name)
	if err != nil {
		t.Fatalf("zone %s: %v", name, err)
	}
	return loc
}

// Zones for random calendars: daylight-saving zones of both hemispheres,
// half- and quarter-hour offsets, a zone whose clocks shift by 30 minutes
// (Lord Howe) and one that changes at midnight (Santiago).
var propZones = []string{
	"Europe/Berlin", "America/New_York", "Europe/Moscow", "Asia/Kolkata", "Asia/Kathmandu",
	"Australia/Lord_Howe", "America/Los_Angeles", "Australia/Sydney", "UTC", "America/Santiago",
	"Pacific/Auckland", "Asia/Tokyo", "Europe/London", "America/St_Johns",
}

// Days around which random windows are placed: clock changes of 2026 in
// the zones above, and ordinary days.
var propAnchors = []time.Time{
	time.Date(2026, 3, 8, 12, 0, 0, 0, time.UTC),   // United States spring forward
	time.Date(2026, 3, 29, 12, 0, 0, 0, time.UTC),  // European Union spring forward
	time.Date(2026, 4, 5, 12, 0, 0, 0, time.UTC),   // Sydney, Lord Howe, Auckland, Santiago fall back
	time.Date(2026, 9, 6, 12, 0, 0, 0, time.UTC),   // Santiago spring forward (at midnight)
	time.Date(2026, 9, 27, 12, 0, 0, 0, time.UTC),  // Auckland spring forward
	time.Date(2026, 10, 4, 12, 0, 0, 0, time.UTC),  // Sydney, Lord Howe spring forward
	time.Date(2026, 10, 25, 12, 0, 0, 0, time.UTC), // European Union fall back
	time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC),  // United States fall back
	time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC),  // nothing changes
}

// Working hours for random calendars, some covering the night hours in
// which clocks change.
var propHours = []WorkHours{
	{Start: 9 * time.Hour, End: 18 * time.Hour},
	{Start: 8 * time.Hour, End: 20 * time.Hour, Days: []time.Weekday{0, 1, 2, 3, 4, 5, 6}},
	{Start: 0, End: 24 * time.Hour, Days: []time.Weekday{0, 1, 2, 3, 4, 5, 6}},
	{Start: 90 * time.Minute, End: 4 * time.Hour, Days: []time.Weekday{0, 1, 2, 3, 4, 5, 6}},
	{Start: 150 * time.Minute, End: 6 * time.Hour, Days: []time.Weekday{0, 6}},
	{Start: 10*time.Hour + 30*time.Minute, End: 16*time.Hour + 15*time.Minute, Days: []time.Weekday{1, 2, 3, 4}},
	{Start: 20 * time.Hour, End: 24 * time.Hour, Days: []time.Weekday{0, 1, 5, 6}},
}

type propCase struct {
	q     slotQuery
	names []string
	busy  [][]Interval // per participant
}

func (pc propCase) String() string {
	return fmt.Sprintf("zones %v, hours %v, window %s–%s, duration %v, step %v, max %d",
		pc.names, pc.q.hours, pc.q.window.Start.Format(time.RFC3339), pc.q.window.End.Format(time.RFC3339),
		pc.q.duration, pc.q.step, pc.q.max)
}

func randomCase(t testing.TB, r *rand.Rand) propCase {
	var pc propCase
	// Mostly few participants, often in the same zone or a neighbouring
	// one, so that many cases have common working time to search.
	n := 1 + r.IntN(3)
	if r.IntN(5) == 0 {
		n = 4 + r.IntN(2)
	}
	home := r.IntN(len(propZones))
	for range n {
		name := propZones[r.IntN(len(propZones))]
		if r.IntN(2) == 0 {
			name = propZones[(home+r.IntN(2))%len(propZones)]
		}
		pc.names = append(pc.names, name)
		pc.q.zones = append(pc.q.zones, mustZone(t, name))
	}
	h, err := propHours[r.IntN(len(propHours))].normalized()
	if err != nil {
		t.Fatal(err)
	}
	anchor := propAnchors[r.IntN(len(propAnchors))]
	from := anchor.Add(time.Duration(r.IntN(6*24*60)-4*24*60) * time.Minute).Add(time.Duration(r.IntN(60)) * time.Second)
	to := from.Add(time.Duration(6*60+r.IntN(3*24*60)) * time.Minute)
	steps := []time.Duration{5, 10, 15, 20, 30, 60}
	durs := []time.Duration{15, 25, 30, 45, 60, 90, 120}
	pc.q.window = Interval{from, to}
	pc.q.hours = h
	pc.q.grid = pc.q.zones[0]
	pc.q.step = steps[r.IntN(len(steps))] * time.Minute
	pc.q.duration = durs[r.IntN(len(durs))] * time.Minute
	pc.q.max = 3
	if r.IntN(4) == 0 {
		pc.q.max = 1 + r.IntN(6)
	}
	pc.busy = make([][]Interval, n)
	for i := range n {
		for range r.IntN(10) {
			s := from.Add(time.Duration(r.IntN(7*24*60)-24*60) * time.Minute)
			iv := Interval{s, s.Add(time.Duration(5+r.IntN(4*60)) * time.Minute)}
			pc.busy[i] = append(pc.busy[i], iv)
			pc.q.busy = append(pc.q.busy, iv)
		}
	}
	return pc
}

// clockMinutes is the local clock of l in minutes after midnight.
func clockMinutes(l time.Time) time.Duration {
	return time.Duration(l.Hour())*time.Hour + time.Duration(l.Minute())*time.Minute
}

// working is the oracle's definition of working time: the local clock of
// instant m in loc is within the hours on a working weekday.
func working(m time.Time, loc *time.Location, h WorkHours) bool {
	l := m.In(loc)
	c := clockMinutes(l)
	return h.works(l.Weekday()) && c >= h.Start && c < h.End
}

// bruteForce finds the expected slots minute by minute from the
// definitions alone: a minute-resolution availability map of the window,
// then the greedy earliest choice of grid-aligned starts.
func bruteForce(pc propCase) []Interval {
	q := pc.q
	first := q.window.Start.Truncate(time.Minute)
	if first.Before(q.window.Start) {
		first = first.Add(time.Minute)
	}
	n := int(q.window.End.Sub(first) / time.Minute)
	if n <= 0 {
		return nil
	}
	// free[i] reports whether minute first+i is free for everyone.
	free := make([]bool, n)
	for i := range free {
		free[i] = true
	}
	for _, z := range q.zones {
		for i := range n {
			if free[i] && !working(first.Add(time.Duration(i)*time.Minute), z, q.hours) {
				free[i] = false
			}
		}
	}
	for _, b := range q.busy {
		for i := max(0, int(b.Start.Sub(first)/time.Minute)-1); i < n; i++ {
			m := first.Add(time.Duration(i) * time.Minute)
			if !m.Before(b.End) {
				break
			}
			// Minute m is the instants [m, m+1min); busy time touching any
			// of them takes it.
			if b.Start.Before(m.Add(time.Minute)) {
				free[i] = false
			}
		}
	}
	// prefix[i] counts free minutes before i.
	prefix := make([]int, n+1)
	for i, f := range free {
		prefix[i+1] = prefix[i]
		if f {
			prefix[i+1]++
		}
	}
	d := int(q.duration / time.Minute)
	var out []Interval
	for i := 0; i+d <= n && len(out) < q.max; i++ {
		s := first.Add(time.Duration(i) * time.Minute)
		l := s.In(q.grid)
		if (clockMinutes(l))%q.step != 0 {
			continue
		}
		if prefix[i+d]-prefix[i] == d {
			out = append(out, Interval{s, s.Add(q.duration)})
			i += d - 1
		}
	}
	return out
}

// TestSlotsProperties runs the slot search over random calendars and
// checks every proposal against the definitions: inside the window, on the
// grid, inside working hours in every participant's zone at every minute,
// clear of every participant's busy time, sorted, distinct and at most the
// number asked — and equal to what a minute-by-minute search finds.
func TestSlotsProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(20261201, 42))
	const cases = 300
	found, withSlots := 0, 0
	for i := range cases {
		pc := randomCase(t, r)
		got := findSlots(pc.q)
		found += len(got)
		if len(got) > 0 {
			withSlots++
		}
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("case %d (%s): %s\nslots: %v", i, pc, fmt.Sprintf(format, args...), got)
		}
		if len(got) > pc.q.max {
			fail("%d slots, more than %d", len(got), pc.q.max)
		}
		for k, s := range got {
			if s.Duration() != pc.q.duration {
				fail("slot %d lasts %v", k, s.Duration())
			}
			if s.Start.Before(pc.q.window.Start) || s.End.After(pc.q.window.End) {
				fail("slot %d outside the window", k)
			}
			if k > 0 && s.Start.Before(got[k-1].End) {
				fail("slot %d starts before slot %d ends", k, k-1)
			}
			if !onGrid(s.Start, pc.q.grid, pc.q.step) {
				fail("slot %d starts off the %v grid of %s: %s", k, pc.q.step, pc.q.grid, s.Start.In(pc.q.grid))
			}
			for p, busy := range pc.busy {
				for _, b := range busy {
					if s.Overlaps(b) {
						fail("slot %d overlaps busy %v of participant %d", k, b, p)
					}
				}
			}
			for m := s.Start; m.Before(s.End); m = m.Add(time.Minute) {
				for p, z := range pc.q.zones {
					if !working(m, z, pc.q.hours) {
						fail("slot %d minute %s is outside working hours of participant %d (%s: %s)",
							k, m.Format(time.RFC3339), p, z, m.In(z).Format("Mon 15:04 -07:00"))
					}
				}
			}
		}
		want := bruteForce(pc)
		if len(want) != len(got) {
			fail("brute force finds %d slots: %v", len(want), want)
		}
		for k := range want {
			if !want[k].Start.Equal(got[k].Start) {
				fail("slot %d: brute force finds %v", k, want[k])
			}
		}
	}
	t.Logf("%d slots in %d cases, %d cases with any", found, cases, withSlots)
	if withSlots < cases/3 {
		t.Fatalf("only %d of %d cases have slots: the generator is too strict to test much", withSlots, cases)
	}
}

// TestIntervalSetOps checks normalize, intersect and subtract against a
// minute bitmap over random sets.
func TestIntervalSetOps(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const span = 300
	random := func() ([]Interval, [span]bool) {
		var ivs []Interval
		var bits [span]bool
		for range r.IntN(8) {
			s := r.IntN(span)
			e := s + r.IntN(60)
			if e > span {
				e = span
			}
			ivs = append(ivs, Interval{base.Add(time.Duration(s) * time.Minute), base.Add(time.Duration(e) * time.Minute)})
			for m := s; m < e; m++ {
				bits[m] = true
			}
		}
		return ivs, bits
	}
	check := func(name string, got []Interval, want [span]bool) {
		t.Helper()
		var bits [span]bool
		for i, iv := range got {
			if !iv.Start.Before(iv.End) || (i > 0 && !got[i-1].End.Before(iv.Start)) {
				t.Fatalf("%s: not normalized: %v", name, got)
			}
			for m := iv.Start; m.Before(iv.End); m = m.Add(time.Minute) {
				bits[int(m.Sub(base)/time.Minute)] = true
			}
		}
		if bits != want {
			t.Fatalf("%s: wrong set %v", name, got)
		}
	}
	for range 500 {
		a, abits := random()
		b, bbits := random()
		na, nb := normalize(a), normalize(b)
		check("normalize", na, abits)
		var and, diff [span]bool
		for m := range span {
			and[m] = abits[m] && bbits[m]
			diff[m] = abits[m] && !bbits[m]
		}
		check("intersect", intersect(na, nb), and)
		check("subtract", subtract(na, nb), diff)
	}
}

// TestWorkingHoursAcrossDST pins the working day to local clocks on the
// days clocks change.
func TestWorkingHoursAcrossDST(t *testing.T) {
	berlin, ny := mustZone(t, "Europe/Berlin"), mustZone(t, "America/New_York")
	all := WorkHours{Start: 9 * time.Hour, End: 18 * time.Hour, Days: []time.Weekday{0, 1, 2, 3, 4, 5, 6}}
	tests := []struct {
		name       string
		loc        *time.Location
		day        time.Time // any instant of the local day, UTC
		start, end string    // expected UTC bounds
	}{
		{"Berlin Saturday before spring forward", berlin, time.Date(2026, 3, 28, 12, 0, 0, 0, time.UTC), "2026-03-28T08:00:00Z", "2026-03-28T17:00:00Z"},
		{"Berlin spring forward day", berlin, time.Date(2026, 3, 29, 12, 0, 0, 0, time.UTC), "2026-03-29T07:00:00Z", "2026-03-29T16:00:00Z"},
		{"Berlin fall back day", berlin, time.Date(2026, 10, 25, 12, 0, 0, 0, time.UTC), "2026-10-25T08:00:00Z", "2026-10-25T17:00:00Z"},
		{"New York spring forward day", ny, time.Date(2026, 3, 8, 16, 0, 0, 0, time.UTC), "2026-03-08T13:00:00Z", "2026-03-08T22:00:00Z"},
		{"New York day before spring forward", ny, time.Date(2026, 3, 7, 16, 0, 0, 0, time.UTC), "2026-03-07T14:00:00Z", "2026-03-07T23:00:00Z"},
		{"New York fall back day", ny, time.Date(2026, 11, 1, 16, 0, 0, 0, time.UTC), "2026-11-01T14:00:00Z", "2026-11-01T23:00:00Z"},
	}
	for _, tt := range tests {
		l := tt.day.In(tt.loc)
		from := time.Date(l.Year(), l.Month(), l.Day(), 0, 0, 0, 0, tt.loc)
		got := workingIntervals(tt.loc, all, from, from.Add(20*time.Hour))
		if len(got) != 1 || UTCStamp(got[0].Start) != tt.start || UTCStamp(got[0].End) != tt.end {
			t.Errorf("%s: %v, want %s–%s", tt.name, got, tt.start, tt.end)
		}
	}
}

// TestSlotsBerlinNewYork follows the weeks in March when the United States
// already keeps summer time and Europe not yet: the common afternoon grows
// by an hour, and shrinks back when Europe changes too.
func TestSlotsBerlinNewYork(t *testing.T) {
	berlin, ny := mustZone(t, "Europe/Berlin"), mustZone(t, "America/New_York")
	h, _ := WorkHours{}.normalized()
	first := func(day time.Time) string {
		slots := findSlots(slotQuery{
			window: Interval{day, day.Add(24 * time.Hour)}, duration: time.Hour, step: 30 * time.Minute,
			grid: berlin, hours: h, zones: []*time.Location{berlin, ny}, max: 3,
		})
		if len(slots) == 0 {
			return "none"
		}
		return slots[0].Start.In(berlin).Format("Mon 02.01 15:04 MST")
	}
	tests := []struct {
		day  time.Time
		want string
	}{
		{time.Date(2026, 3, 3, 0, 0, 0, 0, berlin), "Tue 03.03 15:00 CET"},   // both on winter time: 6 hours apart
		{time.Date(2026, 3, 10, 0, 0, 0, 0, berlin), "Tue 10.03 14:00 CET"},  // New York on summer time: 5 hours
		{time.Date(2026, 3, 27, 0, 0, 0, 0, berlin), "Fri 27.03 14:00 CET"},  // last working day of the gap
		{time.Date(2026, 3, 30, 0, 0, 0, 0, berlin), "Mon 30.03 15:00 CEST"}, // both on summer time again
		{time.Date(2026, 10, 27, 0, 0, 0, 0, berlin), "Tue 27.10 14:00 CET"}, // Europe back on winter time first
		{time.Date(2026, 11, 3, 0, 0, 0, 0, berlin), "Tue 03.11 15:00 CET"},
		{time.Date(2026, 3, 28, 0, 0, 0, 0, berlin), "none"}, // Saturday
	}
	for _, tt := range tests {
		if got := first(tt.day); got != tt.want {
			t.Errorf("first slot from %s: %s, want %s", tt.day.Format("2006-01-02"), got, tt.want)
		}
	}
}

// TestSlotsOnClockChangeDay: with weekends worked, a 10:00 slot on the
// day Berlin springs forward is 10:00 local, an hour earlier in UTC than
// the day before.
func TestSlotsOnClockChangeDay(t *testing.T) {
	berlin := mustZone(t, "Europe/Berlin")
	h, _ := WorkHours{Start: 10 * time.Hour, End: 11 * time.Hour, Days: []time.Weekday{0, 6}}.normalized()
	from := time.Date(2026, 3, 28, 0, 0, 0, 0, berlin)
	got := findSlots(slotQuery{window: Interval{from, from.Add(72 * time.Hour)}, duration: time.Hour, step: time.Hour,
		grid: berlin, hours: h, zones: []*time.Location{berlin}, max: 3})
	want := []string{"2026-03-28T09:00:00Z", "2026-03-29T08:00:00Z"}
	if len(got) != len(want) {
		t.Fatalf("slots %v, want starts %v", got, want)
	}
	for i := range want {
		if UTCStamp(got[i].Start) != want[i] || got[i].Start.In(berlin).Hour() != 10 {
			t.Errorf("slot %d: %s (%s), want %s at 10:00 local", i, UTCStamp(got[i].Start), got[i].Start.In(berlin), want[i])
		}
	}
}

func TestAlignUp(t *testing.T) {
	kathmandu, berlin := mustZone(t, "Asia/Kathmandu"), mustZone(t, "Europe/Berlin")
	tests := []struct {
		at   time.Time
		loc  *time.Location
		step time.Duration
		want string
	}{
		{time.Date(2026, 5, 4, 3, 10, 0, 0, time.UTC), kathmandu, 30 * time.Minute, "2026-05-04T03:15:00Z"}, // 08:55 → 09:00 local
		{time.Date(2026, 5, 4, 3, 15, 0, 0, time.UTC), kathmandu, 30 * time.Minute, "2026-05-04T03:15:00Z"},
		{time.Date(2026, 5, 4, 3, 15, 1, 0, time.UTC), kathmandu, 30 * time.Minute, "2026-05-04T03:45:00Z"},
		{time.Date(2026, 3, 29, 0, 50, 0, 0, time.UTC), berlin, time.Hour, "2026-03-29T01:00:00Z"},  // 01:50 CET → 03:00 CEST
		{time.Date(2026, 10, 25, 0, 40, 0, 0, time.UTC), berlin, time.Hour, "2026-10-25T01:00:00Z"}, // 02:40 CEST → 02:00 CET
	}
	for _, tt := range tests {
		if got := UTCStamp(alignUp(tt.at, tt.loc, tt.step)); got != tt.want {
			t.Errorf("alignUp(%s, %s, %v) = %s, want %s", UTCStamp(tt.at), tt.loc, tt.step, got, tt.want)
		}
	}
}

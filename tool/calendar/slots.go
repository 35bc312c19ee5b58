package calendar

import (
	"sort"
	"time"
)

// The slot search works on sets of instants kept as sorted, disjoint,
// non-touching half-open intervals ("normalized"). Free time is the search
// window, intersected with the working hours of every participant's zone,
// minus everyone's busy time; slots are then taken greedily, earliest
// first, on a grid of the caller's local clock.

// normalize returns ivs sorted with empty intervals dropped and
// overlapping or touching ones merged. It does not modify ivs.
func normalize(ivs []Interval) []Interval {
	out := make([]Interval, 0, len(ivs))
	for _, iv := range ivs {
		if iv.Start.Before(iv.End) {
			out = append(out, iv)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Start.Before(out[j].Start) })
	merged := out[:0]
	for _, iv := range out {
		if n := len(merged); n > 0 && !iv.Start.After(merged[n-1].End) {
			if iv.End.After(merged[n-1].End) {
				merged[n-1].End = iv.End
			}
			continue
		}
		merged = append(merged, iv)
	}
	return merged
}

// intersect returns the instants in both a and b, which must be normalized.
func intersect(a, b []Interval) []Interval {
	var out []Interval
	for i, j := 0, 0; i < len(a) && j < len(b); {
		s, e := laterOf(a[i].Start, b[j].Start), earlierOf(a[i].End, b[j].End)
		if s.Before(e) {
			out = append(out, Interval{s, e})
		}
		if a[i].End.Before(b[j].End) {
			i++
		} else {
			j++
		}
	}
	return normalize(out)
}

// subtract returns the instants of a not in b; both must be normalized.
func subtract(a, b []Interval) []Interval {
	var out []Interval
	j := 0
	for _, iv := range a {
		cur := iv.Start
		for j < len(b) && !b[j].End.After(cur) {
			j++
		}
		for k := j; k < len(b) && b[k].Start.Before(iv.End); k++ {
			if b[k].Start.After(cur) {
				out = append(out, Interval{cur, b[k].Start})
			}
			if b[k].End.After(cur) {
				cur = b[k].End
			}
		}
		if cur.Before(iv.End) {
			out = append(out, Interval{cur, iv.End})
		}
	}
	return out
}

func laterOf(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func earlierOf(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// workingIntervals returns the instants of [from, to) whose local clock in
// loc falls within working hours on a working weekday. The window is cut
// at the zone's offset changes (time.Time.ZoneBounds); within each piece
// the offset is fixed, so every local date maps its [Start, End) onto UTC
// exactly. The hours therefore follow the offset in force on each date,
// daylight-saving transitions included: on the day the clocks change a
// 09:00 start is still 09:00 local, an hour the clocks skip is simply not
// there, and a repeated hour counts as often as the clock shows it inside
// the hours. Nothing is computed by adding 24 hours.
func workingIntervals(loc *time.Location, h WorkHours, from, to time.Time) []Interval {
	var out []Interval
	for seg := from; seg.Before(to); {
		_, next := seg.In(loc).ZoneBounds()
		end := to
		if !next.IsZero() && next.After(seg) && next.Before(to) {
			end = next
		}
		_, off := seg.In(loc).Zone()
		shift := time.Duration(off) * time.Second
		first, last := seg.In(loc), end.Add(-time.Nanosecond).In(loc)
		for day := time.Date(first.Year(), first.Month(), first.Day(), 0, 0, 0, 0, time.UTC); !day.After(time.Date(last.Year(), last.Month(), last.Day(), 0, 0, 0, 0, time.UTC)); day = day.AddDate(0, 0, 1) {
			if !h.works(day.Weekday()) {
				continue
			}
			iv := Interval{laterOf(day.Add(h.Start-shift), seg), earlierOf(day.Add(h.End-shift), end)}
			if iv.Start.Before(iv.End) {
				out = append(out, iv)
			}
		}
		seg = end
	}
	return normalize(out)
}

// onGrid reports whether t's local clock in loc is a whole multiple of
// step after local midnight.
func onGrid(t time.Time, loc *time.Location, step time.Duration) bool {
	l := t.In(loc)
	since := time.Duration(l.Hour())*time.Hour + time.Duration(l.Minute())*time.Minute +
		time.Duration(l.Second())*time.Second + time.Duration(l.Nanosecond())
	return since%step == 0
}

// alignUp returns the earliest instant at or after t whose local clock in
// loc lies on the step grid. Zone offsets are whole minutes, so grid
// instants are whole UTC minutes and a minute-by-minute walk finds the
// first one exactly, across offset changes too; step divides an hour, so
// the walk is short.
func alignUp(t time.Time, loc *time.Location, step time.Duration) time.Time {
	c := t.Truncate(time.Minute)
	if c.Before(t) {
		c = c.Add(time.Minute)
	}
	for range 3 * 60 {
		if onGrid(c, loc, step) {
			return c
		}
		c = c.Add(time.Minute)
	}
	return c // unreachable for real zones; still a time after t
}

// slotQuery is one search for common free slots.
type slotQuery struct {
	window   Interval         // slots lie inside it
	duration time.Duration    // of each slot
	step     time.Duration    // grid of slot starts in grid's local clock
	grid     *time.Location   // the caller's zone
	hours    WorkHours        // applied in every zone of zones
	zones    []*time.Location // the participants' zones
	busy     []Interval       // everyone's busy time, in any order
	max      int              // slots wanted
}

// findSlots returns up to q.max slots of q.duration, earliest first, that
// start on the grid, lie inside q.window and inside working hours in every
// participant's zone, and overlap no busy interval. Each slot starts at or
// after the end of the previous one, so the proposals are distinct
// alternatives rather than shifts of one another.
func findSlots(q slotQuery) []Interval {
	if q.duration <= 0 || q.max <= 0 || !q.window.Start.Before(q.window.End) {
		return nil
	}
	free := []Interval{q.window}
	seen := map[string]bool{}
	for _, z := range q.zones {
		if seen[z.String()] {
			continue
		}
		seen[z.String()] = true
		free = intersect(free, workingIntervals(z, q.hours, q.window.Start, q.window.End))
	}
	free = subtract(free, normalize(q.busy))
	var out []Interval
	next := q.window.Start
	for _, iv := range free {
		for s := alignUp(laterOf(iv.Start, next), q.grid, q.step); !s.Add(q.duration).After(iv.End); s = alignUp(next, q.grid, q.step) {
			out = append(out, Interval{s.UTC(), s.Add(q.duration).UTC()})
			if len(out) == q.max {
				return out
			}
			next = s.Add(q.duration)
		}
	}
	return out
}

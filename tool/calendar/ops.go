package calendar

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/tool/reply"
)

// Bounds of create_event times.
const (
	maxEventLength = 24 * time.Hour
	pastTolerance  = 5 * time.Minute
	maxAhead       = 2 * 366 * 24 * time.Hour
)

type createArgs struct {
	Title        string   `json:"title"`
	StartISO     string   `json:"startIso"`
	EndISO       *string  `json:"endIso"`
	DurationMin  *float64 `json:"durationMin"`
	Participants []string `json:"participants"`
	Description  *string  `json:"description"`
}

type scheduleArgs struct {
	Title        string   `json:"title"`
	Participants []string `json:"participants"`
	DurationMin  *float64 `json:"durationMin"`
	WithinDays   *float64 `json:"withinDays"`
	EarliestISO  *string  `json:"earliestIso"`
}

// eventView is an event as Result.Data shows it.
type eventView struct {
	ID           string   `json:"id"`
	Title        string   `json:"title"`
	StartUTC     string   `json:"startUtc"`
	EndUTC       string   `json:"endUtc"`
	When         string   `json:"when"` // in the caller's zone
	Participants []string `json:"participants"`
	URL          string   `json:"url,omitempty"`
}

// createEvent books one event. Times are parsed in the caller's zone and
// stored in UTC; participants are matched against the team. The backend
// applies call.IdempotencyKey at most once, so a retried call returns the
// first booking. Participants already busy then are named in the result;
// the booking was confirmed by the user and goes ahead.
func (c *Calendar) createEvent(ctx context.Context, call tool.Call) tool.Result {
	cl := call.Caller
	var a createArgs
	if r := c.reply.DecodeArgs(call, &a); r != nil {
		return *r
	}
	title := strings.Join(strings.Fields(a.Title), " ")
	desc := reply.Opt(a.Description)
	if title == "" {
		return c.reply.Failure("title", "title is empty", reply.Tr(cl, "У встречи нет названия.", "The event has no title."))
	}
	fields := []reply.Limit{reply.MaxLen("title", title, maxTitle), reply.MaxLen("description", desc, maxDescription),
		reply.MaxLen("startIso", a.StartISO, maxISO), reply.MaxLen("endIso", reply.Opt(a.EndISO), maxISO)}
	for _, p := range a.Participants {
		fields = append(fields, reply.MaxLen("participants", p, maxName))
	}
	if r := c.reply.CheckFields(cl, fields...); r != nil {
		return *r
	}
	if len(a.Participants) > maxParticipants {
		return c.reply.Failure("participants", fmt.Sprintf("%d participants, more than %d", len(a.Participants), maxParticipants),
			reply.Tr(cl, "Слишком много участников.", "Too many participants."))
	}
	t := c.teamOf(cl)
	loc := t.selfZone
	start, _, err := parseISO(a.StartISO, loc, false)
	if err != nil {
		return c.timeFailure(cl, "startIso", a.StartISO, err)
	}
	dur, r := c.wholeNumber(cl, "durationMin", a.DurationMin, 5, int(maxEventLength/time.Minute), 0)
	if r != nil {
		return *r
	}
	end := start.Add(c.eventDur)
	switch endISO := reply.Opt(a.EndISO); {
	case endISO != "":
		if end, _, err = parseISO(endISO, loc, false); err != nil {
			return c.timeFailure(cl, "endIso", endISO, err)
		}
		if dur != 0 && end.Sub(start) != time.Duration(dur)*time.Minute {
			return c.reply.Failure("endIso", fmt.Sprintf("endIso is %v after startIso but durationMin is %d", end.Sub(start), dur),
				reply.Tr(cl, "Конец встречи не совпадает с указанной длительностью.", "The end time and the duration disagree."))
		}
	case dur != 0:
		end = start.Add(time.Duration(dur) * time.Minute)
	}
	if !end.After(start) || end.Sub(start) > maxEventLength {
		return c.reply.Failure("endIso", fmt.Sprintf("the event would last %v; it must end after it starts and last at most %v", end.Sub(start), maxEventLength),
			reply.Tr(cl, "Встреча должна заканчиваться позже начала и длиться не больше суток.",
				"The event must end after it starts and last at most a day."))
	}
	people, res := c.resolveParticipants(cl, t, a.Participants)
	if res != nil {
		return *res
	}
	now := c.clock(call)
	if start.Before(now.Add(-pastTolerance)) || start.After(now.Add(maxAhead)) {
		// A retried booking may arrive after its start: answer it from the
		// booking made under the same key.
		if call.IdempotencyKey != "" {
			ev, ok, err := c.backend.Booked(ctx, cl.TenantID, t.self, call.IdempotencyKey)
			if err != nil {
				return c.backendFailure(cl, err)
			}
			if ok {
				return c.eventResult(cl, t, ev, nil, now)
			}
		}
		return c.reply.Failure("startIso", fmt.Sprintf("start %s is in the past or more than two years ahead (now %s)", UTCStamp(start), UTCStamp(now)),
			reply.Tr(cl, fmt.Sprintf("Время начала %s уже прошло или слишком далеко. Уточните дату.", formatSpan(start, end, loc, cl.Language, now)),
				fmt.Sprintf("The start %s is in the past or too far ahead. Check the date.", formatSpan(start, end, loc, cl.Language, now))))
	}
	span := Interval{start, end}
	busy, err := c.backend.Busy(ctx, cl.TenantID, t.self, people, span)
	if err != nil {
		// The conflict check only informs; the booking decides.
		busy = nil
	}
	ev, replayed, err := c.backend.Book(ctx, cl.TenantID, t.self, NewEvent{
		Title: title, Description: desc, Start: start, End: end, Timezone: loc.String(), Attendees: people[1:],
	}, call.IdempotencyKey)
	if err != nil {
		return c.backendFailure(cl, err)
	}
	var conflicts []string
	if !replayed {
		for _, m := range people {
			for _, b := range busy[m.ID] {
				if b.Overlaps(span) {
					conflicts = append(conflicts, m.Name)
					break
				}
			}
		}
	}
	return c.eventResult(cl, t, ev, conflicts, now)
}

// eventResult renders a booked event in the caller's zone, with each
// participant in another zone shown at their local time.
func (c *Calendar) eventResult(cl tool.Caller, t team, ev Event, conflicts []string, now time.Time) tool.Result {
	loc := t.selfZone
	iv := Interval{ev.Start, ev.End}
	when := formatSpan(ev.Start, ev.End, loc, cl.Language, now) + " (" + loc.String() + ")"
	byID := map[string]Member{}
	for _, m := range t.members {
		byID[m.ID] = m
	}
	byID[t.self.ID] = t.self
	var people []string
	for _, a := range ev.Attendees {
		name := a.Name
		if name == "" {
			name = a.Email
		}
		if m, ok := byID[a.ID]; ok && a.ID != "" {
			if z := t.zoneOf(m); z.String() != loc.String() {
				name += " (" + clockSpan(iv, z, ev.Start, loc, cl.Language, now) + " " + z.String() + ")"
			}
		}
		people = append(people, name)
	}
	v := eventView{ID: ev.ID, Title: ev.Title, StartUTC: UTCStamp(ev.Start), EndUTC: UTCStamp(ev.End),
		When: when, Participants: people, URL: ev.URL}
	text := reply.Tr(cl, fmt.Sprintf("Встреча «%s» создана: %s. Участники: %s.", ev.Title, when, strings.Join(people, ", ")),
		fmt.Sprintf("Event %q booked: %s. Participants: %s.", ev.Title, when, strings.Join(people, ", ")))
	if ev.URL != "" {
		text += " " + ev.URL
	}
	if len(conflicts) > 0 {
		text += reply.Tr(cl, " Внимание: в это время заняты: ", " Note: busy at that time: ") + strings.Join(conflicts, ", ") + "."
	}
	return c.reply.WithStatus(tool.StatusOK, struct {
		Event     eventView `json:"event"`
		Conflicts []string  `json:"busyAtThatTime,omitempty"`
	}{v, conflicts}, text)
}

// slotView is a proposed slot as Result.Data shows it: the exact UTC
// bounds create_event takes and the label the user picks.
type slotView struct {
	Label    string `json:"label"`
	StartUTC string `json:"startUtc"`
	EndUTC   string `json:"endUtc"`
}

// scheduleMeeting proposes the earliest common free slots: it books
// nothing. Slots come back as an ambiguous Result on field "slot" whose
// Candidates are the labels (the engine shows them as buttons) and whose
// Data lists each slot's UTC bounds for the create_event that follows.
func (c *Calendar) scheduleMeeting(ctx context.Context, call tool.Call) tool.Result {
	cl := call.Caller
	var a scheduleArgs
	if r := c.reply.DecodeArgs(call, &a); r != nil {
		return *r
	}
	title := strings.Join(strings.Fields(a.Title), " ")
	if title == "" {
		return c.reply.Failure("title", "title is empty", reply.Tr(cl, "У встречи нет названия.", "The meeting has no title."))
	}
	fields := []reply.Limit{reply.MaxLen("title", title, maxTitle), reply.MaxLen("earliestIso", reply.Opt(a.EarliestISO), maxISO)}
	for _, p := range a.Participants {
		fields = append(fields, reply.MaxLen("participants", p, maxName))
	}
	if r := c.reply.CheckFields(cl, fields...); r != nil {
		return *r
	}
	if len(a.Participants) == 0 || len(a.Participants) > maxParticipants {
		return c.reply.Failure("participants", fmt.Sprintf("%d participants; give 1 to %d", len(a.Participants), maxParticipants),
			reply.Tr(cl, "Укажите участников встречи.", "Name the meeting's participants."))
	}
	if a.DurationMin == nil {
		return c.reply.Failure("durationMin", "durationMin is required", reply.Tr(cl, "Укажите длительность встречи.", "Give the meeting's length."))
	}
	durMin, r := c.wholeNumber(cl, "durationMin", a.DurationMin, 5, maxScheduleDurationMin, 0)
	if r != nil {
		return *r
	}
	days, r := c.wholeNumber(cl, "withinDays", a.WithinDays, 1, maxSearchDays, c.searchDays)
	if r != nil {
		return *r
	}
	dur := time.Duration(durMin) * time.Minute
	if dur > c.hours.End-c.hours.Start {
		return c.reply.Failure("durationMin", fmt.Sprintf("%d minutes do not fit in working hours %s", durMin, c.hours),
			reply.Tr(cl, fmt.Sprintf("Встреча на %d мин не помещается в рабочий день (%s).", durMin, c.hours),
				fmt.Sprintf("A %d-minute meeting does not fit in a working day (%s).", durMin, c.hours)))
	}
	t := c.teamOf(cl)
	loc := t.selfZone
	people, res := c.resolveParticipants(cl, t, a.Participants)
	if res != nil {
		return *res
	}
	now := c.clock(call)
	from := now.Add(c.notice)
	if e := reply.Opt(a.EarliestISO); e != "" {
		at, _, err := parseISO(e, loc, true)
		if err != nil {
			return c.timeFailure(cl, "earliestIso", e, err)
		}
		from = laterOf(from, at)
	}
	lf := from.In(loc)
	to := StartOfDay(lf.Year(), lf.Month(), lf.Day()+days, loc)
	if from.After(now.Add(maxAhead)) {
		return c.reply.Failure("earliestIso", "earliestIso is more than two years ahead",
			reply.Tr(cl, "Слишком далёкая дата.", "That date is too far ahead."))
	}
	zonesOf := make([]*time.Location, len(people))
	for i, m := range people {
		zonesOf[i] = t.zoneOf(m)
	}
	window := Interval{from, to}
	busyBy, err := c.backend.Busy(ctx, cl.TenantID, t.self, people, window)
	if err != nil {
		return c.backendFailure(cl, err)
	}
	var busy []Interval
	for _, m := range people {
		busy = append(busy, busyBy[m.ID]...)
	}
	slots := findSlots(slotQuery{window: window, duration: dur, step: c.step, grid: loc,
		hours: c.hours, zones: zonesOf, busy: busy, max: DefaultMaxSlots})

	type person struct {
		Name string `json:"name"`
		Zone string `json:"zone"`
	}
	who := make([]person, len(people))
	for i, m := range people {
		who[i] = person{m.Name, zonesOf[i].String()}
	}
	// Slots come first so that a clipped copy of the data keeps them.
	data := struct {
		Slots        []slotView `json:"slots"`
		Booked       bool       `json:"booked"`
		Title        string     `json:"title"`
		DurationMin  int        `json:"durationMin"`
		Participants []person   `json:"participants"`
		WorkingHours string     `json:"workingHours"`
		SearchedUTC  [2]string  `json:"searchedUtc"`
	}{[]slotView{}, false, title, durMin, who, c.hours.String() + " local", [2]string{UTCStamp(from), UTCStamp(to)}}
	lastDay := to.Add(-time.Minute).In(loc)
	last := dayLabel(lastDay, cl.Language, lastDay.Year() != now.In(loc).Year())
	if len(slots) == 0 {
		res := c.reply.WithStatus(tool.StatusNotFound, data, reply.Tr(cl,
			fmt.Sprintf("Нет общего свободного окна на %d мин в рабочее время (%s по местному времени каждого участника) до %s включительно. Попробуйте другой период или длительность.",
				durMin, c.hours, last),
			fmt.Sprintf("No common free %d-minute slot in working hours (%s, each participant's local time) through %s. Try another period or length.",
				durMin, c.hours, last)))
		res.Field = "slot"
		return res
	}
	labels := make([]string, len(slots))
	lines := make([]string, len(slots))
	for i, s := range slots {
		labels[i] = slotLabel(s, loc, cl.Language, now)
		data.Slots = append(data.Slots, slotView{Label: labels[i], StartUTC: UTCStamp(s.Start), EndUTC: UTCStamp(s.End)})
		line := "• " + labels[i]
		shown := map[string]bool{loc.String(): true}
		for _, z := range zonesOf {
			if !shown[z.String()] {
				shown[z.String()] = true
				line += "; " + z.String() + " " + clockSpan(s, z, s.Start, loc, cl.Language, now)
			}
		}
		lines[i] = line
	}
	text := reply.Tr(cl,
		fmt.Sprintf("Свободные окна для «%s» (%d мин):\n%s\nВыберите вариант — встречу создам после подтверждения.", title, durMin, strings.Join(lines, "\n")),
		fmt.Sprintf("Free slots for %q (%d min):\n%s\nPick one; I will book it after you confirm.", title, durMin, strings.Join(lines, "\n")))
	out := c.reply.WithStatus(tool.StatusAmbiguous, data, text)
	out.Field = "slot"
	out.Candidates = labels
	out.Choices = bookingChoices(title, people[1:], data.Slots)
	return out
}

// bookingChoices are the create_event calls the slots stand for: picking
// one books that slot for the same meeting (after the user's "yes"), with
// the participants named exactly as resolved here.
func bookingChoices(title string, others []Member, slots []slotView) []tool.Choice {
	names := make([]string, len(others))
	for i, m := range others {
		names[i] = m.Name + " (" + m.ID + ")"
	}
	out := make([]tool.Choice, len(slots))
	for i, s := range slots {
		args, _ := json.Marshal(struct {
			Title        string   `json:"title"`
			StartISO     string   `json:"startIso"`
			EndISO       string   `json:"endIso"`
			Participants []string `json:"participants"`
		}{title, s.StartUTC, s.EndUTC, names})
		out[i] = tool.Choice{Label: s.Label, Tool: ActionCreateEvent, Args: args}
	}
	return out
}

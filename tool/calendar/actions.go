package calendar

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"

	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/tool/internal/action"
	"github.com/arbiterhq/arbiter/tool/internal/names"
	"github.com/arbiterhq/arbiter/tool/reply"
)

// Argument limits, in characters; the schemas state the same.
const (
	maxTitle       = 200
	maxDescription = 4000
	maxName        = 100
	maxISO         = 60
)

// actionConfirm is the confirmation policy of each action.
var actionConfirm = map[string]tool.Confirm{
	ActionCreateEvent: tool.ConfirmAlways,
	ActionSchedule:    tool.ConfirmNever,
}

var actionDefs = map[string]action.Def{
	ActionCreateEvent: {
		Title: "Создать встречу", Titles: tool.Localized{"ru": "Создать встречу", "en": "Create a meeting"},
		Doing: tool.Localized{"ru": "Создание встречи", "en": "Creating the meeting"}, Labels: calendarLabels,
		Description: "Book a calendar event for the caller with the named participants (team members: full name, first name or id; " +
			"the caller always takes part). startIso is an ISO 8601 time: with an offset (2026-12-02T10:00:00+03:00, or Z for UTC) it is " +
			"that instant; without one (2026-12-02T10:00) it is read in the caller's time zone. Give endIso or durationMin, or neither " +
			"for the default length. After schedule_team_meeting, use the chosen slot's startUtc and endUtc exactly.",
		Risk: tool.RiskWriteSafe,
		Schema: `{
  "type": "object",
  "properties": {
    "title": {"type": "string", "minLength": 1, "maxLength": 200, "description": "Event title"},
    "startIso": {"type": "string", "minLength": 1, "maxLength": 60, "description": "Start: ISO 8601 with offset or Z, or local time in the caller's zone"},
    "endIso": {"type": ["string", "null"], "maxLength": 60, "description": "End, same forms as startIso; null to use durationMin"},
    "durationMin": {"type": ["integer", "null"], "minimum": 5, "maximum": 1440, "description": "Length in minutes when endIso is null"},
    "participants": {"type": ["array", "null"], "maxItems": 20, "items": {"type": "string", "minLength": 1, "maxLength": 100},
      "description": "Team members besides the caller: name, first name or id"},
    "description": {"type": ["string", "null"], "maxLength": 4000, "description": "Event description"}
  },
  "required": ["title", "startIso"],
  "additionalProperties": false
}`,
	},
	ActionSchedule: {
		Title: "Подобрать время встречи", Titles: tool.Localized{"ru": "Подобрать время встречи", "en": "Find a meeting time"}, Labels: calendarLabels,
		Description: "Find the earliest common free slots (up to three) for a meeting of the caller and the named team members, " +
			"inside working hours in each participant's own time zone, and offer them to the user as choices. It books nothing: " +
			"once the user picks a slot, propose create_event with that slot's startUtc and endUtc, the same title and participants. " +
			"withinDays counts calendar days from the first possible day (default 7); earliestIso is a date or time not to search before.",
		Risk: tool.RiskRead,
		Schema: `{
  "type": "object",
  "properties": {
    "title": {"type": "string", "minLength": 1, "maxLength": 200, "description": "Meeting title"},
    "participants": {"type": "array", "minItems": 1, "maxItems": 20, "items": {"type": "string", "minLength": 1, "maxLength": 100},
      "description": "Team members: name, first name or id; the caller is always included"},
    "durationMin": {"type": "integer", "minimum": 5, "maximum": 480, "description": "Meeting length in minutes"},
    "withinDays": {"type": ["integer", "null"], "minimum": 1, "maximum": 31, "description": "Calendar days to search"},
    "earliestIso": {"type": ["string", "null"], "maxLength": 60, "description": "Do not propose before this date (YYYY-MM-DD) or time"}
  },
  "required": ["title", "participants", "durationMin"],
  "additionalProperties": false
}`,
	},
}

// newAction is the calendar operation name as a tool.Tool that runs calls
// for the caller's tenant with run.
func (c *Calendar) newAction(name string, run func(context.Context, tool.Call) tool.Result) *action.Tool {
	spec := actionDefs[name].Spec(name, actionConfirm[name])
	spec.Requires = c.requires
	return action.New("calendar", spec, run)
}

// notFound is a Result with StatusNotFound: errText for the model and the
// journal, human for the reply.
func (c *Calendar) notFound(field, errText, human string) tool.Result {
	r := c.reply.NotFound(field, human)
	r.Error = errText
	return r
}

// backendFailure turns a backend error into a Result: a missing calendar
// is not found; no connection, refused credentials, a timeout and anything
// else are errors, never "not found".
func (c *Calendar) backendFailure(cl tool.Caller, err error) tool.Result {
	switch {
	case errors.Is(err, ErrNotConnected):
		return c.reply.Failure("", err.Error(), reply.Tr(cl,
			"Календарь не подключён: подключите его и повторите.",
			"Your calendar is not connected; connect it and try again."))
	case errors.Is(err, ErrAccessDenied):
		return c.reply.Failure("", err.Error(), reply.Tr(cl,
			"Календарь отказал в доступе: переподключите его.",
			"The calendar refused access; reconnect it."))
	case errors.Is(err, ErrNotFound):
		return c.notFound("", err.Error(), reply.Tr(cl,
			"Календарь не найден или недоступен: "+err.Error(),
			"Calendar not found or not visible: "+err.Error()))
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		return c.reply.Failure("", "calendar timed out: "+err.Error(), reply.Tr(cl,
			"Календарь не ответил вовремя, ничего не сделано.",
			"The calendar did not answer in time; nothing was done."))
	}
	return c.reply.Failure("", "calendar failed: "+err.Error(), reply.Tr(cl,
		"Ошибка календаря, ничего не сделано.",
		"The calendar failed; nothing was done."))
}

// wholeNumber checks an optional integer argument within [lo, hi]; def is
// used when it is absent.
func (c *Calendar) wholeNumber(cl tool.Caller, name string, p *float64, lo, hi, def int) (int, *tool.Result) {
	if p == nil {
		return def, nil
	}
	v := *p
	if v != math.Trunc(v) || v < float64(lo) || v > float64(hi) {
		r := c.reply.Failure(name, fmt.Sprintf("%s %v is not a whole number from %d to %d", name, v, lo, hi),
			reply.Tr(cl, fmt.Sprintf("Значение %s должно быть целым числом от %d до %d.", name, lo, hi),
				fmt.Sprintf("%s must be a whole number from %d to %d.", name, lo, hi)))
		return 0, &r
	}
	return int(v), nil
}

// timeFailure explains an unreadable or impossible time argument.
func (c *Calendar) timeFailure(cl tool.Caller, name, value string, err error) tool.Result {
	if errors.Is(err, errSkipped) {
		return c.reply.Failure(name, fmt.Sprintf("%s %q: %v", name, value, err), reply.Tr(cl,
			fmt.Sprintf("Времени «%s» не существует: в этот день часы переводятся вперёд. Укажите другое время.", value),
			fmt.Sprintf("The time %q does not exist: the clocks jump forward that day. Pick another time.", value)))
	}
	return c.reply.Failure(name, fmt.Sprintf("%s: %v", name, err), reply.Tr(cl,
		fmt.Sprintf("Время «%s» не распознано: нужен формат ISO, например 2026-12-02T10:00 или 2026-12-02T10:00:00+03:00.", value),
		fmt.Sprintf("The time %q is not understood: use ISO, such as 2026-12-02T10:00 or 2026-12-02T10:00:00+03:00.", value)))
}

var trailingID = regexp.MustCompile(`\(\s*([^()]{1,64}?)\s*\)\s*$`)

// resolveParticipants matches each value against the team: "me" and its
// Russian forms mean the caller; a value that does not name one member and
// ends in parentheses is read as "name (id)", the way candidates are
// listed, or else as a name with a note ("Ольга (Europe/Berlin)"). The caller comes first and nobody twice. The
// first value matching several members gives an ambiguous result, the
// first matching none a not-found result.
func (c *Calendar) resolveParticipants(cl tool.Caller, t team, values []string) ([]Member, *tool.Result) {
	out := []Member{t.self}
	seen := map[string]bool{t.self.ID: true}
	for _, v := range values {
		q := strings.TrimSpace(v)
		if q == "" {
			continue
		}
		var found []Member
		if isSelf(q) {
			found = []Member{t.self}
		} else {
			found = matchMembers(t.members, q)
			if m := trailingID.FindStringSubmatchIndex(q); m != nil && len(found) != 1 {
				// "Name (id)" as candidates list them, or a name followed
				// by a note such as its zone.
				id := q[m[2]:m[3]]
				found = nil
				for _, mem := range t.members {
					if mem.ID == id {
						found = []Member{mem}
					}
				}
				if found == nil {
					found = matchMembers(t.members, q[:m[0]])
				}
			}
		}
		switch len(found) {
		case 1:
			if !seen[found[0].ID] {
				seen[found[0].ID] = true
				out = append(out, found[0])
			}
			continue
		case 0:
			all := make([]string, 0, len(t.members))
			for _, m := range t.members {
				all = append(all, m.Name)
			}
			list := strings.Join(all, ", ")
			if list == "" {
				list = reply.Tr(cl, "нет участников", "none")
			}
			r := c.notFound("participants", fmt.Sprintf("no team member matches %q", q), reply.Tr(cl,
				fmt.Sprintf("Не нашёл участника «%s». Участники команды: %s.", q, list),
				fmt.Sprintf("No team member matches %q. Members: %s.", q, list)))
			return nil, &r
		}
		r := c.reply.Ambiguous("participants", reply.Tr(cl,
			fmt.Sprintf("Под «%s» подходят несколько участников: %s. Кого вы имеете в виду?", q, strings.Join(candidateNames(found), ", ")),
			fmt.Sprintf("Several members match %q: %s. Which one do you mean?", q, strings.Join(candidateNames(found), ", "))),
			candidateNames(found))
		return nil, &r
	}
	return out, nil
}

// candidateNames lists members by name, adding the id to names that occur
// more than once so each candidate names one member.
func candidateNames(ms []Member) []string {
	count := map[string]int{}
	for _, m := range ms {
		count[names.Fold(m.Name)]++
	}
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Name
		if count[names.Fold(m.Name)] > 1 {
			out[i] += " (" + m.ID + ")"
		}
	}
	return out
}

// calendarLabels name the actions' arguments for people.
var calendarLabels = map[string]tool.Localized{
	"title":        {"ru": "Название", "en": "Title"},
	"startIso":     {"ru": "Начало", "en": "Start"},
	"endIso":       {"ru": "Конец", "en": "End"},
	"durationMin":  {"ru": "Длительность", "en": "Duration"},
	"participants": {"ru": "Участники", "en": "Participants"},
	"description":  {"ru": "Описание", "en": "Description"},
	"location":     {"ru": "Место", "en": "Location"},
}

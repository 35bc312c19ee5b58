package calendar

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/arbiterhq/arbiter/tool"
)

// Argument limits, in characters; the schemas state the same.
const (
	maxTitle       = 200
	maxDescription = 4000
	maxName        = 100
	maxISO         = 60
)

type actionDef struct {
	title       string
	description string
	risk        tool.Risk
	confirm     tool.Confirm
	schema      string
}

var actionDefs = map[string]actionDef{
	ActionCreateEvent: {
		title: "Создать встречу",
		description: "Book a calendar event for the caller with the named participants (team members: full name, first name or id; " +
			"the caller always takes part). startIso is an ISO 8601 time: with an offset (2026-12-02T10:00:00+03:00, or Z for UTC) it is " +
			"that instant; without one (2026-12-02T10:00) it is read in the caller's time zone. Give endIso or durationMin, or neither " +
			"for the default length. After schedule_team_meeting, use the chosen slot's startUtc and endUtc exactly.",
		risk:    tool.RiskWriteSafe,
		confirm: tool.ConfirmAlways,
		schema: `{
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
		title: "Подобрать время встречи",
		description: "Find the earliest common free slots (up to three) for a meeting of the caller and the named team members, " +
			"inside working hours in each participant's own time zone, and offer them to the user as choices. It books nothing: " +
			"once the user picks a slot, propose create_event with that slot's startUtc and endUtc, the same title and participants. " +
			"withinDays counts calendar days from the first possible day (default 7); earliestIso is a date or time not to search before.",
		risk:    tool.RiskRead,
		confirm: tool.ConfirmNever,
		schema: `{
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

// action is one calendar operation as a tool.Tool. It is safe for
// concurrent use.
type action struct {
	spec tool.Spec
	run  func(ctx context.Context, call tool.Call) tool.Result
}

var _ tool.Tool = (*action)(nil)

func (c *Calendar) newAction(name string, run func(context.Context, tool.Call) tool.Result) *action {
	d := actionDefs[name]
	return &action{
		spec: tool.Spec{
			Name:        name,
			Title:       d.title,
			Description: d.description,
			InputSchema: json.RawMessage(d.schema),
			Risk:        d.risk,
			Confirm:     d.confirm,
			Idempotent:  d.risk.Writes(),
		},
		run: run,
	}
}

// Spec describes the action.
func (a *action) Spec() tool.Spec { return a.spec }

// Call runs the action for call.Caller's tenant. Every outcome of a call
// that ran, including bad arguments and backend failures, is a Result; the
// error is non-nil only when the call carries no tenant or user, which
// would leave the calendar unable to scope it.
func (a *action) Call(ctx context.Context, call tool.Call) (tool.Result, error) {
	if call.Caller.TenantID == "" || call.Caller.UserID == "" {
		return tool.Result{}, fmt.Errorf("calendar %s: caller has no tenant or user id", a.spec.Name)
	}
	return a.run(ctx, call), nil
}

func tr(c tool.Caller, ru, en string) string {
	if isEnglish(c.Language) {
		return en
	}
	return ru
}

// result builds a Result with status and data encoded compactly.
func (c *Calendar) result(status tool.Status, data any, text string) tool.Result {
	raw, err := json.Marshal(data)
	if err != nil {
		return c.failure("", "encode result: "+err.Error(), "не удалось сформировать ответ календаря")
	}
	return tool.Result{Status: status, Data: raw, Text: text, Source: SourceName, ObservedAt: c.now()}
}

// failure is a Result with StatusError: errText for the model and the
// journal, human (in the caller's language) for the reply.
func (c *Calendar) failure(field, errText, human string) tool.Result {
	return tool.Result{Status: tool.StatusError, Error: errText, Text: human, Field: field, Source: SourceName, ObservedAt: c.now()}
}

func (c *Calendar) notFound(field, errText, human string) tool.Result {
	return tool.Result{Status: tool.StatusNotFound, Error: errText, Text: human, Field: field, Source: SourceName, ObservedAt: c.now()}
}

func (c *Calendar) ambiguous(field, text string, candidates []string) tool.Result {
	return tool.Result{Status: tool.StatusAmbiguous, Text: text, Field: field, Candidates: candidates, Source: SourceName, ObservedAt: c.now()}
}

// backendFailure turns a backend error into a Result: a missing calendar
// is not found; no connection, refused credentials, a timeout and anything
// else are errors, never "not found".
func (c *Calendar) backendFailure(cl tool.Caller, err error) tool.Result {
	switch {
	case errors.Is(err, ErrNotConnected):
		return c.failure("", err.Error(), tr(cl,
			"Календарь не подключён: подключите его и повторите.",
			"Your calendar is not connected; connect it and try again."))
	case errors.Is(err, ErrAccessDenied):
		return c.failure("", err.Error(), tr(cl,
			"Календарь отказал в доступе: переподключите его.",
			"The calendar refused access; reconnect it."))
	case errors.Is(err, ErrNotFound):
		return c.notFound("", err.Error(), tr(cl,
			"Календарь не найден или недоступен: "+err.Error(),
			"Calendar not found or not visible: "+err.Error()))
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		return c.failure("", "calendar timed out: "+err.Error(), tr(cl,
			"Календарь не ответил вовремя, ничего не сделано.",
			"The calendar did not answer in time; nothing was done."))
	}
	return c.failure("", "calendar failed: "+err.Error(), tr(cl,
		"Ошибка календаря, ничего не сделано.",
		"The calendar failed; nothing was done."))
}

// decodeArgs decodes call arguments strictly (unknown fields rejected);
// empty or null arguments decode as {}. A failure is returned as a Result.
func (c *Calendar) decodeArgs(call tool.Call, v any) *tool.Result {
	raw := bytes.TrimSpace(call.Args)
	if len(raw) == 0 || string(raw) == "null" {
		raw = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if _, extra := dec.Token(); extra != io.EOF {
			err = errors.New("trailing data after the arguments object")
		}
	}
	if err != nil {
		r := c.failure("", "invalid arguments: "+err.Error(),
			tr(call.Caller, "Некорректные аргументы действия.", "Invalid action arguments."))
		return &r
	}
	return nil
}

// field is an argument value with its name and limit, checked by
// checkFields.
type field struct {
	name  string
	value string
	max   int
}

// checkFields returns an error Result for the first value longer than its
// limit.
func (c *Calendar) checkFields(cl tool.Caller, fields ...field) *tool.Result {
	for _, f := range fields {
		if n := utf8.RuneCountInString(f.value); n > f.max {
			r := c.failure(f.name, fmt.Sprintf("%s is %d characters, more than the limit of %d", f.name, n, f.max),
				tr(cl, fmt.Sprintf("Поле %s слишком длинное (%d символов, максимум %d).", f.name, n, f.max),
					fmt.Sprintf("The %s is too long (%d characters, at most %d).", f.name, n, f.max)))
			return &r
		}
	}
	return nil
}

// opt reads an optional string argument: null, absent and blank all mean
// "not given".
func opt(p *string) string {
	if p == nil {
		return ""
	}
	return strings.TrimSpace(*p)
}

// wholeNumber checks an optional integer argument within [lo, hi]; def is
// used when it is absent.
func (c *Calendar) wholeNumber(cl tool.Caller, name string, p *float64, lo, hi, def int) (int, *tool.Result) {
	if p == nil {
		return def, nil
	}
	v := *p
	if v != math.Trunc(v) || v < float64(lo) || v > float64(hi) {
		r := c.failure(name, fmt.Sprintf("%s %v is not a whole number from %d to %d", name, v, lo, hi),
			tr(cl, fmt.Sprintf("Значение %s должно быть целым числом от %d до %d.", name, lo, hi),
				fmt.Sprintf("%s must be a whole number from %d to %d.", name, lo, hi)))
		return 0, &r
	}
	return int(v), nil
}

// timeFailure explains an unreadable or impossible time argument.
func (c *Calendar) timeFailure(cl tool.Caller, name, value string, err error) tool.Result {
	if errors.Is(err, errSkipped) {
		return c.failure(name, fmt.Sprintf("%s %q: %v", name, value, err), tr(cl,
			fmt.Sprintf("Времени «%s» не существует: в этот день часы переводятся вперёд. Укажите другое время.", value),
			fmt.Sprintf("The time %q does not exist: the clocks jump forward that day. Pick another time.", value)))
	}
	return c.failure(name, fmt.Sprintf("%s: %v", name, err), tr(cl,
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
			names := make([]string, 0, len(t.members))
			for _, m := range t.members {
				names = append(names, m.Name)
			}
			list := strings.Join(names, ", ")
			if list == "" {
				list = tr(cl, "нет участников", "none")
			}
			r := c.notFound("participants", fmt.Sprintf("no team member matches %q", q), tr(cl,
				fmt.Sprintf("Не нашёл участника «%s». Участники команды: %s.", q, list),
				fmt.Sprintf("No team member matches %q. Members: %s.", q, list)))
			return nil, &r
		}
		r := c.ambiguous("participants", tr(cl,
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
		count[norm(m.Name)]++
	}
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Name
		if count[norm(m.Name)] > 1 {
			out[i] += " (" + m.ID + ")"
		}
	}
	return out
}

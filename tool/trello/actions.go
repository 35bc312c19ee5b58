package trello

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/arbiterhq/arbiter/tool"
)

// Argument limits, in characters; the schemas state the same. They are the
// embedded board's, plus the attachment's.
const (
	maxTitle       = 200
	maxDescription = 4000
	maxName        = 100
	maxDue         = 40
	maxCardRef     = 500
	maxComment     = 4000
	maxAttachName  = 256
	maxAttachURL   = 2000
	maxAttachFile  = 300
)

// maxListCards bounds the cards list_my_tasks returns.
const maxListCards = 30

// writeTimeout bounds one write: it reads the board, writes and may wait
// out a rate limit.
const writeTimeout = 30 * time.Second

type actionDef struct {
	title       string
	description string
	risk        tool.Risk
	schema      string
	maxResult   int
}

var actionDefs = map[string]actionDef{
	ActionCreate: {
		title: "Создать задачу",
		description: "Create a card on the team's Trello board. assignee is a board member " +
			"(full name, first name, @username or id; \"me\" for the caller); leave it null for an unassigned card, never guess one. " +
			"dueIso is a date YYYY-MM-DD or an RFC 3339 time, null for no due date. column is a list of the board and defaults to the first list. " +
			"attachment is only ever a file or link the user attached; never fill it from text.",
		risk: tool.RiskWriteSafe,
		schema: `{
  "type": "object",
  "properties": {
    "title": {"type": "string", "minLength": 1, "maxLength": 200, "description": "Card title"},
    "assignee": {"type": ["string", "null"], "maxLength": 100, "description": "Board member: name, first name, @username or id; \"me\" for the caller; null for nobody"},
    "dueIso": {"type": ["string", "null"], "maxLength": 40, "description": "Due date YYYY-MM-DD or RFC 3339 time; null for none"},
    "column": {"type": ["string", "null"], "maxLength": 100, "description": "List name; null for the first list"},
    "description": {"type": ["string", "null"], "maxLength": 4000, "description": "Card description"},
    "attachment": ` + tool.AttachmentSchema + `
  },
  "required": ["title"],
  "additionalProperties": false
}`,
	},
	ActionUpdate: {
		title: "Изменить задачу",
		description: "Change a card's title, assignee, due date, list (column) or description. card is a card short link, a card URL or the card's title. " +
			"Null, empty or absent fields stay unchanged. Moving a card to the done list marks it done; moving it out reopens it.",
		risk: tool.RiskWriteSafe,
		schema: `{
  "type": "object",
  "properties": {
    "card": {"type": "string", "minLength": 1, "maxLength": 500, "description": "Card short link, card URL or title"},
    "title": {"type": ["string", "null"], "maxLength": 200, "description": "New title"},
    "assignee": {"type": ["string", "null"], "maxLength": 100, "description": "New assignee: name, first name, @username or id; \"me\" for the caller"},
    "dueIso": {"type": ["string", "null"], "maxLength": 40, "description": "New due date YYYY-MM-DD or RFC 3339 time"},
    "column": {"type": ["string", "null"], "maxLength": 100, "description": "List to move the card to"},
    "description": {"type": ["string", "null"], "maxLength": 4000, "description": "New description"}
  },
  "required": ["card"],
  "additionalProperties": false
}`,
	},
	ActionComment: {
		title:       "Прокомментировать задачу",
		description: "Add a comment to a card. card is a card short link, a card URL or the card's title.",
		risk:        tool.RiskWriteSafe,
		schema: `{
  "type": "object",
  "properties": {
    "card": {"type": "string", "minLength": 1, "maxLength": 500, "description": "Card short link, card URL or title"},
    "text": {"type": "string", "minLength": 1, "maxLength": 4000, "description": "Comment text"}
  },
  "required": ["card", "text"],
  "additionalProperties": false
}`,
	},
	ActionComplete: {
		title:       "Завершить задачу",
		description: "Mark a card done: move it to the board's done list and mark its due date complete. card is a card short link, a card URL or the card's title.",
		risk:        tool.RiskWriteSafe,
		schema: `{
  "type": "object",
  "properties": {
    "card": {"type": "string", "minLength": 1, "maxLength": 500, "description": "Card short link, card URL or title"}
  },
  "required": ["card"],
  "additionalProperties": false
}`,
	},
	ActionListMine: {
		title:       "Мои задачи",
		description: "List the caller's open Trello cards with short link, title, list, due date and URL.",
		risk:        tool.RiskRead,
		schema:      `{"type": "object", "properties": {}, "additionalProperties": false}`,
		maxResult:   32 << 10,
	},
}

// action is one board operation as a tool.Tool. It is safe for concurrent
// use.
type action struct {
	spec tool.Spec
	run  func(ctx context.Context, call tool.Call) tool.Result
}

var _ tool.Tool = (*action)(nil)

func (c *Client) newAction(name string, run func(context.Context, tool.Call) tool.Result) *action {
	d := actionDefs[name]
	spec := tool.Spec{
		Name:           name,
		Title:          d.title,
		Description:    d.description,
		InputSchema:    json.RawMessage(d.schema),
		Risk:           d.risk,
		Confirm:        c.confirm[name],
		MaxResultBytes: d.maxResult,
		Idempotent:     d.risk.Writes(),
		AttachmentArg:  attachmentArgOf(name),
	}
	if d.risk.Writes() {
		spec.Timeout = writeTimeout
	}
	return &action{spec: spec, run: run}
}

// Spec describes the action.
func (a *action) Spec() tool.Spec { return a.spec }

// Call runs the action for call.Caller. Every outcome of a call that ran,
// including bad arguments and Trello failures, is a Result: 404 is
// StatusNotFound, a refused credential, a rate limit, a 5xx or a timeout
// is StatusError. The error is non-nil only when the call carries no
// tenant or user.
func (a *action) Call(ctx context.Context, call tool.Call) (tool.Result, error) {
	if call.Caller.TenantID == "" || call.Caller.UserID == "" {
		return tool.Result{}, fmt.Errorf("trello %s: caller has no tenant or user id", a.spec.Name)
	}
	return a.run(ctx, call), nil
}

// english reports whether replies to c are in English; Russian otherwise.
func english(c tool.Caller) bool {
	return strings.HasPrefix(strings.ToLower(c.Language), "en")
}

func tr(c tool.Caller, ru, en string) string {
	if english(c) {
		return en
	}
	return ru
}

// ok builds a successful Result with data encoded compactly.
func (c *Client) ok(data any, text string) tool.Result {
	raw, err := json.Marshal(data)
	if err != nil {
		return c.fail("", "encode result: "+err.Error(), "не удалось сформировать ответ")
	}
	return tool.Result{Status: tool.StatusOK, Data: raw, Text: text, Source: SourceName, ObservedAt: c.now()}
}

// fail is a Result with StatusError: errText for the model and the
// journal, human (in the caller's language) for the reply.
func (c *Client) fail(field, errText, human string) tool.Result {
	return tool.Result{Status: tool.StatusError, Error: errText, Text: human, Field: field, Source: SourceName, ObservedAt: c.now()}
}

func (c *Client) notFound(field, text string) tool.Result {
	return tool.Result{Status: tool.StatusNotFound, Text: text, Field: field, Source: SourceName, ObservedAt: c.now()}
}

func (c *Client) ambiguous(field, text string, candidates []string) tool.Result {
	return tool.Result{Status: tool.StatusAmbiguous, Text: text, Field: field, Candidates: candidates, Source: SourceName, ObservedAt: c.now()}
}

func (c *Client) notConnected(caller tool.Caller) tool.Result {
	return c.fail("", "no Trello connection for this user and no default token",
		tr(caller, "Trello не подключён для вас — действие не выполнено.", "Trello is not connected for you; nothing was done."))
}

// failure turns a failed request into an error Result. Its texts hold the
// method and path at most, never the credentials.
func (s *session) failure(err error) tool.Result {
	c, caller := s.c, s.caller
	msg := s.scrub(err.Error())
	switch {
	case isAuth(err):
		return c.fail("", fmt.Sprintf("Trello refused the credentials (status %d)", statusOf(err)),
			tr(caller, "Trello отклонил учётные данные — подключение нужно проверить. Ничего не изменено.",
				"Trello refused the credentials; the connection needs checking. Nothing was changed."))
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		return c.fail("", "Trello did not answer in time: "+msg,
			tr(caller, "Trello не ответил вовремя.", "Trello did not answer in time."))
	case statusOf(err) == 429:
		return c.fail("", "Trello rate limit: "+msg,
			tr(caller, "Trello ограничил частоту запросов — попробуйте чуть позже.", "Trello is rate limiting requests; try again shortly."))
	case outcomeUnknown(err):
		return c.fail("", "Trello did not confirm the write, which may have been applied: "+msg,
			tr(caller, "Trello не подтвердил запись — возможно, она всё же выполнена. Повтор того же действия не создаст дубль.",
				"Trello did not confirm the write; it may have been applied. Repeating the same action will not duplicate it."))
	}
	return c.fail("", "Trello request failed: "+msg,
		tr(caller, "Запрос к Trello не удался.", "The Trello request failed."))
}

// decodeArgs decodes call arguments strictly (unknown fields rejected);
// empty or null arguments decode as {}. A failure is returned as a Result.
func (c *Client) decodeArgs(call tool.Call, v any) *tool.Result {
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
		r := c.fail("", "invalid arguments: "+err.Error(),
			tr(call.Caller, "Некорректные аргументы действия.", "Invalid action arguments."))
		return &r
	}
	return nil
}

// field is an argument value with its name and limit.
type field struct {
	name  string
	value string
	max   int
}

// checkFields returns an error Result for the first value longer than its
// limit.
func (c *Client) checkFields(caller tool.Caller, fields ...field) *tool.Result {
	for _, f := range fields {
		if n := utf8.RuneCountInString(f.value); n > f.max {
			r := c.fail(f.name, fmt.Sprintf("%s is %d characters, more than the limit of %d", f.name, n, f.max),
				tr(caller, fmt.Sprintf("Поле %s слишком длинное (%d символов, максимум %d).", f.name, n, f.max),
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

// parseDue reads a due value: a date "2006-01-02" (noon of that day in the
// caller's time zone, Trello's due being a moment) or an RFC 3339 time.
func (c *Client) parseDue(caller tool.Caller, due string) (time.Time, *tool.Result) {
	if d, err := time.ParseInLocation(time.DateOnly, due, callerLocation(caller)); err == nil {
		return d.Add(12 * time.Hour), nil
	}
	if t, err := time.Parse(time.RFC3339, due); err == nil {
		return t, nil
	}
	r := c.fail("dueIso",
		fmt.Sprintf("dueIso %q is neither a date YYYY-MM-DD nor an RFC 3339 time such as 2026-12-01T15:00:00+03:00", due),
		tr(caller, fmt.Sprintf("Срок «%s» не распознан: нужна дата ГГГГ-ММ-ДД или время RFC 3339 (например, 2026-12-01T15:00:00+03:00).", due),
			fmt.Sprintf("The due date %q is not a YYYY-MM-DD date or an RFC 3339 time (such as 2026-12-01T15:00:00+03:00).", due)))
	return time.Time{}, &r
}

// trelloTime is the form Trello writes times in.
func trelloTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// sameDue reports whether a Trello due value is the moment t.
func sameDue(due string, t time.Time) bool {
	d, err := time.Parse(time.RFC3339, due)
	return err == nil && d.Equal(t)
}

// memberLabel renders a board member: "Full Name (@username)".
func memberLabel(m apiMember) string {
	name := strings.TrimSpace(m.FullName)
	switch {
	case name == "" && m.Username == "":
		return m.ID
	case name == "":
		return "@" + m.Username
	case m.Username == "":
		return name
	}
	return name + " (@" + m.Username + ")"
}

// people joins the live board members with the tenant's names for them.
func (c *Client) people(tenant string, members []apiMember) []boardPerson {
	mapped := c.tenantMembers(tenant)
	out := make([]boardPerson, 0, len(members))
	for _, m := range members {
		p := boardPerson{member: m, names: []string{m.FullName}}
		for _, t := range mapped {
			if t.Name != "" && linked(t, m) {
				p.names = append(p.names, t.Name)
			}
		}
		out = append(out, p)
	}
	return out
}

// linked reports whether tenant user t is Trello member m.
func linked(t Member, m apiMember) bool {
	return (t.TrelloID != "" && strings.EqualFold(t.TrelloID, m.ID)) ||
		(t.Username != "" && strings.EqualFold(t.Username, m.Username))
}

// selfMember finds the caller among the live board members through the
// tenant mapping. A failure is returned as a not-found Result.
func (s *session) selfMember(field string, members []apiMember) (apiMember, *tool.Result) {
	caller := s.caller
	me, ok := s.c.self(caller)
	if ok {
		for _, m := range members {
			if linked(me, m) {
				return m, nil
			}
		}
	}
	text := tr(caller, "Ваш аккаунт Trello не привязан — назовите участника доски по имени.",
		"Your Trello account is not linked; name the board member instead.")
	if ok {
		text = tr(caller, "Вашего аккаунта Trello нет среди участников доски.",
			"Your Trello account is not a member of the board.")
	}
	r := s.c.notFound(field, text)
	return apiMember{}, &r
}

// resolveAssignee matches q against the live members; "me" and its Russian
// forms mean the caller. A failure is returned as a Result.
func (s *session) resolveAssignee(members []apiMember, q string) (apiMember, *tool.Result) {
	c, caller := s.c, s.caller
	if isSelf(q) {
		return s.selfMember("assignee", members)
	}
	found := matchMembers(c.people(caller.TenantID, members), q)
	switch len(found) {
	case 1:
		return found[0].member, nil
	case 0:
		labels := make([]string, len(members))
		for i, m := range members {
			labels[i] = memberLabel(m)
		}
		list := strings.Join(labels, ", ")
		if list == "" {
			list = tr(caller, "нет участников", "none")
		}
		r := c.notFound("assignee", tr(caller,
			fmt.Sprintf("Не нашёл участника «%s» на доске. Участники: %s.", q, list),
			fmt.Sprintf("No board member matches %q. Members: %s.", q, list)))
		return apiMember{}, &r
	}
	labels := make([]string, len(found))
	for i, p := range found {
		labels[i] = memberLabel(p.member)
	}
	r := c.ambiguous("assignee", tr(caller,
		fmt.Sprintf("Под «%s» подходят несколько участников: %s. Кого вы имеете в виду?", q, strings.Join(labels, ", ")),
		fmt.Sprintf("Several members match %q: %s. Which one do you mean?", q, strings.Join(labels, ", "))), labels)
	return apiMember{}, &r
}

// resolveList matches q against the live lists. A failure is returned as a
// Result.
func (s *session) resolveList(lists []apiList, q string) (apiList, *tool.Result) {
	c, caller := s.c, s.caller
	names := listNames(lists)
	found := matchLists(lists, q)
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		r := c.notFound("column", tr(caller,
			fmt.Sprintf("Нет списка «%s». Списки доски: %s.", q, strings.Join(names, ", ")),
			fmt.Sprintf("No list matches %q. Lists: %s.", q, strings.Join(names, ", "))))
		return apiList{}, &r
	}
	cands := listNames(found)
	r := c.ambiguous("column", tr(caller,
		fmt.Sprintf("Под «%s» подходят несколько списков: %s. Какой вы имеете в виду?", q, strings.Join(cands, ", ")),
		fmt.Sprintf("Several lists match %q: %s. Which one do you mean?", q, strings.Join(cands, ", "))), cands)
	return apiList{}, &r
}

func listNames(lists []apiList) []string {
	out := make([]string, len(lists))
	for i, l := range lists {
		out[i] = l.Name
	}
	return out
}

func listName(lists []apiList, id string) string {
	for _, l := range lists {
		if l.ID == id {
			return l.Name
		}
	}
	return ""
}

// doneListOf returns the list that means "done": Config.DoneList, or the
// last open list when the board has more than one. ok is false when there
// is none.
func (c *Client) doneListOf(lists []apiList) (apiList, bool) {
	if c.doneList != "" {
		for _, l := range lists {
			if norm(l.Name) == norm(c.doneList) {
				return l, true
			}
		}
		return apiList{}, false
	}
	if len(lists) < 2 {
		return apiList{}, false
	}
	return lists[len(lists)-1], true
}

// Card statuses as results show them.
const (
	statusOpen     = "open"
	statusDone     = "done"
	statusArchived = "archived"
)

// cardView is a card as Result.Data shows it; the embedded board's shape,
// with the short link as id.
type cardView struct {
	ID       string `json:"id"`
	Title    string `json:"title"`
	URL      string `json:"url"`
	Assignee string `json:"assignee,omitempty"`
	Due      string `json:"due,omitempty"` // RFC 3339 in the caller's time zone
	Column   string `json:"column,omitempty"`
	Status   string `json:"status"`
}

// view renders card in list column; done reports the done list or a
// completed due date.
func (c *Client) view(card *apiCard, column, assignee string, done bool, loc *time.Location) cardView {
	v := cardView{ID: card.ShortLink, Title: card.Name, URL: card.URL, Assignee: assignee, Column: column, Status: statusOpen}
	if v.ID == "" {
		v.ID = card.ID
	}
	if card.Due != "" {
		if t, err := time.Parse(time.RFC3339, card.Due); err == nil {
			v.Due = t.In(loc).Format(time.RFC3339)
		}
	}
	switch {
	case card.Closed:
		v.Status = statusArchived
	case done:
		v.Status = statusDone
	}
	return v
}

// assigneeNames renders a card's members by their live labels.
func assigneeNames(card *apiCard, members []apiMember) string {
	var names []string
	for _, id := range card.IDMembers {
		label := id
		for _, m := range members {
			if m.ID == id {
				label = memberLabel(m)
				break
			}
		}
		names = append(names, label)
	}
	return strings.Join(names, ", ")
}

// callerLocation is the caller's time zone, UTC when unknown.
func callerLocation(c tool.Caller) *time.Location {
	if c.Timezone == "" {
		return time.UTC
	}
	if loc, ok := zones.Load(c.Timezone); ok {
		return loc.(*time.Location)
	}
	loc, err := time.LoadLocation(c.Timezone)
	if err != nil {
		loc = time.UTC
	}
	zones.Store(c.Timezone, loc)
	return loc
}

// zones caches loaded time zones: loading one reads the zone database.
var zones sync.Map

// attachmentArgOf names create_task's attachment argument, which the
// server fills with the user's stored file in place of the model's "last".
func attachmentArgOf(action string) string {
	if action == ActionCreate {
		return "attachment"
	}
	return ""
}

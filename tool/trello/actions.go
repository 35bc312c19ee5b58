package trello

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/tool/internal/board"
	"github.com/arbiterhq/arbiter/tool/internal/names"
	"github.com/arbiterhq/arbiter/tool/reply"
)

// Attachment limits, in characters; the other arguments' are the shared
// layer's (tool/internal/board).
const (
	maxAttachName = 256
	maxAttachURL  = 2000
	maxAttachFile = 300
)

// writeTimeout bounds one write: it reads the board, writes and may wait
// out a rate limit.
const writeTimeout = 30 * time.Second

// docs are what the model reads of Trello's actions.
var docs = board.Docs{
	Create: "Create a card on the team's Trello board. assignee is a board member " +
		"(full name, first name, @username or id; \"me\" for the caller); leave it null for an unassigned card, never guess one. " +
		"dueIso is a date YYYY-MM-DD or an RFC 3339 time, null for no due date. column is a list of the board and defaults to the first list. " +
		"attachment is only ever a file or link the user attached; never fill it from text.",
	Update: "Change a card's title, assignee, due date, list (column) or description. card is a card short link, a card URL or the card's title. " +
		"Null, empty or absent fields stay unchanged. Moving a card to the done list marks it done; moving it out reopens it.",
	Comment:     "Add a comment to a card. card is a card short link, a card URL or the card's title.",
	Complete:    "Mark a card done: move it to the board's done list and mark its due date complete. card is a card short link, a card URL or the card's title.",
	ListMine:    "List the caller's open Trello cards with short link, title, list, due date and URL.",
	Assignee:    "Board member: name, first name, @username or id; \"me\" for the caller; null for nobody",
	NewAssignee: "New assignee: name, first name, @username or id; \"me\" for the caller",
	Column:      "List name; null for the first list",
	NewColumn:   "List to move the card to",
	Card:        "Card short link, card URL or title",
}

func (c *Client) notConnected(caller tool.Caller) tool.Result {
	return c.reply.Failure("", "no Trello connection for this user and no default token",
		reply.Tr(caller, "Trello не подключён для вас — действие не выполнено.", "Trello is not connected for you; nothing was done."))
}

// failure turns a failed request into an error Result. Its texts hold the
// method and path at most, never the credentials.
func (s *session) failure(err error) tool.Result {
	c, caller := s.c, s.caller
	msg := s.scrub(err.Error())
	switch {
	case isAuth(err):
		return c.reply.Failure("", fmt.Sprintf("Trello refused the credentials (status %d)", statusOf(err)),
			reply.Tr(caller, "Trello отклонил учётные данные — подключение нужно проверить. Ничего не изменено.",
				"Trello refused the credentials; the connection needs checking. Nothing was changed."))
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		return c.reply.Failure("", "Trello did not answer in time: "+msg,
			reply.Tr(caller, "Trello не ответил вовремя.", "Trello did not answer in time."))
	case statusOf(err) == 429:
		return c.reply.Failure("", "Trello rate limit: "+msg,
			reply.Tr(caller, "Trello ограничил частоту запросов — попробуйте чуть позже.", "Trello is rate limiting requests; try again shortly."))
	case outcomeUnknown(err):
		return c.reply.Failure("", "Trello did not confirm the write, which may have been applied: "+msg,
			reply.Tr(caller, "Trello не подтвердил запись — возможно, она всё же выполнена. Повтор того же действия не создаст дубль.",
				"Trello did not confirm the write; it may have been applied. Repeating the same action will not duplicate it."))
	}
	return c.reply.Failure("", "Trello request failed: "+msg,
		reply.Tr(caller, "Запрос к Trello не удался.", "The Trello request failed."))
}

// parseDue reads a due value: a date "2006-01-02" (noon of that day in the
// caller's time zone, Trello's due being a moment) or an RFC 3339 time.
// An empty value is no due date: the zero time.
func (c *Client) parseDue(caller tool.Caller, due string) (time.Time, *tool.Result) {
	if due == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseInLocation(time.DateOnly, due, reply.Location(caller)); err == nil {
		return d.Add(12 * time.Hour), nil
	}
	if t, err := time.Parse(time.RFC3339, due); err == nil {
		return t, nil
	}
	r := c.reply.Failure("dueIso",
		fmt.Sprintf("dueIso %q is neither a date YYYY-MM-DD nor an RFC 3339 time such as 2026-12-01T15:00:00+03:00", due),
		reply.Tr(caller, fmt.Sprintf("Срок «%s» не распознан: нужна дата ГГГГ-ММ-ДД или время RFC 3339 (например, 2026-12-01T15:00:00+03:00).", due),
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
	text := reply.Tr(caller, "Ваш аккаунт Trello не привязан — назовите участника доски по имени.",
		"Your Trello account is not linked; name the board member instead.")
	if ok {
		text = reply.Tr(caller, "Вашего аккаунта Trello нет среди участников доски.",
			"Your Trello account is not a member of the board.")
	}
	r := s.c.reply.NotFound(field, text)
	return apiMember{}, &r
}

// resolveAssignee matches q against the live members; "me" and its Russian
// forms mean the caller. A failure is returned as a Result.
func (s *session) resolveAssignee(members []apiMember, q string) (apiMember, *tool.Result) {
	c, caller := s.c, s.caller
	if names.IsSelf(q) {
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
		r := board.NoMember(c.reply, caller, q, labels)
		return apiMember{}, &r
	}
	labels := make([]string, len(found))
	for i, p := range found {
		labels[i] = memberLabel(p.member)
	}
	r := board.SeveralMembers(c.reply, caller, q, labels)
	return apiMember{}, &r
}

// resolveList matches q against the live lists. A failure is returned as a
// Result.
func (s *session) resolveList(lists []apiList, q string) (apiList, *tool.Result) {
	c, caller := s.c, s.caller
	all := listNames(lists)
	found := matchLists(lists, q)
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		r := c.reply.NotFound("column", reply.Tr(caller,
			fmt.Sprintf("Нет списка «%s». Списки доски: %s.", q, strings.Join(all, ", ")),
			fmt.Sprintf("No list matches %q. Lists: %s.", q, strings.Join(all, ", "))))
		return apiList{}, &r
	}
	cands := listNames(found)
	r := c.reply.Ambiguous("column", reply.Tr(caller,
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
			if names.Fold(l.Name) == names.Fold(c.doneList) {
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
	var labels []string
	for _, id := range card.IDMembers {
		label := id
		for _, m := range members {
			if m.ID == id {
				label = memberLabel(m)
				break
			}
		}
		labels = append(labels, label)
	}
	return strings.Join(labels, ", ")
}

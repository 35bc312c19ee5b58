// Package board is the action layer the task boards share — the embedded
// board (tool/taskboard) and Trello (tool/trello) — over a small Backend,
// the way tool/calendar has one layer over its backends. The layer holds
// the five actions' names, argument limits, schemas and titles; it decodes
// and checks every call's arguments and gives the failures that come of
// them; and it words an update's report. A Backend gets checked, typed
// arguments and does the rest: it finds the card, member or column on its
// board, writes once per idempotency key, and says what happened in its own
// words (columns or lists, ids or short links).
//
// Every function and method here is safe for concurrent use, as far as the
// Backend is.
package board

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/tool/internal/action"
	"github.com/arbiterhq/arbiter/tool/reply"
)

// Action names.
const (
	ActionCreate   = "create_task"
	ActionUpdate   = "update_task"
	ActionComment  = "comment_task"
	ActionComplete = "complete_task"
	ActionListMine = "list_my_tasks"
)

// Argument limits, in characters; the schemas state the same.
const (
	MaxTitle       = 200
	MaxDescription = 4000
	MaxName        = 100
	MaxDue         = 40
	MaxCardRef     = 500
	MaxComment     = 4000
)

// MaxListCards bounds the cards list_my_tasks returns; MaxCandidates the
// candidates an ambiguous card lists.
const (
	MaxListCards  = 30
	MaxCandidates = 10
)

// Create is a checked create_task call: title and text fields trimmed and
// within their limits, the due value a date or an RFC 3339 time; empty
// means not given. Attachment is the argument as sent (null or absent:
// empty), for the board to read its own form of it.
type Create struct {
	Title, Assignee, Due, Column, Description string
	Attachment                                json.RawMessage
}

// Update is a checked update_task call; at least one field besides Card
// is set.
type Update struct {
	Card, Title, Assignee, Due, Column, Description string
}

// Comment is a checked comment_task call.
type Comment struct{ Card, Text string }

// Complete is a checked complete_task call.
type Complete struct{ Card string }

// Backend is one board's storage and words: a function per action, each
// running a call whose arguments the layer checked, every outcome a
// Result; and Preview, resolving what a write would change
// (tool.Previewer).
type Backend struct {
	Create   func(ctx context.Context, call tool.Call, a Create) tool.Result
	Update   func(ctx context.Context, call tool.Call, a Update) tool.Result
	Comment  func(ctx context.Context, call tool.Call, a Comment) tool.Result
	Complete func(ctx context.Context, call tool.Call, a Complete) tool.Result
	ListMine func(ctx context.Context, call tool.Call) tool.Result
	Preview  func(ctx context.Context, call tool.Call) (tool.Preview, error)
}

// Docs are what the model reads of one board's actions: each action's
// description and the descriptions of the arguments that name the board's
// own things.
type Docs struct {
	Create, Update, Comment, Complete, ListMine string
	// Assignee, NewAssignee: the assignee argument of create and update;
	// Column, NewColumn: the column (list) argument; Card: the card
	// argument.
	Assignee, NewAssignee, Column, NewColumn, Card string
}

// Config is one board's layer.
type Config struct {
	Owner   string // the package, in errors ("taskboard")
	Docs    Docs
	Confirm map[string]tool.Confirm // confirmation policy by action
	// WriteTimeout bounds each write; zero leaves the engine's default.
	WriteTimeout time.Duration
	Reply        reply.Builder
	Backend      Backend
	// Requires is every action's tool.Spec.Requires.
	Requires string
}

// Tools are the five actions of the board of cfg.
func Tools(cfg Config) []tool.Tool {
	l := &layer{cfg: cfg}
	defs := defs(cfg.Docs)
	runs := map[string]func(context.Context, tool.Call) tool.Result{
		ActionCreate: l.create, ActionUpdate: l.update, ActionComment: l.comment,
		ActionComplete: l.complete, ActionListMine: l.listMine,
	}
	out := make([]tool.Tool, 0, len(runs))
	for _, name := range []string{ActionCreate, ActionUpdate, ActionComment, ActionComplete, ActionListMine} {
		spec := defs[name].Spec(name, cfg.Confirm[name])
		spec.Requires = cfg.Requires
		if name == ActionCreate {
			// The stored file of the conversation (see tool.Spec.AttachmentArg).
			spec.AttachmentArg = "attachment"
		}
		if spec.Risk.Writes() && cfg.WriteTimeout > 0 {
			spec.Timeout = cfg.WriteTimeout
		}
		t := action.New(cfg.Owner, spec, runs[name])
		if spec.Risk.Writes() {
			t.WithPreview(cfg.Backend.Preview)
		}
		out = append(out, t)
	}
	return out
}

// DefaultConfirm is the confirmation policy of the actions before a
// configuration's overrides.
func DefaultConfirm() map[string]tool.Confirm {
	return map[string]tool.Confirm{
		ActionCreate: tool.ConfirmAlways, ActionUpdate: tool.ConfirmNever, ActionComment: tool.ConfirmNever,
		ActionComplete: tool.ConfirmAlways, ActionListMine: tool.ConfirmNever,
	}
}

type layer struct{ cfg Config }

type createArgs struct {
	Title       string          `json:"title"`
	Assignee    *string         `json:"assignee"`
	DueISO      *string         `json:"dueIso"`
	Column      *string         `json:"column"`
	Description *string         `json:"description"`
	Attachment  json.RawMessage `json:"attachment"`
}

type updateArgs struct {
	Card        string  `json:"card"`
	Title       *string `json:"title"`
	Assignee    *string `json:"assignee"`
	DueISO      *string `json:"dueIso"`
	Column      *string `json:"column"`
	Description *string `json:"description"`
}

func (l *layer) create(ctx context.Context, call tool.Call) tool.Result {
	c, rb := call.Caller, l.cfg.Reply
	var a createArgs
	if r := rb.DecodeArgs(call, &a); r != nil {
		return *r
	}
	v := Create{Title: strings.Join(strings.Fields(a.Title), " "), Assignee: reply.Opt(a.Assignee), Due: reply.Opt(a.DueISO),
		Column: reply.Opt(a.Column), Description: reply.Opt(a.Description)}
	if string(a.Attachment) != "null" {
		v.Attachment = a.Attachment
	}
	if v.Title == "" {
		return rb.Failure("title", "title is empty", reply.Tr(c, "У задачи нет названия.", "The task has no title."))
	}
	if r := rb.CheckFields(c, reply.MaxLen("title", v.Title, MaxTitle), reply.MaxLen("description", v.Description, MaxDescription),
		reply.MaxLen("assignee", v.Assignee, MaxName), reply.MaxLen("column", v.Column, MaxName),
		reply.MaxLen("dueIso", v.Due, MaxDue)); r != nil {
		return *r
	}
	if r := checkDue(rb, c, v.Due); r != nil {
		return *r
	}
	return l.cfg.Backend.Create(ctx, call, v)
}

func (l *layer) update(ctx context.Context, call tool.Call) tool.Result {
	c, rb := call.Caller, l.cfg.Reply
	var a updateArgs
	if r := rb.DecodeArgs(call, &a); r != nil {
		return *r
	}
	v := Update{Card: a.Card, Title: strings.Join(strings.Fields(reply.Opt(a.Title)), " "), Assignee: reply.Opt(a.Assignee),
		Due: reply.Opt(a.DueISO), Column: reply.Opt(a.Column), Description: reply.Opt(a.Description)}
	if r := rb.CheckFields(c, reply.MaxLen("card", v.Card, MaxCardRef), reply.MaxLen("title", v.Title, MaxTitle),
		reply.MaxLen("description", v.Description, MaxDescription), reply.MaxLen("assignee", v.Assignee, MaxName),
		reply.MaxLen("column", v.Column, MaxName), reply.MaxLen("dueIso", v.Due, MaxDue)); r != nil {
		return *r
	}
	if v.Title == "" && v.Due == "" && v.Description == "" && v.Assignee == "" && v.Column == "" {
		return rb.Failure("", "update_task names no field to change (title, assignee, dueIso, column or description)",
			reply.Tr(c, "Не указано, что изменить в задаче.", "Nothing to change was given."))
	}
	if r := checkDue(rb, c, v.Due); r != nil {
		return *r
	}
	return l.cfg.Backend.Update(ctx, call, v)
}

func (l *layer) comment(ctx context.Context, call tool.Call) tool.Result {
	c, rb := call.Caller, l.cfg.Reply
	var a struct {
		Card string `json:"card"`
		Text string `json:"text"`
	}
	if r := rb.DecodeArgs(call, &a); r != nil {
		return *r
	}
	text := strings.TrimSpace(a.Text)
	if text == "" {
		return rb.Failure("text", "text is empty", reply.Tr(c, "Пустой комментарий.", "The comment is empty."))
	}
	if r := rb.CheckFields(c, reply.MaxLen("card", a.Card, MaxCardRef), reply.MaxLen("text", text, MaxComment)); r != nil {
		return *r
	}
	return l.cfg.Backend.Comment(ctx, call, Comment{Card: a.Card, Text: text})
}

func (l *layer) complete(ctx context.Context, call tool.Call) tool.Result {
	c, rb := call.Caller, l.cfg.Reply
	var a struct {
		Card string `json:"card"`
	}
	if r := rb.DecodeArgs(call, &a); r != nil {
		return *r
	}
	if r := rb.CheckFields(c, reply.MaxLen("card", a.Card, MaxCardRef)); r != nil {
		return *r
	}
	return l.cfg.Backend.Complete(ctx, call, Complete{Card: a.Card})
}

func (l *layer) listMine(ctx context.Context, call tool.Call) tool.Result {
	var a struct{}
	if r := l.cfg.Reply.DecodeArgs(call, &a); r != nil {
		return *r
	}
	return l.cfg.Backend.ListMine(ctx, call)
}

// checkDue refuses a due value that is neither a date "2006-01-02" nor an
// RFC 3339 time.
func checkDue(rb reply.Builder, c tool.Caller, due string) *tool.Result {
	if due == "" {
		return nil
	}
	if _, err := time.Parse(time.DateOnly, due); err == nil {
		return nil
	}
	if _, err := time.Parse(time.RFC3339, due); err == nil {
		return nil
	}
	r := rb.Failure("dueIso",
		fmt.Sprintf("dueIso %q is neither a date YYYY-MM-DD nor an RFC 3339 time such as 2026-12-01T15:00:00+03:00", due),
		reply.Tr(c, fmt.Sprintf("Срок «%s» не распознан: нужна дата ГГГГ-ММ-ДД или время RFC 3339 (например, 2026-12-01T15:00:00+03:00).", due),
			fmt.Sprintf("The due date %q is not a YYYY-MM-DD date or an RFC 3339 time (such as 2026-12-01T15:00:00+03:00).", due)))
	return &r
}

// Updated is a card after an update, as its report names it: the due date
// as the board shows it, the assignee ("" for nobody, unless the board
// words that itself), the column or list.
type Updated struct {
	Title, URL, Due, Assignee, Column string
	Done                              bool
}

// ColumnWord is how a board calls its columns in an update's report:
// "колонка «X»" / "column \"X\"" on the embedded board, "список «X»" /
// "list \"X\"" on Trello.
type ColumnWord struct{ RU, EN string }

// UpdatedText reports an update of the fields changed ("title",
// "description", "due", "assignee", "column", "status"), or that nothing
// changed.
func UpdatedText(c tool.Caller, v Updated, changed []string, column ColumnWord) string {
	if len(changed) == 0 {
		return reply.Tr(c, fmt.Sprintf("Задача «%s» не изменилась%s", v.Title, Link(v.URL)),
			fmt.Sprintf("Task %q is unchanged%s", v.Title, Link(v.URL)))
	}
	parts := make([]string, 0, len(changed))
	for _, f := range changed {
		switch f {
		case "title":
			parts = append(parts, reply.Tr(c, "название", "title"))
		case "description":
			parts = append(parts, reply.Tr(c, "описание", "description"))
		case "due":
			parts = append(parts, reply.Tr(c, "срок до ", "due ")+v.Due)
		case "assignee":
			parts = append(parts, reply.Tr(c, "исполнитель ", "assignee ")+v.Assignee)
		case "column":
			parts = append(parts, reply.Tr(c, column.RU+" «"+v.Column+"»", column.EN+" \""+v.Column+"\""))
		case "status":
			if v.Done {
				parts = append(parts, reply.Tr(c, "выполнена", "done"))
			} else {
				parts = append(parts, reply.Tr(c, "снова открыта", "reopened"))
			}
		}
	}
	return reply.Tr(c, fmt.Sprintf("Задача «%s» обновлена: %s%s", v.Title, strings.Join(parts, ", "), Link(v.URL)),
		fmt.Sprintf("Updated task %q: %s%s", v.Title, strings.Join(parts, ", "), Link(v.URL)))
}

// NoMember is the answer when query matches no board member; members are
// the labels of the members there are.
func NoMember(rb reply.Builder, c tool.Caller, query string, members []string) tool.Result {
	list := strings.Join(members, ", ")
	if list == "" {
		list = reply.Tr(c, "нет участников", "none")
	}
	return rb.NotFound("assignee", reply.Tr(c,
		fmt.Sprintf("Не нашёл участника «%s» на доске. Участники: %s.", query, list),
		fmt.Sprintf("No board member matches %q. Members: %s.", query, list)))
}

// SeveralMembers is the answer when query matches several members, with
// their labels as the candidates.
func SeveralMembers(rb reply.Builder, c tool.Caller, query string, labels []string) tool.Result {
	return rb.Ambiguous("assignee", reply.Tr(c,
		fmt.Sprintf("Под «%s» подходят несколько участников: %s. Кого вы имеете в виду?", query, strings.Join(labels, ", ")),
		fmt.Sprintf("Several members match %q: %s. Which one do you mean?", query, strings.Join(labels, ", "))), labels)
}

// SeveralCards is the answer when the card query shown matches n cards:
// cands are the first of them (at most MaxCandidates) as candidates, and
// quoted the same as the text names them; cardsRU is the board's word for
// cards in the Russian genitive plural ("задач", "карточек").
func SeveralCards(rb reply.Builder, c tool.Caller, shown, cardsRU string, cands, quoted []string, n int) tool.Result {
	more := ""
	if n > MaxCandidates {
		more = reply.Tr(c, fmt.Sprintf(" и ещё %d", n-MaxCandidates), fmt.Sprintf(" and %d more", n-MaxCandidates))
	}
	return rb.Ambiguous("card", reply.Tr(c,
		fmt.Sprintf("По запросу «%s» нашлось несколько %s: %s%s. Какую вы имеете в виду?", shown, cardsRU, strings.Join(quoted, ", "), more),
		fmt.Sprintf("Several cards match %q: %s%s. Which one do you mean?", shown, strings.Join(quoted, ", "), more)), cands)
}

// Listed is one card of list_my_tasks as its text shows it: the due date
// as the board shows it, "" for none.
type Listed struct {
	Title, Column, Due, URL string
	// Unassigned marks a card of nobody's that the caller created.
	Unassigned bool
}

// ListText is list_my_tasks' text: a header with the total, a line a card
// shown, and how many more there are.
func ListText(c tool.Caller, cards []Listed, total int) string {
	var b strings.Builder
	if total == 0 {
		b.WriteString(reply.Tr(c, "У вас нет открытых задач.", "You have no open tasks."))
	} else {
		b.WriteString(reply.Tr(c, fmt.Sprintf("Ваши открытые задачи (%d):", total), fmt.Sprintf("Your open tasks (%d):", total)))
	}
	for i, card := range cards {
		fmt.Fprintf(&b, "\n%d. «%s» — %s", i+1, card.Title, card.Column)
		if card.Due != "" {
			b.WriteString(reply.Tr(c, ", до ", ", due ") + card.Due)
		}
		if card.Unassigned {
			b.WriteString(reply.Tr(c, " (без исполнителя, создана вами)", " (no assignee; you created it)"))
		}
		b.WriteString(Link(card.URL))
	}
	if total > len(cards) {
		fmt.Fprintf(&b, "\n%s", reply.Tr(c, fmt.Sprintf("…и ещё %d", total-len(cards)), fmt.Sprintf("…and %d more", total-len(cards))))
	}
	return b.String()
}

// UnassignedNote is the line after a list of listed cards that counts
// the other open cards nobody is assigned to; empty for none.
func UnassignedNote(c tool.Caller, listed, n int) string {
	switch {
	case n == 0:
		return ""
	case listed == 0:
		return "\n" + reply.Tr(c, fmt.Sprintf("Открытых задач без исполнителя на доске: %d.", n),
			fmt.Sprintf("%d open %s on the board %s no assignee.", n, plural(n, "card", "cards"), plural(n, "has", "have")))
	}
	return "\n" + reply.Tr(c, fmt.Sprintf("Других открытых задач без исполнителя на доске: %d.", n),
		fmt.Sprintf("%d more open %s on the board %s no assignee.", n, plural(n, "card", "cards"), plural(n, "has", "have")))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// ListResult is list_my_tasks' result: the cards as the board views them,
// the total, and whether the list was cut.
func ListResult[V any](rb reply.Builder, views []V, total int, text string) tool.Result {
	return rb.OK(struct {
		Cards     []V  `json:"cards"`
		Total     int  `json:"total"`
		Truncated bool `json:"truncated,omitempty"`
	}{views, total, total > len(views)}, text)
}

// Link is " — url" after a card's words, or nothing when the board prints
// no links (no server serves its pages).
func Link(url string) string {
	if url == "" {
		return ""
	}
	return " — " + url
}

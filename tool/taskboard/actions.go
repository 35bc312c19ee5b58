package taskboard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/arbiterhq/arbiter/tool"
)

// Argument limits, in characters; the schemas state the same.
const (
	maxTitle       = 200
	maxDescription = 4000
	maxName        = 100
	maxDue         = 40
	maxCardRef     = 500
	maxComment     = 4000
)

// maxListCards bounds the cards list_my_tasks returns.
const maxListCards = 30

type actionDef struct {
	title       string
	description string
	risk        tool.Risk
	schema      string
	maxResult   int
	// attachment: the action takes the user's stored file (see
	// tool.Spec.AttachmentArg).
	attachment bool
}

var actionDefs = map[string]actionDef{
	ActionCreate: {
		title: "Создать задачу",
		description: "Create a card on the team task board. assignee is a board member " +
			"(full name, first name or id; \"me\" for the caller); leave it null for an unassigned card, never guess one. " +
			"dueIso is a date YYYY-MM-DD or an RFC 3339 time, null for no due date. column defaults to the first column. " +
			"attachment: \"last\" to attach the file the user sent earlier in this conversation (only when they ask), else null.",
		risk:       tool.RiskWriteSafe,
		attachment: true,
		schema: `{
  "type": "object",
  "properties": {
    "title": {"type": "string", "minLength": 1, "maxLength": 200, "description": "Card title"},
    "assignee": {"type": ["string", "null"], "maxLength": 100, "description": "Board member: name, first name or id; \"me\" for the caller; null for nobody"},
    "dueIso": {"type": ["string", "null"], "maxLength": 40, "description": "Due date YYYY-MM-DD or RFC 3339 time; null for none"},
    "column": {"type": ["string", "null"], "maxLength": 100, "description": "Column name; null for the first column"},
    "description": {"type": ["string", "null"], "maxLength": 4000, "description": "Card description"},
    "attachment": ` + tool.AttachmentSchema + `
  },
  "required": ["title"],
  "additionalProperties": false
}`,
	},
	ActionUpdate: {
		title: "Изменить задачу",
		description: "Change a card's title, assignee, due date, column or description. card is a card id, a card URL or the card's title. " +
			"Null, empty or absent fields stay unchanged. Moving a card to the last column marks it done; moving it out reopens it.",
		risk: tool.RiskWriteSafe,
		schema: `{
  "type": "object",
  "properties": {
    "card": {"type": "string", "minLength": 1, "maxLength": 500, "description": "Card id, card URL or title"},
    "title": {"type": ["string", "null"], "maxLength": 200, "description": "New title"},
    "assignee": {"type": ["string", "null"], "maxLength": 100, "description": "New assignee: name, first name or id; \"me\" for the caller"},
    "dueIso": {"type": ["string", "null"], "maxLength": 40, "description": "New due date YYYY-MM-DD or RFC 3339 time"},
    "column": {"type": ["string", "null"], "maxLength": 100, "description": "Column to move the card to"},
    "description": {"type": ["string", "null"], "maxLength": 4000, "description": "New description"}
  },
  "required": ["card"],
  "additionalProperties": false
}`,
	},
	ActionComment: {
		title:       "Прокомментировать задачу",
		description: "Add a comment to a card. card is a card id, a card URL or the card's title.",
		risk:        tool.RiskWriteSafe,
		schema: `{
  "type": "object",
  "properties": {
    "card": {"type": "string", "minLength": 1, "maxLength": 500, "description": "Card id, card URL or title"},
    "text": {"type": "string", "minLength": 1, "maxLength": 4000, "description": "Comment text"}
  },
  "required": ["card", "text"],
  "additionalProperties": false
}`,
	},
	ActionComplete: {
		title:       "Завершить задачу",
		description: "Mark a card done and move it to the last column. card is a card id, a card URL or the card's title.",
		risk:        tool.RiskWriteSafe,
		schema: `{
  "type": "object",
  "properties": {
    "card": {"type": "string", "minLength": 1, "maxLength": 500, "description": "Card id, card URL or title"}
  },
  "required": ["card"],
  "additionalProperties": false
}`,
	},
	ActionListMine: {
		title:       "Мои задачи",
		description: "List the caller's open cards with id, title, column, due date and URL.",
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

func attachmentArg(accepts bool) string {
	if accepts {
		return "attachment"
	}
	return ""
}

func (b *Board) newAction(name string, run func(context.Context, tool.Call) tool.Result) *action {
	d := actionDefs[name]
	return &action{
		spec: tool.Spec{
			Name:           name,
			Title:          d.title,
			Description:    d.description,
			InputSchema:    json.RawMessage(d.schema),
			Risk:           d.risk,
			Confirm:        b.confirm[name],
			MaxResultBytes: d.maxResult,
			Idempotent:     d.risk.Writes(),
			AttachmentArg:  attachmentArg(d.attachment),
		},
		run: run,
	}
}

// Spec describes the action.
func (a *action) Spec() tool.Spec { return a.spec }

// Call runs the action for call.Caller's tenant. Every outcome of a call
// that ran, including bad arguments and database failures, is a Result;
// the error is non-nil only when the call carries no tenant or user, which
// would leave the board unable to scope it.
func (a *action) Call(ctx context.Context, call tool.Call) (tool.Result, error) {
	if call.Caller.TenantID == "" || call.Caller.UserID == "" {
		return tool.Result{}, fmt.Errorf("taskboard %s: caller has no tenant or user id", a.spec.Name)
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
func (b *Board) ok(data any, text string) tool.Result {
	raw, err := json.Marshal(data)
	if err != nil {
		return b.failure("", "encode result: "+err.Error(), "не удалось сформировать ответ доски")
	}
	return tool.Result{Status: tool.StatusOK, Data: raw, Text: text, Source: SourceName, ObservedAt: b.now()}
}

// failure is a Result with StatusError: errText for the model and the
// journal, human (in the caller's language) for the reply.
func (b *Board) failure(field, errText, human string) tool.Result {
	return tool.Result{Status: tool.StatusError, Error: errText, Text: human, Field: field, Source: SourceName, ObservedAt: b.now()}
}

func (b *Board) notFound(field, text string) tool.Result {
	return tool.Result{Status: tool.StatusNotFound, Text: text, Field: field, Source: SourceName, ObservedAt: b.now()}
}

func (b *Board) ambiguous(field, text string, candidates []string) tool.Result {
	return tool.Result{Status: tool.StatusAmbiguous, Text: text, Field: field, Candidates: candidates, Source: SourceName, ObservedAt: b.now()}
}

// storageFailure turns a database or context error into a Result: a
// timeout is an error, never "not found".
func (b *Board) storageFailure(c tool.Caller, err error) tool.Result {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return b.failure("", "task board timed out: "+err.Error(),
			tr(c, "Доска задач не ответила вовремя, действие не выполнено.", "The task board did not answer in time; nothing was done."))
	}
	return b.failure("", "task board storage failed: "+err.Error(),
		tr(c, "Ошибка хранилища доски задач, действие не выполнено.", "The task board storage failed; nothing was done."))
}

// decodeArgs decodes call arguments strictly (unknown fields rejected);
// empty or null arguments decode as {}. A failure is returned as a Result.
func (b *Board) decodeArgs(call tool.Call, v any) *tool.Result {
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
		r := b.failure("", "invalid arguments: "+err.Error(),
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
func (b *Board) checkFields(c tool.Caller, fields ...field) *tool.Result {
	for _, f := range fields {
		if n := utf8.RuneCountInString(f.value); n > f.max {
			r := b.failure(f.name, fmt.Sprintf("%s is %d characters, more than the limit of %d", f.name, n, f.max),
				tr(c, fmt.Sprintf("Поле %s слишком длинное (%d символов, максимум %d).", f.name, n, f.max),
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

// checkDue validates a due value: a date "2006-01-02" or an RFC 3339 time.
func (b *Board) checkDue(c tool.Caller, due string) *tool.Result {
	if due == "" {
		return nil
	}
	if _, err := time.Parse(time.DateOnly, due); err == nil {
		return nil
	}
	if _, err := time.Parse(time.RFC3339, due); err == nil {
		return nil
	}
	r := b.failure("dueIso",
		fmt.Sprintf("dueIso %q is neither a date YYYY-MM-DD nor an RFC 3339 time such as 2026-12-01T15:00:00+03:00", due),
		tr(c, fmt.Sprintf("Срок «%s» не распознан: нужна дата ГГГГ-ММ-ДД или время RFC 3339 (например, 2026-12-01T15:00:00+03:00).", due),
			fmt.Sprintf("The due date %q is not a YYYY-MM-DD date or an RFC 3339 time (such as 2026-12-01T15:00:00+03:00).", due)))
	return &r
}

// resolveAssignee matches q against the live members; "me" and its Russian
// forms mean the caller. A failure is returned as a Result.
func (b *Board) resolveAssignee(c tool.Caller, members []Member, q string) (Member, *tool.Result) {
	if isSelf(q) {
		for _, m := range members {
			if m.ID == c.UserID {
				return m, nil
			}
		}
		name := strings.TrimSpace(c.Name)
		if name == "" {
			name = c.UserID
		}
		return Member{ID: c.UserID, Name: name}, nil
	}
	found := matchMembers(members, q)
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		names := make([]string, len(members))
		for i, m := range members {
			names[i] = m.Name
		}
		list := strings.Join(names, ", ")
		if list == "" {
			list = tr(c, "нет участников", "none")
		}
		r := b.notFound("assignee", tr(c,
			fmt.Sprintf("Не нашёл участника «%s» на доске. Участники: %s.", q, list),
			fmt.Sprintf("No board member matches %q. Members: %s.", q, list)))
		return Member{}, &r
	}
	names := make([]string, len(found))
	for i, m := range found {
		names[i] = m.Name
	}
	r := b.ambiguous("assignee", tr(c,
		fmt.Sprintf("Под «%s» подходят несколько участников: %s. Кого вы имеете в виду?", q, strings.Join(names, ", ")),
		fmt.Sprintf("Several members match %q: %s. Which one do you mean?", q, strings.Join(names, ", "))), names)
	return Member{}, &r
}

// resolveColumn matches q against the board's columns. A failure is
// returned as a Result.
func (b *Board) resolveColumn(c tool.Caller, cols []string, q string) (string, *tool.Result) {
	found := matchColumns(cols, q)
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		r := b.notFound("column", tr(c,
			fmt.Sprintf("Нет колонки «%s». Колонки доски: %s.", q, strings.Join(cols, ", ")),
			fmt.Sprintf("No column matches %q. Columns: %s.", q, strings.Join(cols, ", "))))
		return "", &r
	}
	r := b.ambiguous("column", tr(c,
		fmt.Sprintf("Под «%s» подходят несколько колонок: %s. Какую вы имеете в виду?", q, strings.Join(found, ", ")),
		fmt.Sprintf("Several columns match %q: %s. Which one do you mean?", q, strings.Join(found, ", "))), found)
	return "", &r
}

// cardView is a card as Result.Data shows it.
type cardView struct {
	ID         string           `json:"id"`
	Title      string           `json:"title"`
	URL        string           `json:"url"`
	Assignee   string           `json:"assignee,omitempty"`
	Due        string           `json:"due,omitempty"`
	Column     string           `json:"column"`
	Status     CardStatus       `json:"status"`
	Attachment *tool.Attachment `json:"attachment,omitempty"`
}

func view(c *Card) cardView {
	return cardView{ID: c.ID, Title: c.Title, URL: c.URL, Assignee: c.AssigneeName, Due: c.Due, Column: c.Column, Status: c.Status, Attachment: c.Attachment}
}

// doneColumn is the column that means "done": the last one, when the board
// has more than one.
func doneColumn(cols []string) string {
	if len(cols) < 2 {
		return ""
	}
	return cols[len(cols)-1]
}

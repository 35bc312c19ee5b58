package taskboard

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

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
	maxDue         = 40
	maxCardRef     = 500
	maxComment     = 4000
)

// maxListCards bounds the cards list_my_tasks returns.
const maxListCards = 30

var actionDefs = map[string]action.Def{
	ActionCreate: {
		Title: "Создать задачу",
		Description: "Create a card on the team task board. assignee is a board member " +
			"(full name, first name or id; \"me\" for the caller); leave it null for an unassigned card, never guess one. " +
			"dueIso is a date YYYY-MM-DD or an RFC 3339 time, null for no due date. column defaults to the first column. " +
			"attachment: \"last\" to attach the file the user sent earlier in this conversation (only when they ask), else null.",
		Risk: tool.RiskWriteSafe,
		Schema: `{
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
		Title: "Изменить задачу",
		Description: "Change a card's title, assignee, due date, column or description. card is a card id, a card URL or the card's title. " +
			"Null, empty or absent fields stay unchanged. Moving a card to the last column marks it done; moving it out reopens it.",
		Risk: tool.RiskWriteSafe,
		Schema: `{
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
		Title:       "Прокомментировать задачу",
		Description: "Add a comment to a card. card is a card id, a card URL or the card's title.",
		Risk:        tool.RiskWriteSafe,
		Schema: `{
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
		Title:       "Завершить задачу",
		Description: "Mark a card done and move it to the last column. card is a card id, a card URL or the card's title.",
		Risk:        tool.RiskWriteSafe,
		Schema: `{
  "type": "object",
  "properties": {
    "card": {"type": "string", "minLength": 1, "maxLength": 500, "description": "Card id, card URL or title"}
  },
  "required": ["card"],
  "additionalProperties": false
}`,
	},
	ActionListMine: {
		Title:       "Мои задачи",
		Description: "List the caller's open cards with id, title, column, due date and URL.",
		Risk:        tool.RiskRead,
		Schema:      `{"type": "object", "properties": {}, "additionalProperties": false}`,
		MaxResult:   32 << 10,
	},
}

// attachmentArgOf names create_task's attachment argument, which takes
// the user's stored file (see tool.Spec.AttachmentArg).
func attachmentArgOf(action string) string {
	if action == ActionCreate {
		return "attachment"
	}
	return ""
}

// newAction is the board operation name as a tool.Tool that runs calls
// for the caller's tenant with run.
func (b *Board) newAction(name string, run func(context.Context, tool.Call) tool.Result) *action.Tool {
	spec := actionDefs[name].Spec(name, b.confirm[name])
	spec.AttachmentArg = attachmentArgOf(name)
	t := action.New("taskboard", spec, run)
	if spec.Risk.Writes() {
		t.WithPreview(b.preview)
	}
	return t
}

// storageFailure turns a database or context error into a Result: a
// timeout is an error, never "not found".
func (b *Board) storageFailure(c tool.Caller, err error) tool.Result {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return b.reply.Failure("", "task board timed out: "+err.Error(),
			reply.Tr(c, "Доска задач не ответила вовремя, действие не выполнено.", "The task board did not answer in time; nothing was done."))
	}
	return b.reply.Failure("", "task board storage failed: "+err.Error(),
		reply.Tr(c, "Ошибка хранилища доски задач, действие не выполнено.", "The task board storage failed; nothing was done."))
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
	r := b.reply.Failure("dueIso",
		fmt.Sprintf("dueIso %q is neither a date YYYY-MM-DD nor an RFC 3339 time such as 2026-12-01T15:00:00+03:00", due),
		reply.Tr(c, fmt.Sprintf("Срок «%s» не распознан: нужна дата ГГГГ-ММ-ДД или время RFC 3339 (например, 2026-12-01T15:00:00+03:00).", due),
			fmt.Sprintf("The due date %q is not a YYYY-MM-DD date or an RFC 3339 time (such as 2026-12-01T15:00:00+03:00).", due)))
	return &r
}

// resolveAssignee matches q against the live members; "me" and its Russian
// forms mean the caller. A failure is returned as a Result.
func (b *Board) resolveAssignee(c tool.Caller, members []Member, q string) (Member, *tool.Result) {
	if names.IsSelf(q) {
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
		all := make([]string, len(members))
		for i, m := range members {
			all[i] = m.Name
		}
		list := strings.Join(all, ", ")
		if list == "" {
			list = reply.Tr(c, "нет участников", "none")
		}
		r := b.reply.NotFound("assignee", reply.Tr(c,
			fmt.Sprintf("Не нашёл участника «%s» на доске. Участники: %s.", q, list),
			fmt.Sprintf("No board member matches %q. Members: %s.", q, list)))
		return Member{}, &r
	}
	cands := make([]string, len(found))
	for i, m := range found {
		cands[i] = m.Name
	}
	r := b.reply.Ambiguous("assignee", reply.Tr(c,
		fmt.Sprintf("Под «%s» подходят несколько участников: %s. Кого вы имеете в виду?", q, strings.Join(cands, ", ")),
		fmt.Sprintf("Several members match %q: %s. Which one do you mean?", q, strings.Join(cands, ", "))), cands)
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
		r := b.reply.NotFound("column", reply.Tr(c,
			fmt.Sprintf("Нет колонки «%s». Колонки доски: %s.", q, strings.Join(cols, ", ")),
			fmt.Sprintf("No column matches %q. Columns: %s.", q, strings.Join(cols, ", "))))
		return "", &r
	}
	r := b.reply.Ambiguous("column", reply.Tr(c,
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

package taskboard

import (
	"fmt"
	"strings"

	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/tool/internal/board"
	"github.com/arbiterhq/arbiter/tool/internal/names"
	"github.com/arbiterhq/arbiter/tool/internal/sqlitex"
	"github.com/arbiterhq/arbiter/tool/reply"
)

// docs are what the model reads of the embedded board's actions.
var docs = board.Docs{
	Create: "Create a card on the team task board. assignee is a board member " +
		"(full name, first name or id; \"me\" for the caller); leave it null for an unassigned card, never guess one. " +
		"dueIso is a date YYYY-MM-DD or an RFC 3339 time, null for no due date. column defaults to the first column. " +
		"attachment: \"last\" to attach the file the user sent earlier in this conversation (only when they ask), else null.",
	Update: "Change a card's title, assignee, due date, column or description. card is a card id, a card URL or the card's title. " +
		"Null, empty or absent fields stay unchanged. Moving a card to the last column marks it done; moving it out reopens it.",
	Comment:     "Add a comment to a card. card is a card id, a card URL or the card's title.",
	Complete:    "Mark a card done and move it to the last column. card is a card id, a card URL or the card's title.",
	ListMine:    "List the caller's open cards with id, title, column, due date and URL.",
	Assignee:    "Board member: name, first name or id; \"me\" for the caller; null for nobody",
	NewAssignee: "New assignee: name, first name or id; \"me\" for the caller",
	Column:      "Column name; null for the first column",
	NewColumn:   "Column to move the card to",
	Card:        "Card id, card URL or title",
}

// storageFailure turns a database or context error into a Result: a
// timeout is an error, never "not found".
func (b *Board) storageFailure(c tool.Caller, err error) tool.Result {
	return sqlitex.Failure(b.reply, err, "task board",
		reply.Tr(c, "Доска задач не ответила вовремя, действие не выполнено.", "The task board did not answer in time; nothing was done."),
		reply.Tr(c, "Ошибка хранилища доски задач, действие не выполнено.", "The task board storage failed; nothing was done."))
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
		r := board.NoMember(b.reply, c, q, all)
		return Member{}, &r
	}
	cands := make([]string, len(found))
	for i, m := range found {
		cands[i] = m.Name
	}
	r := board.SeveralMembers(b.reply, c, q, cands)
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
	URL        string           `json:"url,omitempty"` // none where no server serves the board's pages
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

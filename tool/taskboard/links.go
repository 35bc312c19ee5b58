package taskboard

import (
	"context"
	"errors"
	"strings"

	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/tool/reply"
)

var _ tool.LinkReader = (*Board)(nil)

// ReadLink answers what a card link of this board points to — the card's
// title, description, due date, status and URL, read from the board — or
// ok=false when link is not one of this board's card URLs. A card of
// another tenant is "not found", exactly like a card that does not exist.
func (b *Board) ReadLink(ctx context.Context, c tool.Caller, link string) (tool.Result, bool) {
	prefix := b.baseURL + "/board/c/"
	i := strings.Index(link, prefix)
	if i < 0 {
		return tool.Result{}, false
	}
	id := link[i+len(prefix):]
	if j := strings.IndexAny(id, "/?#"); j >= 0 {
		id = id[:j]
	}
	if id == "" {
		return tool.Result{}, false
	}
	card, err := b.Card(ctx, c.TenantID, strings.ToLower(id))
	switch {
	case errors.Is(err, ErrNotFound):
		return b.reply.NotFound("card", reply.Tr(c, "Карточка по этой ссылке не найдена.", "No card found for this link.")), true
	case err != nil:
		return b.storageFailure(c, err), true
	}
	var text strings.Builder
	text.WriteString("«" + card.Title + "»")
	if card.Description != "" {
		text.WriteString(" — " + card.Description)
	}
	text.WriteString("\n" + reply.Tr(c, "Колонка: ", "Column: ") + card.Column)
	if card.Status == CardDone {
		text.WriteString(reply.Tr(c, " (выполнена)", " (done)"))
	}
	if card.AssigneeName != "" {
		text.WriteString("\n" + reply.Tr(c, "Исполнитель: ", "Assignee: ") + card.AssigneeName)
	}
	if card.Due != "" {
		text.WriteString("\n" + reply.Tr(c, "Срок: ", "Due: ") + card.Due)
	}
	if card.URL != "" {
		text.WriteString("\n" + card.URL)
	}
	v := view(&card)
	return b.reply.OK(struct {
		Card        cardView `json:"card"`
		Description string   `json:"description,omitempty"`
	}{v, card.Description}, text.String()), true
}

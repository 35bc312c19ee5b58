package taskboard

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/tool/reply"
)

// preview resolves what a call would change against the live board,
// changing nothing (tool.Previewer): its card, assignee and column, as the
// call itself will resolve them. Arguments it cannot decode are left to the
// call to report.
func (b *Board) preview(ctx context.Context, call tool.Call) (tool.Preview, error) {
	c := call.Caller
	var a struct {
		Card     string  `json:"card"`
		Assignee *string `json:"assignee"`
		Column   *string `json:"column"`
	}
	if json.Unmarshal(call.Args, &a) != nil {
		return tool.Preview{}, nil
	}
	p := tool.Preview{Fields: map[string]string{}}
	if q := reply.Opt(a.Assignee); q != "" {
		m, r := b.resolveAssignee(c, b.Members(c.TenantID), q)
		if r != nil {
			p.Problem = r
			return p, nil
		}
		p.Fields["assignee"] = fmt.Sprintf("%s (%s)", m.Name, m.ID)
	}
	if strings.TrimSpace(a.Card) == "" && reply.Opt(a.Column) == "" {
		return p, nil
	}
	cols, err := b.boardColumns(ctx, b.db, c.TenantID)
	if err != nil {
		return p, err
	}
	if q := reply.Opt(a.Column); q != "" {
		col, r := b.resolveColumn(c, cols, q)
		if r != nil {
			p.Problem = r
			return p, nil
		}
		p.Fields["column"] = col
	}
	if strings.TrimSpace(a.Card) != "" {
		card, r, err := b.resolveCard(ctx, b.db, c, a.Card)
		switch {
		case err != nil:
			return p, err
		case r != nil:
			p.Problem = r
		default:
			p.Fields["card"] = cardLabel(c, card)
		}
	}
	return p, nil
}

// cardLabel names a card as a confirmation shows it: its title, id and
// where it stands.
func cardLabel(c tool.Caller, card *Card) string {
	who := reply.Tr(c, "без исполнителя", "unassigned")
	if card.AssigneeName != "" {
		who = card.AssigneeName
	}
	return reply.Tr(c, fmt.Sprintf("«%s» (%s), колонка «%s», %s", card.Title, card.ID, card.Column, who),
		fmt.Sprintf("%q (%s), column %q, %s", card.Title, card.ID, card.Column, who))
}

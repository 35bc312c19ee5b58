package trello

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/tool/reply"
)

// preview resolves the card a call names, read from Trello now, changing
// nothing (tool.Previewer). A call without a card, or a caller without a
// connection, is left for the call itself to answer.
func (c *Client) preview(ctx context.Context, call tool.Call) (tool.Preview, error) {
	var a struct {
		Card string `json:"card"`
	}
	if json.Unmarshal(call.Args, &a) != nil || strings.TrimSpace(a.Card) == "" {
		return tool.Preview{}, nil
	}
	s, ok := c.session(call.Caller)
	if !ok {
		return tool.Preview{}, nil
	}
	card, r := s.resolveCard(ctx, a.Card)
	switch {
	case r != nil && r.Status == tool.StatusError:
		return tool.Preview{}, errors.New(r.Error)
	case r != nil:
		return tool.Preview{Problem: r}, nil
	}
	list := ""
	if card.List != nil {
		list = card.List.Name
	}
	return tool.Preview{Fields: map[string]string{"card": reply.Tr(call.Caller,
		fmt.Sprintf("«%s» (%s), список «%s»", card.Name, card.ShortLink, list),
		fmt.Sprintf("%q (%s), list %q", card.Name, card.ShortLink, list))}}, nil
}

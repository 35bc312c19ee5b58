package trello

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/tool/internal/board"
	"github.com/arbiterhq/arbiter/tool/internal/names"
	"github.com/arbiterhq/arbiter/tool/reply"
)

type attachmentArg struct {
	Name *string `json:"name"`
	URL  *string `json:"url"`
	File *string `json:"file"`
}

// attachment is a validated attachment argument.
type attachment struct {
	name, url, file string
}

// cardListQuery asks a card read for the card's list name too.
var cardListQuery = url.Values{"list": {"true"}}

// sessionCard is the caller's session and the card ref names in it
// (resolveCard), or the Result that says why there is none.
func (c *Client) sessionCard(ctx context.Context, caller tool.Caller, ref string) (*session, *apiCard, *tool.Result) {
	s, ok := c.session(caller)
	if !ok {
		r := c.notConnected(caller)
		return nil, nil, &r
	}
	card, r := s.resolveCard(ctx, ref)
	return s, card, r
}

// resolveCard finds the board card named by ref (a card URL, a short link
// or id, a title with a trailing "(shortLink)", or a title among the open
// cards) and reads it from Trello now, so a write acts on its current
// state. It returns the card or a not_found, ambiguous or error Result.
func (s *session) resolveCard(ctx context.Context, ref string) (*apiCard, *tool.Result) {
	c, caller := s.c, s.caller
	p := parseCardRef(ref)
	shown := strings.TrimSpace(ref)
	if p.boardURL {
		r := c.reply.NotFound("card", reply.Tr(caller, fmt.Sprintf("%s — ссылка на доску, а не на карточку.", shown),
			fmt.Sprintf("%s is a board link, not a card link.", shown)))
		return nil, &r
	}
	if p.id != "" {
		card, err := s.card(ctx, p.id, cardListQuery)
		if err == nil && p.bareTitle != "" && !names.TitleAgrees(card.Name, p.bareTitle) {
			// "Buy milk (AbCd1234)" where AbCd1234 is another card: the
			// words and the id disagree, and neither wins silently.
			r := c.reply.Ambiguous("card", reply.Tr(caller,
				fmt.Sprintf("«%s»: по ссылке %s это карточка «%s», а по названию — нет. Какую карточку вы имеете в виду?", shown, card.ShortLink, card.Name),
				fmt.Sprintf("%q: %s is the card %q, which the words do not name. Which card do you mean?", shown, card.ShortLink, card.Name)),
				[]string{fmt.Sprintf("%s (%s)", card.Name, card.ShortLink)})
			return nil, &r
		}
		if err == nil {
			return s.checkCard(ctx, card, shown)
		}
		if !isNotFound(err) {
			r := s.failure(err)
			return nil, &r
		}
		if p.fromURL {
			r := c.reply.NotFound("card", reply.Tr(caller, fmt.Sprintf("В Trello нет карточки по ссылке %s.", shown),
				fmt.Sprintf("Trello has no card at %s.", shown)))
			return nil, &r
		}
	}
	cards, err := s.openCards(ctx)
	if err != nil {
		r := s.failure(err)
		return nil, &r
	}
	found := matchCardTitles(cards, p.title)
	if len(found) == 0 && p.bareTitle != "" {
		found = matchCardTitles(cards, p.bareTitle)
	}
	switch len(found) {
	case 0:
		r := c.reply.NotFound("card", reply.Tr(caller, fmt.Sprintf("Не нашёл открытую карточку «%s» на доске.", shown),
			fmt.Sprintf("No open card matches %q on the board.", shown)))
		return nil, &r
	case 1:
		card, err := s.card(ctx, found[0].ID, cardListQuery)
		if err != nil {
			if isNotFound(err) {
				r := c.reply.NotFound("card", reply.Tr(caller, fmt.Sprintf("Карточка «%s» только что исчезла с доски.", found[0].Name),
					fmt.Sprintf("Card %q has just disappeared from the board.", found[0].Name)))
				return nil, &r
			}
			r := s.failure(err)
			return nil, &r
		}
		return s.checkCard(ctx, card, shown)
	}
	cands := make([]string, 0, min(len(found), board.MaxCandidates))
	quoted := make([]string, 0, cap(cands))
	for _, k := range found[:min(len(found), board.MaxCandidates)] {
		cands = append(cands, fmt.Sprintf("%s (%s)", k.Name, k.ShortLink))
		quoted = append(quoted, fmt.Sprintf("«%s» (%s)", k.Name, k.ShortLink))
	}
	r := board.SeveralCards(c.reply, caller, shown, "карточек", cands, quoted, len(found))
	return nil, &r
}

// checkCard accepts a card only when it is on this board and not archived.
func (s *session) checkCard(ctx context.Context, card *apiCard, shown string) (*apiCard, *tool.Result) {
	c, caller := s.c, s.caller
	boardID, err := s.boardID(ctx)
	if err != nil {
		r := s.failure(err)
		return nil, &r
	}
	if !strings.EqualFold(card.IDBoard, boardID) {
		r := c.reply.NotFound("card", reply.Tr(caller, fmt.Sprintf("Карточка %s находится не на подключённой доске.", shown),
			fmt.Sprintf("Card %s is not on the connected board.", shown)))
		return nil, &r
	}
	if card.Closed {
		r := c.reply.NotFound("card", reply.Tr(caller, fmt.Sprintf("Карточка «%s» в архиве — изменять её не буду.", card.Name),
			fmt.Sprintf("Card %q is archived; it is left alone.", card.Name)))
		return nil, &r
	}
	return card, nil
}

// nestedList is the name of the list a card read with cardListQuery is in.
func nestedList(card *apiCard, lists []apiList) string {
	if n := listName(lists, card.IDList); n != "" {
		return n
	}
	if card.List != nil {
		return card.List.Name
	}
	return ""
}

// updateTask changes the given fields of a card, comparing with the card
// and the board as they are right before the write; null, blank and absent
// fields stay. Moving a card into the done list marks it done, moving it
// out reopens it. Setting a value that is already there changes nothing,
// so a repeat is harmless.
func (c *Client) updateTask(ctx context.Context, call tool.Call, a board.Update) tool.Result {
	caller := call.Caller
	title, desc := a.Title, a.Description
	due, r := c.parseDue(caller, a.Due)
	if r != nil {
		return *r
	}
	s, card, r := c.sessionCard(ctx, caller, a.Card)
	if r != nil {
		return *r
	}
	st, err := s.readBoard(ctx, false)
	if err != nil {
		return s.failure(err)
	}
	doneList, hasDone := c.doneListOf(st.lists)
	wasDone := hasDone && card.IDList == doneList.ID
	from := nestedList(card, st.lists)
	body := map[string]any{}
	var changed []string
	if title != "" && title != card.Name {
		body["name"] = title
		changed = append(changed, "title")
	}
	if desc != "" && desc != stripMarker(card.Desc) {
		body["desc"] = desc + markerBlock(card.Desc)
		changed = append(changed, "description")
	}
	if !due.IsZero() && !sameDue(card.Due, due) {
		body["due"] = trelloTime(due)
		changed = append(changed, "due")
	}
	if q := a.Assignee; q != "" {
		m, r := s.resolveAssignee(st.members, q)
		if r != nil {
			return *r
		}
		if len(card.IDMembers) != 1 || card.IDMembers[0] != m.ID {
			body["idMembers"] = []string{m.ID}
			changed = append(changed, "assignee")
		}
	}
	if q := a.Column; q != "" {
		l, r := s.resolveList(st.lists, q)
		if r != nil {
			return *r
		}
		if l.ID != card.IDList {
			body["idList"] = l.ID
			changed = append(changed, "column")
			switch nowDone := hasDone && l.ID == doneList.ID; {
			case nowDone && !wasDone:
				body["dueComplete"] = true
				changed = append(changed, "status")
			case !nowDone && wasDone:
				body["dueComplete"] = false
				changed = append(changed, "status")
			}
		}
	}
	next := *card
	if len(body) > 0 {
		if err := s.do(ctx, request{method: http.MethodPut, path: "/1/cards/" + url.PathEscape(card.ID), body: body}, &next); err != nil {
			return s.failure(err)
		}
		c.cache.invalidate(caller.TenantID)
	}
	loc := reply.Location(caller)
	v := c.view(&next, nestedList(&next, st.lists), assigneeNames(&next, st.members),
		hasDone && next.IDList == doneList.ID, loc)
	return c.reply.OK(struct {
		Card       cardView `json:"card"`
		Changed    []string `json:"changed"`
		FromColumn string   `json:"from_column,omitempty"`
	}{v, append([]string{}, changed...), from}, updatedText(caller, v, changed, loc))
}

func updatedText(caller tool.Caller, v cardView, changed []string, loc *time.Location) string {
	return board.UpdatedText(caller, board.Updated{Title: v.Title, URL: v.URL, Due: dueText(v.Due, loc), Assignee: v.Assignee,
		Column: v.Column, Done: v.Status == statusDone}, changed, board.ColumnWord{RU: "список", EN: "list"})
}

// commentTask adds a comment to a card. Under an idempotency key it first
// looks for a comment a previous try wrote among the card's latest ones.
func (c *Client) commentTask(ctx context.Context, call tool.Call, a board.Comment) tool.Result {
	caller, text := call.Caller, a.Text
	s, ok := c.session(caller)
	if !ok {
		return c.notConnected(caller)
	}
	key := call.IdempotencyKey
	unlock, err := c.lockKey(ctx, call)
	if err != nil {
		return s.failure(err)
	}
	defer unlock()
	card, r := s.resolveCard(ctx, a.Card)
	if r != nil {
		return *r
	}
	path := "/1/cards/" + url.PathEscape(card.ID) + "/actions/comments"
	if key != "" {
		prev, err := s.markedComment(ctx, card.ID, key)
		if err != nil {
			return s.failure(err)
		}
		if prev != nil {
			return s.commentResult(card, prev, true)
		}
	}
	var act apiAction
	req := request{method: http.MethodPost, path: path, body: map[string]any{"text": withMarker(text, key)}}
	if err := postMarked(ctx, s, req, key, &act, func() (*apiAction, error) { return s.markedComment(ctx, card.ID, key) }); err != nil {
		return s.failure(err)
	}
	if act.Data.Text == "" {
		act.Data.Text = text
	}
	return s.commentResult(card, &act, false)
}

// markedComment returns the card's latest comment carrying key's marker.
func (s *session) markedComment(ctx context.Context, cardID, key string) (*apiAction, error) {
	var acts []apiAction
	err := s.do(ctx, request{method: http.MethodGet, path: "/1/cards/" + url.PathEscape(cardID) + "/actions",
		query: url.Values{"filter": {"commentCard"}}}, &acts)
	if err != nil {
		return nil, err
	}
	for i := range acts {
		if acts[i].Type == "commentCard" && hasMarker(acts[i].Data.Text, key) {
			return &acts[i], nil
		}
	}
	return nil, nil
}

func (s *session) commentResult(card *apiCard, act *apiAction, replayed bool) tool.Result {
	c, caller := s.c, s.caller
	author := strings.TrimSpace(caller.Name)
	if act.MemberCreator != nil && act.MemberCreator.FullName != "" {
		author = act.MemberCreator.FullName
	}
	if author == "" {
		author = caller.UserID
	}
	type commentView struct {
		ID     string `json:"id,omitempty"`
		Author string `json:"author"`
		Text   string `json:"text"`
		At     string `json:"at,omitempty"`
	}
	column := ""
	if card.List != nil {
		column = card.List.Name
	}
	v := c.view(card, column, "", false, reply.Location(caller))
	text := reply.Tr(caller, fmt.Sprintf("Комментарий к задаче «%s» добавлен — %s", v.Title, v.URL),
		fmt.Sprintf("Comment added to task %q — %s", v.Title, v.URL))
	if replayed {
		text = reply.Tr(caller, fmt.Sprintf("Комментарий к задаче «%s» уже был добавлен этим действием — %s", v.Title, v.URL),
			fmt.Sprintf("The comment on task %q was already added by this action — %s", v.Title, v.URL))
	}
	return c.reply.OK(struct {
		Card         cardView    `json:"card"`
		Comment      commentView `json:"comment"`
		AlreadyAdded bool        `json:"already_added,omitempty"`
	}{v, commentView{act.ID, author, stripMarker(act.Data.Text), act.Date}, replayed}, text)
}

// completeTask moves a card to the done list and marks its due date
// complete. The card is read right before the write: one already in the
// done list (moved there by someone since the action was proposed, say) is
// reported as done and left as it is.
func (c *Client) completeTask(ctx context.Context, call tool.Call, a board.Complete) tool.Result {
	caller := call.Caller
	s, card, r := c.sessionCard(ctx, caller, a.Card)
	if r != nil {
		return *r
	}
	lists, err := s.lists(ctx)
	if err != nil {
		return s.failure(err)
	}
	sortLists(lists)
	done, ok := c.doneListOf(lists)
	if !ok {
		want := c.doneList
		if want == "" {
			want = reply.Tr(caller, "последний список (на доске меньше двух)", "the last list (the board has fewer than two)")
		}
		return c.reply.Failure("", "the board has no done list: "+want,
			reply.Tr(caller, "На доске нет списка для выполненных задач: "+want+".", "The board has no done list: "+want+"."))
	}
	from := nestedList(card, lists)
	already := card.IDList == done.ID
	next := *card
	if !already {
		body := map[string]any{"idList": done.ID, "dueComplete": true}
		if err := s.do(ctx, request{method: http.MethodPut, path: "/1/cards/" + url.PathEscape(card.ID), body: body}, &next); err != nil {
			return s.failure(err)
		}
		c.cache.invalidate(caller.TenantID)
	}
	v := c.view(&next, done.Name, "", true, reply.Location(caller))
	text := reply.Tr(caller, fmt.Sprintf("Задача «%s» выполнена и перенесена в «%s» — %s", v.Title, done.Name, v.URL),
		fmt.Sprintf("Task %q is done and moved to %q — %s", v.Title, done.Name, v.URL))
	if already {
		text = reply.Tr(caller, fmt.Sprintf("Задача «%s» уже в «%s» — ничего не менял. %s", v.Title, done.Name, v.URL),
			fmt.Sprintf("Task %q is already in %q; nothing was changed. %s", v.Title, done.Name, v.URL))
	}
	return c.reply.OK(struct {
		Card        cardView `json:"card"`
		AlreadyDone bool     `json:"already_done,omitempty"`
		FromColumn  string   `json:"from_column,omitempty"`
	}{v, already, from}, text)
}

// listMyTasks returns the caller's open cards (not archived, not in the
// done list, due date not complete), earliest due first, read live.
func (c *Client) listMyTasks(ctx context.Context, call tool.Call) tool.Result {
	caller := call.Caller
	s, ok := c.session(caller)
	if !ok {
		return c.notConnected(caller)
	}
	gen := c.cache.generation(caller.TenantID)
	st, err := s.readBoard(ctx, true)
	if err != nil {
		return s.failure(err)
	}
	c.cache.put(caller.TenantID, gen, st, c.now())
	me, r := s.selfMember("", st.members)
	if r != nil {
		return *r
	}
	mine := c.openCardsOf(st, me.ID)
	total := len(mine)
	mine = mine[:min(total, board.MaxListCards)]
	loc := reply.Location(caller)
	views := make([]cardView, len(mine))
	listed := make([]board.Listed, len(mine))
	for i := range mine {
		card := &mine[i]
		views[i] = c.view(card, listName(st.lists, card.IDList), assigneeNames(card, st.members), false, loc)
		listed[i] = board.Listed{Title: card.Name, Column: views[i].Column, URL: card.URL}
		if card.Due != "" {
			listed[i].Due = dueText(card.Due, loc)
		}
	}
	return board.ListResult(c.reply, views, total, board.ListText(caller, listed, total))
}

// openCardsOf returns the open cards of member id that are not done,
// earliest due first (cards without a due date last), then in board order.
func (c *Client) openCardsOf(st *boardState, memberID string) []apiCard {
	return c.openCards(st, func(card apiCard) bool { return slices.Contains(card.IDMembers, memberID) })
}

// openCards are the board's open cards that keep says to, by due date.
func (c *Client) openCards(st *boardState, keep func(apiCard) bool) []apiCard {
	doneID := ""
	if dl, ok := c.doneListOf(st.lists); ok {
		doneID = dl.ID
	}
	var out []apiCard
	for _, card := range st.cards {
		if card.Closed || card.DueComplete || card.IDList == doneID || !keep(card) {
			continue
		}
		out = append(out, card)
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if (a.Due == "") != (b.Due == "") {
			return a.Due != ""
		}
		ta, _ := time.Parse(time.RFC3339, a.Due)
		tb, _ := time.Parse(time.RFC3339, b.Due)
		return ta.Before(tb)
	})
	return out
}

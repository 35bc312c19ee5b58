package trello

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/tool/internal/board"
	"github.com/arbiterhq/arbiter/tool/reply"
)

// createTask creates a card in the named list (the first by default), with
// the assignee and list matched against the board read right before the
// write. Under an idempotency key it first looks for the card a previous
// try created (see the marker documentation) and returns that one. The
// attachment argument is taken to be one of the engine's stored
// attachments, never text the model wrote — the engine enforces that;
// here only its form is checked.
func (c *Client) createTask(ctx context.Context, call tool.Call, a board.Create) tool.Result {
	caller := call.Caller
	title, desc := a.Title, a.Description
	due, r := c.parseDue(caller, a.Due)
	if r != nil {
		return *r
	}
	var arg *attachmentArg
	if len(a.Attachment) > 0 && json.Unmarshal(a.Attachment, &arg) != nil {
		arg = &attachmentArg{} // not an object: refused below as empty
	}
	att, r := c.checkAttachment(caller, arg)
	if r != nil {
		return *r
	}
	s, ok := c.session(caller)
	if !ok {
		return c.notConnected(caller)
	}
	if att != nil && att.file != "" {
		u, err := c.attachURL(ctx, caller.TenantID, att.file)
		if err == nil {
			err = checkAttachURL(u)
		}
		if err != nil {
			return c.reply.Failure("attachment", "attachment file could not be resolved: "+s.scrub(err.Error()),
				reply.Tr(caller, "Не удалось получить вложение — задача не создана.", "The attachment could not be read; no task was created."))
		}
		att.url = u
	}
	key := call.IdempotencyKey
	unlock, err := c.lockKey(ctx, call)
	if err != nil {
		return s.failure(err)
	}
	defer unlock()
	st, err := s.readBoard(ctx, key != "")
	if err != nil {
		return s.failure(err)
	}
	if prev := findMarked(st.cards, key); prev != nil {
		return s.finishCreate(ctx, prev, st, att, true)
	}
	var assignee apiMember
	if q := a.Assignee; q != "" {
		m, r := s.resolveAssignee(st.members, q)
		if r != nil {
			return *r
		}
		assignee = m
	}
	if len(st.lists) == 0 {
		return c.reply.Failure("column", "the board has no open list",
			reply.Tr(caller, "На доске Trello нет ни одного списка.", "The Trello board has no list."))
	}
	list := st.lists[0]
	if q := a.Column; q != "" {
		l, r := s.resolveList(st.lists, q)
		if r != nil {
			return *r
		}
		list = l
	}
	body := map[string]any{"idList": list.ID, "name": title, "desc": withMarker(desc, key), "pos": "bottom"}
	if !due.IsZero() {
		body["due"] = trelloTime(due)
	}
	if assignee.ID != "" {
		body["idMembers"] = []string{assignee.ID}
	}
	var card apiCard
	err = postMarked(ctx, s, request{method: http.MethodPost, path: "/1/cards", body: body}, key, &card, func() (*apiCard, error) {
		cards, err := s.openCards(ctx)
		if err != nil {
			return nil, err
		}
		return findMarked(cards, key), nil
	})
	if err != nil {
		return s.failure(err)
	}
	c.cache.invalidate(caller.TenantID)
	return s.finishCreate(ctx, &card, st, att, false)
}

// checkAttachment validates the attachment argument; nil when none.
func (c *Client) checkAttachment(caller tool.Caller, a *attachmentArg) (*attachment, *tool.Result) {
	if a == nil {
		return nil, nil
	}
	att := &attachment{name: reply.Opt(a.Name), url: reply.Opt(a.URL), file: reply.Opt(a.File)}
	if att.name == "" && att.url == "" && att.file == "" {
		return nil, nil
	}
	if r := c.reply.CheckFields(caller, reply.MaxLen("attachment.name", att.name, maxAttachName),
		reply.MaxLen("attachment.url", att.url, maxAttachURL), reply.MaxLen("attachment.file", att.file, maxAttachFile)); r != nil {
		return nil, r
	}
	bad := func(e, ru, en string) (*attachment, *tool.Result) {
		r := c.reply.Failure("attachment", e, reply.Tr(caller, ru, en))
		return nil, &r
	}
	switch {
	case (att.url == "") == (att.file == ""):
		return bad("attachment needs exactly one of url and file",
			"Вложение должно быть либо ссылкой, либо файлом.", "The attachment must be either a URL or a file.")
	case att.file != "" && c.attachURL == nil:
		return bad("file attachments are not available on this Trello connection; only URLs",
			"Файлы к задачам Trello здесь прикрепить нельзя, только ссылки.", "Files cannot be attached to Trello cards here, only links.")
	case att.url != "":
		if err := checkAttachURL(att.url); err != nil {
			return bad("attachment url: "+err.Error(), "Ссылка вложения некорректна.", "The attachment URL is not valid.")
		}
	}
	return att, nil
}

// checkAttachURL accepts absolute http(s) URLs without credentials, and
// refuses Telegram file URLs, whose path holds the bot token.
func checkAttachURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("not an absolute http(s) URL")
	}
	if u.User != nil {
		return fmt.Errorf("the URL carries credentials")
	}
	if strings.EqualFold(u.Hostname(), "api.telegram.org") {
		return fmt.Errorf("a Telegram API URL would hand the bot token to Trello")
	}
	return nil
}

// findMarked returns the card whose description carries key's marker.
func findMarked(cards []apiCard, key string) *apiCard {
	for i := range cards {
		if !cards[i].Closed && hasMarker(cards[i].Desc, key) {
			return &cards[i]
		}
	}
	return nil
}

// finishCreate attaches the attachment (unless a replayed card has it
// already) and renders create_task's result.
func (s *session) finishCreate(ctx context.Context, card *apiCard, st *boardState, att *attachment, replayed bool) tool.Result {
	c, caller := s.c, s.caller
	attachNote := ""
	var attachErr string
	if att != nil && att.url != "" {
		err := s.ensureAttachment(ctx, card.ID, att, replayed)
		if err != nil {
			attachErr = s.scrub(err.Error())
			attachNote = reply.Tr(caller, " Вложение добавить не удалось; повтор действия добавит его без второй карточки.",
				" The attachment could not be added; repeating the action adds it without a second card.")
		}
		if replayed {
			c.cache.invalidate(caller.TenantID)
		}
	}
	done := false
	if dl, ok := c.doneListOf(st.lists); ok {
		done = card.IDList == dl.ID
	}
	loc := reply.Location(caller)
	v := c.view(card, listName(st.lists, card.IDList), assigneeNames(card, st.members), done || card.DueComplete, loc)
	who := reply.Tr(caller, "без исполнителя", "unassigned")
	if v.Assignee != "" {
		who = v.Assignee
	}
	when := reply.Tr(caller, "без срока", "no due date")
	if card.Due != "" {
		when = reply.Tr(caller, "до ", "due ") + dueText(card.Due, loc)
	}
	where := ""
	if len(st.lists) > 0 && card.IDList != st.lists[0].ID && v.Column != "" {
		where = reply.Tr(caller, ", список «"+v.Column+"»", ", list \""+v.Column+"\"")
	}
	text := reply.Tr(caller,
		fmt.Sprintf("Создана задача «%s» (%s, %s%s) — %s", v.Title, who, when, where, v.URL),
		fmt.Sprintf("Created task %q (%s, %s%s) — %s", v.Title, who, when, where, v.URL))
	if replayed {
		text = reply.Tr(caller,
			fmt.Sprintf("Задача «%s» уже была создана этим действием — %s", v.Title, v.URL),
			fmt.Sprintf("Task %q was already created by this action — %s", v.Title, v.URL))
	}
	return c.reply.OK(struct {
		Card            cardView `json:"card"`
		AlreadyCreated  bool     `json:"already_created,omitempty"`
		AttachmentError string   `json:"attachment_error,omitempty"`
	}{v, replayed, attachErr}, text+attachNote)
}

// ensureAttachment attaches att.url to the card; for a replayed card it
// first checks whether it is attached already: the same URL, or the same
// name when one is given (a resolved file URL may differ between tries).
func (s *session) ensureAttachment(ctx context.Context, cardID string, att *attachment, replayed bool) error {
	path := "/1/cards/" + url.PathEscape(cardID) + "/attachments"
	if replayed {
		var have []apiAttachment
		if err := s.do(ctx, request{method: http.MethodGet, path: path, query: url.Values{"fields": {"id,name,url"}}}, &have); err != nil {
			return err
		}
		for _, h := range have {
			if h.URL == att.url || att.name != "" && h.Name == att.name {
				return nil
			}
		}
	}
	body := map[string]any{"url": att.url}
	if att.name != "" {
		body["name"] = att.name
	}
	return s.do(ctx, request{method: http.MethodPost, path: path, body: body}, nil)
}

// postMarked posts req, whose body carries key's marker, into out. Under a
// key, a post whose outcome is unknown is looked for with find (by its
// marker) before it is tried again, so that it lands at most once: what
// find returns is the answer. Without a key the post is tried once. The
// error is the one to report.
func postMarked[T any](ctx context.Context, s *session, req request, key string, out *T, find func() (*T, error)) error {
	for attempt := 0; ; attempt++ {
		err := s.do(ctx, req, out)
		if err == nil {
			return nil
		}
		if key == "" || !outcomeUnknown(err) {
			return err
		}
		prev, lerr := find()
		if lerr != nil {
			return err
		}
		if prev != nil {
			*out = *prev
			return nil
		}
		if attempt >= s.c.maxRetries {
			return err
		}
		if werr := s.wait(ctx, backoff(attempt), asAPIError(err)); werr != nil {
			return werr
		}
	}
}

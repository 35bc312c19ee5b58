package trello

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/tool/internal/names"
	"github.com/arbiterhq/arbiter/tool/reply"
)

// shortLinkPattern is a Trello short link as it appears in card and board
// URLs: eight letters and digits, case-sensitive (a few more are
// tolerated).
var shortLinkPattern = regexp.MustCompile(`^[A-Za-z0-9]{8,24}$`)

// linkTrim is what may surround a link pasted in a message.
const linkTrim = " \t\r\n<>\"'«»()[]{}.,;:!?"

// ShortLink returns the card short link of a Trello card URL: http or
// https (or no scheme), trello.com with or without "www.", path
// "/c/<shortLink>" optionally followed by "/<n>-<slug>" or a slash, any
// query string or fragment. Board URLs ("/b/..."), other hosts, URLs with
// credentials or a port, and malformed short links give ok=false. It is
// safe for concurrent use.
func ShortLink(link string) (string, bool) {
	kind, sl, ok := parseTrelloURL(link)
	if !ok || kind != "c" {
		return "", false
	}
	return sl, true
}

// boardShortLink is ShortLink for board URLs ("/b/<shortLink>").
func boardShortLink(link string) (string, bool) {
	kind, sl, ok := parseTrelloURL(link)
	if !ok || kind != "b" {
		return "", false
	}
	return sl, true
}

// parseTrelloURL splits a trello.com URL into its kind ("c" or "b") and
// short link.
func parseTrelloURL(link string) (kind, shortLink string, ok bool) {
	s := strings.Trim(link, linkTrim)
	if s == "" || strings.ContainsAny(s, " \t\r\n") {
		return "", "", false
	}
	lower := strings.ToLower(s)
	switch {
	case strings.HasPrefix(lower, "https://"), strings.HasPrefix(lower, "http://"):
	case strings.Contains(lower, "://"):
		return "", "", false
	default:
		s = "https://" + s
	}
	u, err := url.Parse(s)
	if err != nil || u.User != nil || u.Port() != "" || u.Opaque != "" {
		return "", "", false
	}
	host := strings.ToLower(u.Hostname())
	if host != "trello.com" && host != "www.trello.com" {
		return "", "", false
	}
	parts := strings.Split(strings.TrimPrefix(u.EscapedPath(), "/"), "/")
	if len(parts) < 2 || len(parts) > 4 {
		return "", "", false
	}
	for i, p := range parts[2:] {
		// Only "/<n>-<slug>" and a trailing slash may follow.
		if p == "" && i == len(parts)-3 {
			continue
		}
		if i > 0 || p == "" {
			return "", "", false
		}
	}
	kind = strings.ToLower(parts[0])
	if (kind != "c" && kind != "b") || !shortLinkPattern.MatchString(parts[1]) {
		return "", "", false
	}
	return kind, parts[1], true
}

// cardRef is a card argument taken apart.
type cardRef struct {
	id        string // a short link or card id to look up first
	fromURL   bool   // the value was a card URL: only that card may match
	boardURL  bool   // the value was a board URL, which names no card
	title     string // the value folded for title matching
	bareTitle string // the title without a trailing "(id)"
}

var (
	cardIDPattern   = regexp.MustCompile(`^(?:[A-Za-z0-9]{8}|[0-9a-fA-F]{24})$`)
	trailingIDMatch = regexp.MustCompile(`\(\s*([A-Za-z0-9]{8}|[0-9a-fA-F]{24})\s*\)\s*$`)
)

// parseCardRef reads a card argument: a card URL, a title followed by
// "(shortLink)" as candidates are listed, a bare short link or card id, or
// a title.
func parseCardRef(s string) cardRef {
	s = strings.TrimSpace(s)
	if sl, ok := ShortLink(s); ok {
		return cardRef{id: sl, fromURL: true}
	}
	if _, ok := boardShortLink(s); ok {
		return cardRef{boardURL: true}
	}
	ref := cardRef{title: names.Fold(s)}
	if m := trailingIDMatch.FindStringSubmatchIndex(s); m != nil {
		ref.id = s[m[2]:m[3]]
		ref.bareTitle = names.Fold(s[:m[0]])
	} else if id := strings.TrimPrefix(s, "#"); cardIDPattern.MatchString(id) {
		ref.id = id
	}
	return ref
}

// maxReadDescription bounds the description ReadLink's text shows; the
// data carries it whole.
const maxReadDescription = 1500

// ReadLink answers what a Trello card link points to, read from Trello:
// GET /1/cards/{shortLink} with its list, members and checklists. ok is
// false when link is not a Trello card URL (a board URL included). A card
// Trello does not know, or one on another board, is StatusNotFound; a
// refused credential, a rate limit or a timeout is StatusError. It is
// safe for concurrent use.
func (c *Client) ReadLink(ctx context.Context, caller tool.Caller, link string) (tool.Result, bool) {
	sl, ok := ShortLink(link)
	if !ok {
		return tool.Result{}, false
	}
	s, ok := c.session(caller)
	if !ok {
		return c.notConnected(caller), true
	}
	card, err := s.card(ctx, sl, url.Values{
		"list":    {"true"},
		"members": {"true"}, "member_fields": {"fullName,username"},
		"checklists": {"all"}, "checklist_fields": {"name"},
	})
	if err != nil {
		if isNotFound(err) {
			return c.reply.NotFound("card", reply.Tr(caller,
				fmt.Sprintf("Карточка %s не найдена в Trello (или к ней нет доступа).", sl),
				fmt.Sprintf("Trello has no card %s (or it is not accessible).", sl))), true
		}
		return s.failure(err), true
	}
	boardID, err := s.boardID(ctx)
	if err != nil {
		return s.failure(err), true
	}
	if !strings.EqualFold(card.IDBoard, boardID) {
		return c.reply.NotFound("card", reply.Tr(caller,
			fmt.Sprintf("Карточка %s находится не на подключённой доске Trello.", sl),
			fmt.Sprintf("Card %s is not on the connected Trello board.", sl))), true
	}
	return c.readResult(caller, card), true
}

// readView is a card as ReadLink's data shows it.
type readView struct {
	cardView
	Description string          `json:"description,omitempty"`
	Members     []string        `json:"members,omitempty"`
	Checklists  []checklistView `json:"checklists,omitempty"`
}

type checklistView struct {
	Name     string `json:"name"`
	Done     int    `json:"done"`
	Total    int    `json:"total"`
	Complete bool   `json:"complete"`
}

func (c *Client) readResult(caller tool.Caller, card *apiCard) tool.Result {
	listName := ""
	if card.List != nil {
		listName = card.List.Name
	}
	loc := reply.Location(caller)
	v := readView{cardView: c.view(card, listName, "", card.DueComplete, loc), Description: stripMarker(card.Desc)}
	if card.Closed {
		v.Status = statusArchived
	}
	for _, m := range card.Members {
		v.Members = append(v.Members, memberLabel(m))
	}
	for _, cl := range card.Checklists {
		cv := checklistView{Name: cl.Name, Total: len(cl.CheckItems)}
		for _, it := range cl.CheckItems {
			if it.State == "complete" {
				cv.Done++
			}
		}
		cv.Complete = cv.Total > 0 && cv.Done == cv.Total
		v.Checklists = append(v.Checklists, cv)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "«%s»", v.Title)
	var facts []string
	if listName != "" {
		facts = append(facts, reply.Tr(caller, "список «"+listName+"»", "list \""+listName+"\""))
	}
	facts = append(facts, statusText(caller, v.Status))
	if card.Due != "" {
		facts = append(facts, reply.Tr(caller, "срок ", "due ")+dueText(card.Due, loc))
		if card.DueComplete {
			facts = append(facts, reply.Tr(caller, "срок отмечен выполненным", "due date marked complete"))
		} else if v.Status == statusOpen && overdue(card.Due, c.now()) {
			facts = append(facts, reply.Tr(caller, "просрочена", "overdue"))
		}
	}
	if len(v.Members) > 0 {
		facts = append(facts, reply.Tr(caller, "участники: ", "members: ")+strings.Join(v.Members, ", "))
	}
	for _, cl := range v.Checklists {
		facts = append(facts, fmt.Sprintf("%s %d/%d", cl.Name, cl.Done, cl.Total))
	}
	b.WriteString(" — " + strings.Join(facts, ", "))
	if v.Description != "" {
		desc := v.Description
		if utf8.RuneCountInString(desc) > maxReadDescription {
			desc = string([]rune(desc)[:maxReadDescription]) + "…"
		}
		b.WriteString("\n" + reply.Tr(caller, "Описание: ", "Description: ") + desc)
	} else {
		b.WriteString("\n" + reply.Tr(caller, "Описания нет.", "No description."))
	}
	b.WriteString("\n" + v.URL)
	return c.reply.OK(struct {
		Card readView `json:"card"`
	}{v}, b.String())
}

// statusText renders a card status for a reply.
func statusText(caller tool.Caller, status string) string {
	switch status {
	case statusDone:
		return reply.Tr(caller, "выполнена", "done")
	case statusArchived:
		return reply.Tr(caller, "в архиве", "archived")
	}
	return reply.Tr(caller, "открыта", "open")
}

// dueText renders a Trello due time in loc: "2006-01-02 15:04".
func dueText(due string, loc *time.Location) string {
	t, err := time.Parse(time.RFC3339, due)
	if err != nil {
		return due
	}
	return t.In(loc).Format("2006-01-02 15:04")
}

// overdue reports whether a Trello due time is past.
func overdue(due string, now time.Time) bool {
	t, err := time.Parse(time.RFC3339, due)
	return err == nil && now.After(t)
}

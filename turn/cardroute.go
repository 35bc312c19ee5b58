package turn

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/store"
	"github.com/arbiterhq/arbiter/tool"
)

// The card-link route (RouteCardLink) is the seed system's fix for the
// forwarded-link incident, as a deterministic route: when the user asks
// what a task is about and a card link arrives (in the same message or the
// next one, typed or forwarded), the server reads the card from the system
// that owns the link and answers with its real fields. No model is asked,
// so no model can turn the link into a "create task" proposal. The route is
// a tool kind's (the task boards', Config.LinkRoutes), with its phrases:
// without a board there is none.

// LinkRoute is the card-link route of one system that owns links.
type LinkRoute struct {
	// Asks are how users ask what a card is about: phrases a message
	// holds, read in lower case with ё as е.
	Asks []string
	// Reader reads the links the system owns.
	Reader tool.LinkReader
}

var linkPattern = regexp.MustCompile(`https?://[^\s<>"']+`)

// asked reports whether text asks what a card is about.
func (r LinkRoute) asked(text string) bool {
	t := foldCase(text)
	for _, p := range r.Asks {
		if p != "" && strings.Contains(t, foldCase(p)) {
			return true
		}
	}
	return false
}

func foldCase(s string) string { return strings.ReplaceAll(strings.ToLower(s), "ё", "е") }

// runCardRoute answers a card link deterministically when the question
// about a task comes with it or came right before it. It reports whether
// the turn is handled.
func (e *Engine) runCardRoute(ctx context.Context, s *state) bool {
	if len(e.cfg.LinkRoutes) == 0 || !s.in.Identity.HasScope(chat.ScopeRead) {
		return false
	}
	previous := ""
	for i := len(s.conv.Messages) - 1; i >= 0; i-- {
		if m := s.conv.Messages[i]; m.Role == store.RoleUser {
			previous = m.Text
			break
		}
	}
	var routes []LinkRoute
	for _, r := range e.cfg.LinkRoutes {
		if r.asked(s.in.Text) || r.asked(previous) {
			routes = append(routes, r)
		}
	}
	if len(routes) == 0 {
		return false
	}
	var links []string
	links = append(links, linkPattern.FindAllString(s.in.Text, -1)...)
	for _, ev := range s.in.Evidence {
		links = append(links, linkPattern.FindAllString(ev.Text, -1)...)
	}
	caller := callerOf(s)
	for _, link := range links {
		for _, r := range routes {
			start := e.cfg.Now()
			res, ok := r.Reader.ReadLink(ctx, caller, strings.TrimRight(link, ".,;:!?)»"))
			if !ok {
				continue
			}
			s.trace.Route = RouteCardLink
			s.trace.step(StepReadLink, "", start, e.cfg.Now(), string(res.Status))
			e.recordUserInput(s)
			e.answerFromLink(s, link, res)
			return true
		}
	}
	return false
}

// answerFromLink replies with what the owning system said about the link,
// and remembers it as a tool result so the model sees it next turn.
func (e *Engine) answerFromLink(s *state, link string, res tool.Result) {
	if res.ObservedAt.IsZero() {
		res.ObservedAt = s.now
	}
	args, _ := json.Marshal(map[string]string{"link": link})
	s.trace.Executed = append(s.trace.Executed, ExecutionTrace{Tool: "read_link", Args: args, Status: string(res.Status), Result: &res})
	s.out.Executed = append(s.out.Executed, chat.Execution{Tool: "read_link", Args: args, Status: string(res.Status), Result: res.Data, Error: res.Error})
	memo, _ := json.Marshal(struct {
		Status string          `json:"status"`
		Data   json.RawMessage `json:"data,omitempty"`
		Error  string          `json:"error,omitempty"`
	}{string(res.Status), res.Data, res.Error})
	s.added = append(s.added, store.Message{Role: store.RoleTool, Name: "read_link", Text: Clip(string(memo), maxToolMemory), At: s.now})
	text := res.Text
	if text == "" {
		text = say(s.lang, txtToolNotFound, link)
	}
	e.replyText(s, text, nil)
}

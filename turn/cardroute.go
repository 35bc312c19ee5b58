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
// so no model can turn the link into a "create task" proposal.

// askPhrases are how users ask what a task is about (normalized: lower
// case, ё as е).
var askPhrases = []string{
	"о чем эта задача", "о чем задача", "что за задача", "что это за задача", "что в карточке",
	"что там в карточке", "о чем карточка", "что за карточка", "что в задаче", "что там в задаче",
	"what is this task", "what's this task", "what is this card", "what's in this card", "what's this card",
	"what is the task about", "what is this about",
}

var linkPattern = regexp.MustCompile(`https?://[^\s<>"']+`)

func asksAboutTask(text string) bool {
	t := strings.ReplaceAll(strings.ToLower(text), "ё", "е")
	for _, p := range askPhrases {
		if strings.Contains(t, p) {
			return true
		}
	}
	return false
}

// runCardRoute answers a card link deterministically when the question
// about a task comes with it or came right before it. It reports whether
// the turn is handled.
func (e *Engine) runCardRoute(ctx context.Context, s *state) bool {
	if len(e.cfg.Links) == 0 || !s.in.Identity.HasScope(chat.ScopeRead) {
		return false
	}
	asked := asksAboutTask(s.in.Text)
	if !asked {
		for i := len(s.conv.Messages) - 1; i >= 0; i-- {
			if m := s.conv.Messages[i]; m.Role == store.RoleUser {
				asked = asksAboutTask(m.Text)
				break
			}
		}
	}
	if !asked {
		return false
	}
	var links []string
	links = append(links, linkPattern.FindAllString(s.in.Text, -1)...)
	for _, ev := range s.in.Evidence {
		links = append(links, linkPattern.FindAllString(ev.Text, -1)...)
	}
	caller := callerOf(s)
	for _, link := range links {
		for _, r := range e.cfg.Links {
			start := e.cfg.Now()
			res, ok := r.ReadLink(ctx, caller, strings.TrimRight(link, ".,;:!?)»"))
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
	s.added = append(s.added, store.Message{Role: store.RoleTool, Name: "read_link", Text: clip(string(memo), maxToolMemory), At: s.now})
	text := res.Text
	if text == "" {
		text = say(s.lang, txtToolNotFound, link)
	}
	e.replyText(s, text, nil)
}

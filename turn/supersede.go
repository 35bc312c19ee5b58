package turn

import (
	"github.com/arbiterhq/arbiter/store"
	"github.com/arbiterhq/arbiter/turn/internal/gate"
)

// An action waiting for a "yes" that a new message replaces is not
// dropped in silence: the turn's reply starts by saying so, rendered by the
// server from the stored action in the user's language — «Создание задачи
// «Проверить форму» отменено…» — whatever answers the new message after it.

// maxSupersededValue bounds the value that names a superseded action.
const maxSupersededValue = 80

// supersede marks the waiting action p as replaced by this turn's message
// (resolvePending has dropped it); noteSuperseded reports it.
func (s *state) supersede(p *store.PendingAction) { s.superseded = p }

// noteSuperseded puts the notice of a superseded action before the turn's
// reply, in the reply the channel gets, the record and memory alike.
func (e *Engine) noteSuperseded(s *state) {
	p := s.superseded
	if p == nil || s.route.kind == routeCommand && (s.route.command == "/cancel" || s.route.command == "/reset") {
		return // the user's own cancel says it
	}
	notice, _ := e.inertLinks(s, supersededText(e, s, p))
	say := notice
	if s.out.Say != "" {
		say = notice + "\n" + s.out.Say
	}
	s.out.Say, s.trace.Say = say, say
	for i := len(s.added) - 1; i >= 0; i-- {
		if s.added[i].Role == store.RoleAssistant {
			s.added[i].Text = notice + "\n" + s.added[i].Text
			return
		}
	}
	s.added = append(s.added, store.Message{Role: store.RoleAssistant, Text: notice, At: s.now})
}

// supersededText names the stored call — the tool's activity (Spec.Doing)
// or its title, and its first argument's value — and says it is cancelled.
func supersededText(e *Engine, s *state, p *store.PendingAction) string {
	entry, ok := e.cfg.Tools.Lookup(p.Tool)
	if !ok {
		return say(s.lang, txtSuperseded, say(s.lang, txtSupersededAction, gate.Inert(p.Tool)))
	}
	spec := entry.Spec
	var value string
	if fields := confirmationFields(s.lang, s.loc, spec, p.Args, nil); len(fields) > 0 {
		value = shorten(fields[0].value, maxSupersededValue)
	}
	var what string
	switch doing := spec.Doing[s.lang]; {
	case doing != "" && value != "":
		what = doing + " " + say(s.lang, txtQuoted, value)
	case doing != "":
		what = doing
	case value != "":
		what = say(s.lang, txtSupersededAction, spec.TitleIn(s.lang)) + " (" + say(s.lang, txtQuoted, value) + ")"
	default:
		what = say(s.lang, txtSupersededAction, spec.TitleIn(s.lang))
	}
	return say(s.lang, txtSuperseded, what)
}

// shorten cuts v to at most n characters, marking the cut.
func shorten(v string, n int) string {
	r := []rune(v)
	if len(r) <= n {
		return v
	}
	return string(r[:n-1]) + "…"
}

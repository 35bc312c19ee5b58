package turn

import (
	"strings"

	"github.com/arbiterhq/arbiter/tool"
)

// claim is a phrase with which a reply says a tool's action happened
// (tool.Spec.Claims), normalized.
type claim struct {
	tool, phrase string
}

// claimsOf collects the claims every registered tool declares: a reply may
// claim an action of a tool its assistant never sees.
func claimsOf(reg *tool.Registry) []claim {
	var out []claim
	for _, name := range reg.Names() {
		entry, _ := reg.Lookup(name)
		for _, p := range entry.Spec.Claims {
			if p = normalizeClaim(p); p != "" {
				out = append(out, claim{tool: name, phrase: p})
			}
		}
	}
	return out
}

// normalizeClaim lowercases s, reads ё as е and collapses white space, so
// a phrase matches however a reply spells or breaks it.
func normalizeClaim(s string) string {
	s = strings.NewReplacer("ё", "е", "Ё", "е").Replace(strings.ToLower(s))
	return strings.Join(strings.Fields(s), " ")
}

// claimsUnconfirmed checks a model's reply before it is sent: one that
// says an action happened without a successful call of that tool in this
// turn is handed to a person with the draft, and reports true.
func (e *Engine) claimsUnconfirmed(s *state, reply string) bool {
	if len(e.claims) == 0 || reply == "" {
		return false
	}
	text := normalizeClaim(reply)
	for _, c := range e.claims {
		if strings.Contains(text, c.phrase) && !succeeded(s, c.tool) {
			e.handOff(s, reply, ReviewUnconfirmedClaim, "the reply says \""+c.phrase+"\", but no call of "+c.tool+" succeeded")
			return true
		}
	}
	return false
}

// succeeded reports whether a call of the tool named name succeeded in
// this turn.
func succeeded(s *state, name string) bool {
	for _, x := range s.trace.Executed {
		if x.Tool == name && x.Status == string(tool.StatusOK) {
			return true
		}
	}
	return false
}

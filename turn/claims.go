package turn

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/arbiterhq/arbiter/intent"
	"github.com/arbiterhq/arbiter/store"
	"github.com/arbiterhq/arbiter/tool"
)

// claimChecker holds what a reply may assert and which tools confirm it:
// the outcomes every registered tool declares (tool.Spec.Outcomes and the
// older phrases, tool.Spec.Claims), compiled once. A reply may claim an
// action of a tool its assistant never sees.
type claimChecker struct {
	claims *intent.Claims
	// by is, per outcome, the tools whose successful call confirms it.
	by map[string][]confirmer
}

// confirmer is a tool whose successful call confirms an outcome, when its
// result's data holds the fields of when.
type confirmer struct {
	tool string
	when map[string]string
}

// claimsOf compiles the registered tools' outcomes and those no tool
// confirms with the general words of completion.
func claimsOf(reg *tool.Registry, unconfirmable []string) (claimChecker, error) {
	patterns := map[string][]string{}
	by := map[string][]confirmer{}
	add := func(toolName, outcome string, specs []string, when map[string]string) {
		patterns[outcome] = append(patterns[outcome], specs...)
		by[outcome] = append(by[outcome], confirmer{tool: toolName, when: when})
	}
	for _, name := range reg.Names() {
		entry, _ := reg.Lookup(name)
		for _, o := range entry.Spec.Outcomes {
			known := intent.Outcomes[o.Name]
			if len(known) == 0 && len(o.Patterns) == 0 {
				return claimChecker{}, fmt.Errorf("tool %s: outcome %q is not one the engine knows (%s) and has no patterns",
					name, o.Name, strings.Join(slices.Sorted(maps.Keys(intent.Outcomes)), ", "))
			}
			if _, seen := patterns[o.Name]; !seen {
				patterns[o.Name] = slices.Clone(known) // appended to below: never the shared list
			}
			add(name, o.Name, o.Patterns, o.When)
		}
		for _, phrase := range entry.Spec.Claims {
			if p := phrasePattern(phrase); p != "" {
				add(name, "claim: "+p, []string{p}, nil)
			}
		}
	}
	for _, name := range unconfirmable {
		if _, declared := patterns[name]; declared {
			continue // a tool's patterns; a tool here confirms it after all
		}
		if len(intent.Outcomes[name]) == 0 {
			return claimChecker{}, fmt.Errorf("unconfirmable outcome %q is not one the engine knows (%s)", name, strings.Join(slices.Sorted(maps.Keys(intent.Outcomes)), ", "))
		}
		patterns[name] = slices.Clone(intent.Outcomes[name])
	}
	c, err := intent.CompileClaims(patterns)
	if err != nil {
		return claimChecker{}, err
	}
	return claimChecker{claims: c, by: by}, nil
}

// phrasePattern is a declared phrase as a pattern of its words, in order.
func phrasePattern(phrase string) string {
	return strings.Join(strings.Fields(strings.Map(func(r rune) rune {
		if strings.ContainsRune("*|~.", r) {
			return ' '
		}
		return r
	}, phrase)), " ")
}

// claimsUnconfirmed checks a model's reply before it is sent: one that
// asserts an outcome no successful call of its tools in this turn
// confirms, or says in general words that something is done while a write
// of the turn is not, is handed to a person with the draft, and reports
// true. It runs on every reply the model wrote.
func (e *Engine) claimsUnconfirmed(s *state, reply string) bool {
	s.modelReply = true
	if why := e.unconfirmedClaim(s, reply); why != "" {
		e.handOff(s, reply, ReviewUnconfirmedClaim, why)
		return true
	}
	return false
}

// unconfirmedClaim says why reply may not be sent as it stands — what it
// asserts and what does not confirm it — or returns "".
func (e *Engine) unconfirmedClaim(s *state, reply string) string {
	var buf [4]intent.Assertion
	for _, a := range e.claims.claims.Find(buf[:0], reply) {
		if a.Outcome == "" {
			if open := e.openWrite(s); open != "" {
				return "the reply says it is done (" + a.Pattern + "), but " + open
			}
			continue
		}
		if by := e.claims.by[a.Outcome]; !slices.ContainsFunc(by, func(c confirmer) bool { return confirmedBy(s, c) }) {
			why := "no tool here confirms it"
			if len(by) > 0 {
				names := make([]string, len(by))
				for i, c := range by {
					names[i] = c.tool
				}
				why = "no call of " + strings.Join(names, " or ") + " confirmed it"
			}
			return "the reply asserts " + a.Outcome + ", but " + why
		}
	}
	return ""
}

// openWrite describes a write of the turn that did not happen for certain
// — proposed, waiting for approval or the user's yes, failed, unknown —
// or returns "".
func (e *Engine) openWrite(s *state) string {
	last := map[string]ApprovalTrace{}
	for _, a := range s.trace.Approvals {
		last[a.ID] = a
	}
	for _, id := range slices.Sorted(maps.Keys(last)) {
		if a := last[id]; a.Status != store.ActionConfirmed {
			return "the write of " + a.Tool + " is " + a.Status
		}
	}
	for _, x := range s.trace.Executed {
		if entry, ok := e.cfg.Tools.Lookup(x.Tool); ok && entry.Spec.Risk.Writes() && x.Status != string(tool.StatusOK) {
			return "the write of " + x.Tool + " ended " + x.Status
		}
	}
	switch {
	case s.putPending != nil:
		return "the write of " + s.putPending.Tool + " waits for the user's yes"
	case s.pending != nil && !s.dropPending:
		return "the write of " + s.pending.Tool + " waits for the user's yes"
	}
	return e.openAction(s)
}

// openAction describes an action of the conversation, proposed in an
// earlier turn, that still waits for its approvers or is being carried
// out («Готово!» the next day, while the refund still waits), or "".
func (e *Engine) openAction(s *state) string {
	as := e.actions()
	if as == nil || s.detached == nil {
		return ""
	}
	for _, status := range []string{store.ActionProposed, store.ActionApproved, store.ActionExecuting, store.ActionUnknown} {
		list, err := as.ListActions(s.detached, s.key.Tenant, status, 200)
		if err != nil {
			return "the actions could not be read: " + err.Error()
		}
		for _, a := range list {
			if a.Key == s.key && (status != store.ActionProposed || s.now.Before(a.ExpiresAt)) {
				return "the action " + a.ID + " of " + a.Tool + " is " + status
			}
		}
	}
	return ""
}

// confirmedBy reports whether a call of c's tool in this turn succeeded
// with a result that holds c's fields.
func confirmedBy(s *state, c confirmer) bool {
	for _, x := range s.trace.Executed {
		if x.Tool != c.tool || x.Status != string(tool.StatusOK) {
			continue
		}
		if len(c.when) == 0 {
			return true
		}
		if x.Result == nil {
			continue
		}
		var data any
		if json.Unmarshal(x.Result.Data, &data) != nil {
			continue
		}
		if !slices.ContainsFunc(slices.Collect(maps.Keys(c.when)), func(k string) bool { return jsonField(data, k) != c.when[k] }) {
			return true
		}
	}
	return false
}

// jsonField is the value at a dotted path ("payment.status") of decoded JSON,
// as text; "" when there is none.
func jsonField(v any, path string) string {
	for key := range strings.SplitSeq(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return ""
		}
		if v, ok = m[key]; !ok {
			return ""
		}
	}
	if v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

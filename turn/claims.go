package turn

import (
	"maps"
	"slices"

	"github.com/arbiterhq/arbiter/store"
	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/turn/internal/gate"
)

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

// unconfirmedClaim says why reply may not be sent as it stands, or ""
// (gate.Claims.Unconfirmed, over this turn's calls and writes).
func (e *Engine) unconfirmedClaim(s *state, reply string) string {
	return e.claims.Unconfirmed(reply, func() []gate.Done { return succeeded(s) }, func() string { return e.openWrite(s) })
}

// succeeded lists the turn's successful calls, for the claims check.
func succeeded(s *state) []gate.Done {
	var out []gate.Done
	for _, x := range s.trace.Executed {
		if x.Status == string(tool.StatusOK) {
			d := gate.Done{Tool: x.Tool}
			if x.Result != nil {
				d.Data = x.Result.Data
			}
			out = append(out, d)
		}
	}
	return out
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
			if a.Key == s.key && !gate.Expired(a, s.now) {
				return "the action " + a.ID + " of " + a.Tool + " is " + status
			}
		}
	}
	return ""
}

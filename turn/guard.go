package turn

import (
	"strings"

	"github.com/arbiterhq/arbiter/tool"
)

// Veto records a proposal the server refused, and why. The reason is for
// operators; the user gets the same wording whether a tool is unknown or
// only not granted, so probing the catalog reveals nothing.
type Veto struct {
	Guard  string `json:"guard"`
	Tool   string `json:"tool,omitempty"`
	Reason string `json:"reason"`
}

// Veto reasons.
const (
	reasonUnknownTool  = "unknown_tool"  // no such tool in this deployment
	reasonNotGranted   = "not_granted"   // the tool exists; role or scope does not allow it
	reasonEvidenceOnly = "evidence_only" // a write proposed on a turn with no words of the user
	reasonInvalidArgs  = "invalid_args"  // stored arguments no longer fit the schema
)

// guard applies the post-model rules to a proposal of a tool. It returns
// the entry to run, or false after recording a veto and its reply.
func (e *Engine) guard(s *state, p proposal) (*tool.Entry, bool) {
	if p.UnknownTool {
		reason := reasonUnknownTool
		if _, exists := e.cfg.Tools.Lookup(p.Tool); exists {
			reason = reasonNotGranted
		}
		e.veto(s, Veto{Guard: "catalog", Tool: p.Tool, Reason: reason}, txtNotAvailable)
		return nil, false
	}
	entry, ok := s.cat.lookup(p.Tool)
	if !ok || !permitted(s.in.Identity, s.tenant, entry.Spec) {
		e.veto(s, Veto{Guard: "catalog", Tool: p.Tool, Reason: reasonNotGranted}, txtNotAvailable)
		return nil, false
	}
	if entry.Spec.Risk.Writes() && !hasOwnWords(s) {
		// Forwarded, attached or quoted material alone never asks for an
		// action (the forwarded-Trello-link incident).
		e.veto(s, Veto{Guard: "evidence", Tool: p.Tool, Reason: reasonEvidenceOnly}, txtEvidenceOnlyWrite)
		return nil, false
	}
	return entry, true
}

// hasOwnWords reports whether the user wrote or pressed something this turn.
func hasOwnWords(s *state) bool {
	return strings.TrimSpace(s.in.Text) != "" || s.in.Button != ""
}

// needsConfirmation: the tool's policy says so, or the turn carries
// evidence, which may have steered the proposal — then even a write that is
// normally run at once waits for the user's explicit "yes".
func needsConfirmation(s *state, spec tool.Spec) (bool, string) {
	if spec.Confirm == tool.ConfirmAlways {
		return true, "policy"
	}
	if spec.Risk.Writes() && len(s.in.Evidence) > 0 {
		return true, "evidence_in_turn"
	}
	return false, ""
}

func (e *Engine) veto(s *state, v Veto, key textKey) {
	s.trace.Vetoes = append(s.trace.Vetoes, v)
	e.replyText(s, say(s.lang, key), nil)
}

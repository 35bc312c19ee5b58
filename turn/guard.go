package turn

import (
	"context"
	"fmt"
	"strings"

	"github.com/arbiterhq/arbiter/decision"
	"github.com/arbiterhq/arbiter/tool"
)

// Veto records a proposal the server refused, and why. The reason is for
// operators; the user gets the same wording whether a tool is unknown or
// only not granted, so probing the catalog reveals nothing.
type Veto struct {
	Guard  string `json:"guard"`
	Tool   string `json:"tool,omitempty"`
	Reason string `json:"reason"`
	// Problems say why arguments were refused.
	Problems []decision.Problem `json:"problems,omitempty"`
}

// Veto reasons.
const (
	reasonUnknownTool  = "unknown_tool"  // no such tool in this deployment
	reasonNotGranted   = "not_granted"   // the tool exists; role or scope does not allow it
	reasonEvidenceOnly = "evidence_only" // a write proposed on a turn with no words of the user
	reasonInvalidArgs  = "invalid_args"  // stored arguments no longer fit the schema
	// a write's target (card, member, ...) matches nothing or several
	// things, or its words and id disagree: answered, not put to the user
	reasonTargetUnresolved = "target_unresolved"
	reasonPreviewFailed    = "preview_failed" // the target could not be checked
)

// target is what a proposal would run: the registered tool and the spec
// that governs it — the tool's own, or the one a tool.Resolver derives from
// the arguments (a universal action's actual target).
type target struct {
	entry *tool.Entry
	spec  tool.Spec
	// confirmation is the id of the pending action the user confirmed,
	// for the journal; empty when the call needed no confirmation.
	confirmation string
}

// resolve finds the governing spec of a call of entry with args.
func (e *Engine) resolve(ctx context.Context, s *state, entry *tool.Entry, args []byte) (target, error) {
	tg := target{entry: entry, spec: entry.Spec}
	r, ok := entry.Tool.(tool.Resolver)
	if !ok {
		return tg, nil
	}
	spec, err := r.Resolve(ctx, callerOf(s), args)
	if err != nil {
		return tg, err
	}
	if !spec.Risk.Valid() {
		return tg, fmt.Errorf("resolved spec of %s has risk %q", entry.Spec.Name, spec.Risk)
	}
	if spec.Confirm == "" {
		spec.Confirm = entry.Spec.Confirm // the registered (configured) policy
	}
	if spec.Title == "" {
		spec.Title = spec.Name
	}
	if spec.Timeout <= 0 {
		spec.Timeout = entry.Spec.Timeout
	}
	if spec.MaxResultBytes <= 0 {
		spec.MaxResultBytes = entry.Spec.MaxResultBytes
	}
	tg.spec = spec
	return tg, nil
}

// allowed reports whether the caller may run tg: the registered tool and,
// for a resolved target, the target itself must both be permitted.
func (e *Engine) allowed(s *state, tg target) bool {
	if !permitted(s.in.Identity, s.tenant, tg.entry.Spec) {
		return false
	}
	return tg.spec.Name == tg.entry.Spec.Name || permitted(s.in.Identity, s.tenant, tg.spec)
}

// guard applies the post-model rules to a proposal of a tool. It returns
// the target to run, or false after recording a veto and its reply.
func (e *Engine) guard(ctx context.Context, s *state, p proposal) (target, bool) {
	if p.UnknownTool {
		reason := reasonUnknownTool
		if _, exists := e.cfg.Tools.Lookup(p.Tool); exists {
			reason = reasonNotGranted
		}
		e.veto(s, Veto{Guard: "catalog", Tool: p.Tool, Reason: reason}, txtNotAvailable)
		return target{}, false
	}
	entry, ok := s.cat.lookup(p.Tool)
	if !ok {
		e.veto(s, Veto{Guard: "catalog", Tool: p.Tool, Reason: reasonNotGranted}, txtNotAvailable)
		return target{}, false
	}
	tg, err := e.resolve(ctx, s, entry, p.args)
	if err != nil {
		s.trace.Notes = append(s.trace.Notes, "resolve "+p.Tool+": "+err.Error())
		e.veto(s, Veto{Guard: "catalog", Tool: p.Tool, Reason: reasonUnknownTool}, txtNotAvailable)
		return target{}, false
	}
	if !e.allowed(s, tg) {
		e.veto(s, Veto{Guard: "catalog", Tool: tg.spec.Name, Reason: reasonNotGranted}, txtNotAvailable)
		return target{}, false
	}
	if tg.spec.Risk.Writes() && !hasOwnWords(s) {
		// Forwarded, attached or quoted material alone never asks for an
		// action (the forwarded-Trello-link incident).
		e.veto(s, Veto{Guard: "evidence", Tool: tg.spec.Name, Reason: reasonEvidenceOnly}, txtEvidenceOnlyWrite)
		return target{}, false
	}
	return tg, true
}

// hasOwnWords reports whether the user wrote or pressed something this turn.
func hasOwnWords(s *state) bool {
	return strings.TrimSpace(s.in.Text) != "" || s.in.Button != "" || s.in.Call != nil
}

// needsConfirmation: the tool's policy says so, or the model saw content
// of others — evidence of this turn or an earlier one, what a tool read —
// which may have steered the proposal; then even a write that is normally
// run at once waits for the user's explicit "yes".
func (e *Engine) needsConfirmation(s *state, spec tool.Spec) (bool, string) {
	switch {
	case spec.Confirm == tool.ConfirmAlways:
		return true, "policy"
	case spec.Risk.Writes() && len(s.in.Evidence) > 0:
		return true, "evidence_in_turn"
	case spec.Risk.Writes() && e.inView(s):
		return true, "untrusted_in_view"
	}
	return false, ""
}

func (e *Engine) veto(s *state, v Veto, key textKey, args ...any) {
	s.trace.Vetoes = append(s.trace.Vetoes, v)
	e.replyText(s, say(s.lang, key, args...), nil)
}

package turn

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/arbiterhq/arbiter/decision"
	"github.com/arbiterhq/arbiter/store"
	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/turn/internal/gate"
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

	say textKey // what the user is told
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
	// a write this task already made or proposed, asked for again: dropped
	reasonRepeatDropped = "repeat_dropped"
)

// dropRepeat reports whether a is a write its task already made or
// proposed — the same tool with the same canonical arguments — and
// journals the repeat as dropped. Identical calls within one task are one
// proposal: one model answer holding one refund twice is one refund, not
// two approvals (approved twice, the same reply sent twice). seen holds
// the task's writes so far.
func dropRepeat(s *state, seen map[string]bool, guard string, a authorized) bool {
	if !a.tg.spec.Risk.Writes() {
		return false
	}
	key := a.tg.spec.Name + "\x00" + string(a.args)
	if !seen[key] {
		seen[key] = true
		return false
	}
	s.trace.Vetoes = append(s.trace.Vetoes, Veto{Guard: guard, Tool: a.tg.spec.Name, Reason: reasonRepeatDropped})
	return true
}

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

// callRequest is a call someone asks to run: a model's proposal, a slash
// command's configured call, a client program's own call, or a pending
// action the user confirmed.
type callRequest struct {
	// guard names the path in the journal's vetoes: catalog (a model's
	// proposal), command, call, confirm.
	guard string
	name  string
	args  []byte
	// canonical: args are validated and canonical already (a parsed
	// proposal); otherwise authorize validates them.
	canonical bool
	// attach: the model may name the user's stored file ("last").
	attach bool
	// confirmation is the pending action the user confirmed; empty for a
	// call that was not confirmed.
	confirmation string
	// approved is the action its approvers approved; empty otherwise.
	approved string
	// draft: the call is a draft's own, from its button (the one path a
	// tool.Spec.PublishesDraft tool runs by). A flag, not a guard's name,
	// so that no mode's name can pass for it.
	draft bool
}

// authorized is a call that may run: what runs, with which arguments, and
// whether it waits for the user's "yes" first (and why), or for a member
// of the roles the tool names (approve).
type authorized struct {
	tg      target
	args    []byte
	confirm bool
	why     string
	approve bool
}

// authorize is the one path from a requested call to the decision about
// it, whoever asked: the tool in the caller's catalog (role and scopes) →
// the stored attachment in place of "last" → the arguments against the
// schema → the resolved target (a universal action's) → role and scopes
// again for that target → evidence alone never asks for a write → the
// confirmation policy. Invariant 1 lives here. A refusal comes back as the
// veto to record, with the text to reply in it.
func (e *Engine) authorize(ctx context.Context, s *state, r callRequest) (authorized, *Veto) {
	start := e.cfg.Now()
	a, v := e.authorizeCall(ctx, s, r)
	note := ""
	if v != nil {
		note = v.Reason
	} else if a.confirm {
		note = "confirm:" + a.why
	} else if a.approve {
		note = "approve"
	}
	s.trace.step(StepGuard, r.name, start, e.cfg.Now(), note)
	return a, v
}

func (e *Engine) authorizeCall(ctx context.Context, s *state, r callRequest) (authorized, *Veto) {
	refuse := func(reason string, say textKey) (authorized, *Veto) {
		return authorized{}, &Veto{Guard: r.guard, Tool: r.name, Reason: reason, say: say}
	}
	entry, ok := s.cat.lookup(r.name)
	if !ok {
		// The same words whether unknown or only not granted: probing the
		// catalog reveals nothing.
		if _, exists := e.cfg.Tools.Lookup(r.name); !exists {
			return refuse(reasonUnknownTool, txtNotAvailable)
		}
		return refuse(reasonNotGranted, txtNotAvailable)
	}
	if entry.Spec.PublishesDraft && !r.draft {
		return refuse(reasonNotGranted, txtNotAvailable) // only its draft's button
	}
	args, v := e.callArgs(s, entry, r)
	if v != nil {
		return authorized{}, v
	}
	tg, err := e.resolve(ctx, s, entry, args)
	if err != nil {
		s.trace.Notes = append(s.trace.Notes, "resolve "+r.name+": "+err.Error())
		return refuse(reasonUnknownTool, txtNotAvailable)
	}
	if !e.allowed(s, tg) {
		return authorized{}, &Veto{Guard: r.guard, Tool: tg.spec.Name, Reason: reasonNotGranted, say: txtNotAvailable}
	}
	verdict := gate.Decide(gate.Ask{
		Spec: tg.spec, Args: args,
		Approved: r.approved != "", Confirmed: r.confirmation != "",
		EvidenceInTurn:   len(s.in.Evidence) > 0,
		OwnWords:         func() bool { return hasOwnWords(s) },
		OthersInView:     func() bool { return e.inView(s) },
		SensitiveTainted: func() bool { return len(e.sensitiveFromUntrusted(s, tg.spec, args)) > 0 },
	})
	if verdict.EvidenceOnly {
		return authorized{}, &Veto{Guard: "evidence", Tool: tg.spec.Name, Reason: reasonEvidenceOnly, say: txtEvidenceOnlyWrite}
	}
	a := authorized{tg: tg, args: args, approve: verdict.Approve, confirm: verdict.Confirm != "", why: verdict.Confirm}
	if verdict.Decided {
		a.tg.confirmation = cmp.Or(r.approved, r.confirmation)
	}
	return a, nil
}

// callArgs are a call's arguments as they run: the attachment filled in,
// the case's values bound, valid against the tool's schema, canonical.
func (e *Engine) callArgs(s *state, entry *tool.Entry, r callRequest) ([]byte, *Veto) {
	args := r.args
	if r.attach {
		filled, err := fillAttachment(s, entry.Spec, args)
		if err != nil {
			s.trace.Notes = append(s.trace.Notes, "attachment: "+err.Error())
			return nil, &Veto{Guard: "attachment", Tool: r.name, Reason: reasonInvalidArgs, say: txtNoAttachment}
		}
		r.canonical = r.canonical && bytes.Equal(filled, args)
		args = filled
	}
	if bound, v := e.bindArgs(s, entry.Spec, args); v != nil {
		return nil, v
	} else if !bytes.Equal(bound, args) {
		args, r.canonical = bound, false
	}
	if !r.canonical {
		if len(bytes.TrimSpace(args)) == 0 {
			args = []byte("{}")
		}
		canon, problems := gate.Args(entry, s.cat.required[r.name], args)
		if problems != nil {
			return nil, &Veto{Guard: r.guard, Tool: r.name, Reason: reasonInvalidArgs, Problems: problems, say: txtNotAvailable}
		}
		args = canon
	}
	return args, nil
}

// hasOwnWords reports whether the user wrote or pressed something this turn,
// or, for material arriving alone, just before it.
func hasOwnWords(s *state) bool {
	if strings.TrimSpace(s.in.Text) != "" || s.in.Button != "" || s.in.Call != nil {
		return true
	}
	if words := wordsAwaitingForward(s); words != "" {
		s.trace.Notes = append(s.trace.Notes, "evidence completes the user's previous message: "+Clip(words, 120))
		return true
	}
	return false
}

// lateForwardWindow is how long the user's own words ("create a task from
// what I forward") wait for the material that arrives on its own after
// them, as the next message.
const lateForwardWindow = 2 * time.Minute

// wordsAwaitingForward returns the user's own words this evidence-only
// message completes: the conversation's last user message, when it came
// within lateForwardWindow, nothing was run on it, and no other material
// came since. The write it leads to still waits for a "yes" (the
// evidence is in the turn).
func wordsAwaitingForward(s *state) string {
	if len(s.in.Evidence) == 0 {
		return ""
	}
	msgs := s.conv.Messages
	for i := len(msgs) - 1; i >= 0; i-- {
		switch m := msgs[i]; m.Role {
		case store.RoleAssistant:
			continue
		case store.RoleUser:
			if s.received.Sub(m.At) > lateForwardWindow || strings.TrimSpace(m.Text) == "" ||
				classifyText(m.Text, nil).kind != routeText { // "да", "нет", a command: no request
				return ""
			}
			return m.Text
		default: // a tool ran on those words, or material came already
			return ""
		}
	}
	return ""
}

func (e *Engine) veto(s *state, v Veto, key textKey, args ...any) {
	s.trace.Vetoes = append(s.trace.Vetoes, v)
	e.replyText(s, say(s.lang, key, args...), nil)
}

// refused records v and replies with its text.
func (e *Engine) refused(s *state, v *Veto) {
	e.veto(s, *v, v.say)
}

package turn

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/store"
	"github.com/arbiterhq/arbiter/tool"
)

// ConfirmationTrace is what happened to a pending action in this turn.
type ConfirmationTrace struct {
	ID      string  `json:"id"`
	Tool    string  `json:"tool"`
	Outcome Outcome `json:"outcome"`
	Reason  string  `json:"reason,omitempty"`
	// FromUntrusted names the arguments whose values appear in content
	// of others the model saw (evidence, what tools read) and not in the
	// user's own words; the confirmation names them too.
	FromUntrusted []string `json:"from_untrusted,omitempty"`
	// ReadBefore names, when no value came from content of others but
	// such content was in the model's view, where it came from: what the
	// model read before proposing the call (an injection needs no value
	// of its own to ask for one).
	ReadBefore []string `json:"read_before,omitempty"`
}

// propose stores the action as pending and replies with a confirmation the
// server renders from the stored action itself — never the model's words —
// with the objects it changes resolved now (tool.Previewer). A target that
// resolves to nothing or to several things is answered instead, and
// nothing waits for a "yes".
func (e *Engine) propose(ctx context.Context, s *state, tg target, args []byte, why string) {
	entry := tg.entry
	fields, ok := e.preview(ctx, s, tg, args)
	if !ok {
		return
	}
	id := e.cfg.NewID()
	pa := store.PendingAction{
		ID:             id,
		Key:            s.key,
		Tool:           entry.Spec.Name,
		Args:           args,
		ArgsHash:       argsHash(entry.Spec.Name, args),
		IdempotencyKey: "pending:" + id,
		TurnID:         s.id,
		CreatedAt:      s.now,
		ExpiresAt:      s.now.Add(e.cfg.PendingTTL),
	}
	s.putPending = &pa
	s.out.Pending = &chat.PendingView{Tool: pa.Tool, Args: pa.Args, ExpiresAt: pa.ExpiresAt}
	tainted := e.taintedArgs(s, tg.entry.Spec, args)
	names := make([]string, len(tainted))
	for i, t := range tainted {
		names[i] = t.name
	}
	var read []string
	if len(tainted) == 0 {
		read = e.readBefore(s)
	}
	s.trace.Confirmation = &ConfirmationTrace{ID: id, Tool: tg.spec.Name, Outcome: OutcomeProposed, Reason: why, FromUntrusted: names, ReadBefore: read}
	e.replyText(s, renderConfirmation(s.lang, s.loc, tg.spec, args, fields, tainted, read, e.cfg.Tools), confirmButtons(s.lang, id))
}

// preview resolves what the call would change, for its confirmation. It
// returns false after replying when the call cannot be put to the user as
// proposed: its target is unknown or ambiguous, or could not be checked.
func (e *Engine) preview(ctx context.Context, s *state, tg target, args []byte) (map[string]string, bool) {
	pv, ok := tg.entry.Tool.(tool.Previewer)
	if !ok {
		return nil, true
	}
	start := e.cfg.Now()
	cctx, cancel := context.WithTimeout(ctx, tg.spec.Timeout)
	p, err := pv.Preview(cctx, tool.Call{Caller: callerOf(s), Args: args, Now: s.now})
	cancel()
	s.trace.step(StepPreview, tg.spec.Name, start, e.cfg.Now(), "")
	switch {
	case err != nil:
		s.trace.Notes = append(s.trace.Notes, "preview "+tg.spec.Name+": "+err.Error())
		e.veto(s, Veto{Guard: "preview", Tool: tg.spec.Name, Reason: reasonPreviewFailed}, txtPreviewFailed, tg.spec.TitleIn(s.lang))
		return nil, false
	case p.Problem != nil:
		s.trace.Vetoes = append(s.trace.Vetoes, Veto{Guard: "preview", Tool: tg.spec.Name, Reason: reasonTargetUnresolved})
		e.rememberResult(s, tg.entry.Spec.Name, string(p.Problem.Status), *p.Problem)
		e.replyResult(s, tg.spec.TitleIn(s.lang), string(p.Problem.Status), *p.Problem)
		return nil, false
	}
	return p.Fields, true
}

func argValue(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// inert shows control characters (newlines included), bidirectional
// overrides and isolates, and other invisible format characters as
// escapes, so a value can neither fake the end of a confirmation nor
// display as other text than it holds.
func inert(v string) string {
	clean := true
	for _, r := range v {
		if unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp) {
			clean = false
			break
		}
	}
	if clean {
		return v
	}
	var b strings.Builder
	for _, r := range v {
		switch {
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp):
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// confirmButtons are the yes and no of pending action id.
func confirmButtons(lang, id string) []chat.Button {
	return []chat.Button{
		{Label: say(lang, txtYes), Value: confirmPrefix + id},
		{Label: say(lang, txtNo), Value: cancelPrefix + id},
	}
}

// resolvePending is the deterministic router's handling of a waiting
// action: an affirmative from this user runs exactly the stored call, a
// negative cancels it, a stale button does nothing and says so, and any
// other message drops it — saying so (supersede.go) — and goes on as a new
// message. It reports whether
// the turn is fully handled.
func (e *Engine) resolvePending(ctx context.Context, s *state) bool {
	r := s.route
	p := s.pending
	if p == nil {
		switch {
		case r.pendingID != "":
			s.trace.Route = RouteStaleButton
			s.trace.Confirmation = &ConfirmationTrace{ID: r.pendingID, Outcome: OutcomeStaleButton}
			e.replyText(s, say(s.lang, txtStaleButton), nil)
			return true
		case r.kind == routeAffirm && !r.thanks && !skillAwaitsAnswer(s):
			// A "yes" is consent to what the user was shown, never to what
			// a model would propose next (a burst of "да да да"). In a
			// skill's interview it is the answer to its question; with
			// thanks ("ок, спасибо") it is a message of its own.
			s.trace.Route = RouteConfirm
			s.trace.Confirmation = &ConfirmationTrace{Outcome: OutcomeNothingPending}
			e.recordUserInput(s)
			e.replyText(s, say(s.lang, txtNothingPending), nil)
			return true
		}
		return false
	}
	if r.kind == routeAffirm && r.pendingID == "" && s.received.Before(p.CreatedAt) {
		// Typed before this action was shown: it answered something else
		// (or nothing). The action keeps waiting for a "yes" of its own.
		s.trace.Route = RouteConfirm
		s.trace.Confirmation = &ConfirmationTrace{ID: p.ID, Tool: p.Tool, Outcome: OutcomeNotYetShown}
		e.recordUserInput(s)
		e.replyText(s, say(s.lang, txtYesBeforeShown), confirmButtons(s.lang, p.ID))
		return true
	}
	if r.pendingID != "" && r.pendingID != p.ID {
		// A button of another (older) action: the waiting one stays.
		s.trace.Route = RouteStaleButton
		s.trace.Confirmation = &ConfirmationTrace{ID: r.pendingID, Outcome: OutcomeStaleButton}
		e.replyText(s, say(s.lang, txtStaleButton), nil)
		return true
	}
	expired := !s.now.Before(p.ExpiresAt)
	ct := &ConfirmationTrace{ID: p.ID, Tool: p.Tool}
	s.trace.Confirmation = ct
	s.dropPending = true
	switch {
	case r.kind == routeAffirm && expired:
		ct.Outcome = OutcomeExpired
		s.trace.Route = RouteConfirm
		e.recordUserInput(s)
		e.replyText(s, say(s.lang, txtExpired), nil)
		return true
	case r.kind == routeAffirm:
		s.trace.Route = RouteConfirm
		e.recordUserInput(s)
		// The stored call, authorized again now: this caller's key, and the
		// target the stored arguments resolve to today.
		a, v := e.authorize(ctx, s, callRequest{guard: "confirm", name: p.Tool, args: p.Args, confirmation: p.ID})
		if v != nil {
			ct.Outcome = OutcomeRefused
			if v.Reason == reasonUnknownTool {
				v.Reason = reasonNotGranted // it was granted when proposed
			}
			e.refused(s, v)
			return true
		}
		ct.Outcome = OutcomeConfirmed
		e.runTool(ctx, s, a.tg, a.args, p.IdempotencyKey)
		return true
	case r.kind == routeDeny:
		ct.Outcome = OutcomeCancelled
		s.trace.Route = RouteCancel
		e.recordUserInput(s)
		e.replyText(s, say(s.lang, txtCancelled), nil)
		return true
	}
	// Anything else: the waiting action is dropped, the reply says so,
	// and the message is handled as new.
	ct.Outcome = OutcomeDropped
	if expired {
		ct.Outcome = OutcomeExpired
	} else {
		s.supersede(p)
	}
	return false
}

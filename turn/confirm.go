package turn

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/store"
	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/turn/internal/gate"
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
	pa := e.storePending(s, entry.Spec.Name, args)
	tainted := e.taintedArgs(s, tg.entry.Spec, args)
	names := make([]string, len(tainted))
	for i, t := range tainted {
		names[i] = t.name
	}
	var read []string
	if len(tainted) == 0 {
		read = e.readBefore(s)
	}
	s.trace.Confirmation = &ConfirmationTrace{ID: pa.ID, Tool: tg.spec.Name, Outcome: OutcomeProposed, Reason: why, FromUntrusted: names, ReadBefore: read}
	e.replyText(s, renderConfirmation(s.lang, s.loc, tg.spec, args, fields, tainted, read, e.cfg.Tools), confirmButtons(s.lang, pa.ID))
}

// storePending makes the pending action of a call of name with args, to
// be stored with the turn, and shows it in the reply.
func (e *Engine) storePending(s *state, name string, args []byte) store.PendingAction {
	id := e.cfg.NewID()
	pa := store.PendingAction{
		ID:             id,
		Key:            s.key,
		Tool:           name,
		Args:           args,
		ArgsHash:       gate.Hash(name, args),
		IdempotencyKey: "pending:" + id,
		TurnID:         s.id,
		CreatedAt:      s.now,
		ExpiresAt:      s.now.Add(e.cfg.PendingTTL),
	}
	s.putPending = &pa
	s.out.Pending = &chat.PendingView{Tool: pa.Tool, Args: pa.Args, ExpiresAt: pa.ExpiresAt}
	return pa
}

// batchTool is the Tool of a pending action that holds several calls of
// one answer, put to the user as one confirmation; its Args are the calls
// (storedCall), in order. No tool can have the name: tool names begin
// with a letter.
const batchTool = "(batch)"

// storedCall is one call of a pending batch.
type storedCall struct {
	Tool string          `json:"tool"`
	Args json.RawMessage `json:"args"`
}

// proposeAll puts the calls of one answer that wait for the user's yes to
// them as one confirmation: a call alone as propose does, several as one
// pending action listing every call, each to run once with its own key.
func (e *Engine) proposeAll(ctx context.Context, s *state, held []authorized) {
	if len(held) == 1 {
		e.propose(ctx, s, held[0].tg, held[0].args, held[0].why)
		return
	}
	calls := make([]heldCall, len(held))
	stored := make([]storedCall, len(held))
	names := make([]string, 0, len(held))
	anyTainted := false
	for i, a := range held {
		fields, ok := e.preview(ctx, s, a.tg, a.args)
		if !ok {
			return
		}
		tainted := e.taintedArgs(s, a.tg.entry.Spec, a.args)
		calls[i] = heldCall{spec: a.tg.spec, args: a.args, resolved: fields, fromUntrusted: tainted}
		stored[i] = storedCall{Tool: a.tg.entry.Spec.Name, Args: a.args}
		for _, t := range tainted {
			names = append(names, strconv.Itoa(i+1)+"."+t.name)
		}
		anyTainted = anyTainted || len(tainted) > 0
	}
	args, _ := json.Marshal(stored)
	pa := e.storePending(s, batchTool, args)
	var read []string
	if !anyTainted {
		read = e.readBefore(s)
	}
	s.trace.Confirmation = &ConfirmationTrace{ID: pa.ID, Tool: batchTool, Outcome: OutcomeProposed, Reason: held[0].why, FromUntrusted: names, ReadBefore: read}
	e.replyText(s, renderBatchConfirmation(s.lang, s.loc, calls, read, e.cfg.Tools), confirmButtons(s.lang, pa.ID))
}

// storedCalls are the calls of pending action p, each with the
// idempotency key it runs under: p's own for a single call, p's with the
// call's position for a batch. ok is false for a batch that does not
// decode.
func storedCalls(p *store.PendingAction) (calls []storedCall, keys []string, ok bool) {
	if p.Tool != batchTool {
		return []storedCall{{Tool: p.Tool, Args: p.Args}}, []string{p.IdempotencyKey}, true
	}
	if json.Unmarshal(p.Args, &calls) != nil || len(calls) == 0 {
		return nil, nil, false
	}
	keys = make([]string, len(calls))
	for i := range calls {
		keys[i] = p.IdempotencyKey + "#" + strconv.Itoa(i+1)
	}
	return calls, keys, true
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

// confirmButtons are the yes and no of pending action id.
func confirmButtons(lang, id string) []chat.Button {
	return []chat.Button{
		{Label: say(lang, txtYes), Value: confirmPrefix + id},
		{Label: say(lang, txtNo), Value: cancelPrefix + id},
	}
}

// resolvePending is the deterministic routes' handling of a waiting
// action: an affirmative from this user runs exactly the stored call, a
// negative cancels it, a stale button does nothing and says so, and any
// other message drops it — saying so (supersede.go) — and goes on as a new
// message. It reports whether
// the turn is fully handled.
func (e *Engine) resolvePending(ctx context.Context, s *state) bool {
	r := s.route
	p := s.pending
	if p == nil {
		return e.resolveNothingPending(s)
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
		e.runConfirmed(ctx, s, p, ct)
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

// resolveNothingPending answers a button or a bare yes while no action
// waits; any other message goes on.
func (e *Engine) resolveNothingPending(s *state) bool {
	r := s.route
	switch {
	case r.pendingID != "":
		s.trace.Route = RouteStaleButton
		s.trace.Confirmation = &ConfirmationTrace{ID: r.pendingID, Outcome: OutcomeStaleButton}
		e.replyText(s, say(s.lang, txtStaleButton), nil)
		return true
	case r.kind == routeAffirm && !r.thanks && !e.awaitsAnswer(s):
		// A "yes" is consent to what the user was shown, never to what
		// a model would propose next (a burst of "да да да"). When the
		// mode asked a question of its own (AnswerAwaiter) it is
		// the answer; with thanks ("ок, спасибо") it is a message of its
		// own.
		s.trace.Route = RouteConfirm
		s.trace.Confirmation = &ConfirmationTrace{Outcome: OutcomeNothingPending}
		e.recordUserInput(s)
		e.replyText(s, say(s.lang, txtNothingPending), nil)
		return true
	}
	return false
}

// confirmedCalls are the calls a confirmation ran in a turn: the pending
// action's id, each call's tool and canonical arguments, and for a mode
// whose task goes on, the calls as they ran, for the task's transcript.
type confirmedCalls struct {
	id  string
	ran []Executed
	// recorded are the indexes of ran a mode recorded (Calls.Record).
	recorded map[int]bool
}

// runConfirmed carries out a confirmed pending action. Each stored call is
// authorized again now — this caller's key, the target its arguments
// resolve to today — and if any may no longer run, none does; then each
// runs exactly as stored, once, under its own idempotency key. The reply
// is the executor's result, unless the mode's task goes on (Resumer):
// the model reads the results as the results of its calls and takes its
// next step within the task's limits, and a write it proposes then is
// held by its own policy again — unless an outcome is unknown, which is
// reported as it is and ends the task.
func (e *Engine) runConfirmed(ctx context.Context, s *state, p *store.PendingAction, ct *ConfirmationTrace) {
	calls, keys, ok := storedCalls(p)
	if !ok {
		ct.Outcome = OutcomeRefused
		e.replyText(s, say(s.lang, txtNotAvailable), nil)
		return
	}
	ran := make([]authorized, len(calls))
	for i, c := range calls {
		a, v := e.authorize(ctx, s, callRequest{guard: "confirm", name: c.Tool, args: c.Args, confirmation: p.ID})
		if v != nil {
			ct.Outcome = OutcomeRefused
			if v.Reason == reasonUnknownTool {
				v.Reason = reasonNotGranted // it was granted when proposed
			}
			e.refused(s, v)
			return
		}
		ran[i] = a
	}
	ct.Outcome = OutcomeConfirmed
	s.confirmed.id = p.ID
	resumer, resumes := e.modeOf(s.assistant).(Resumer)
	if len(ran) == 1 && !resumes {
		e.runTool(ctx, s, ran[0].tg, ran[0].args, keys[0])
		return
	}
	xs := make([]Executed, len(ran))
	unknown := false
	for i, a := range ran {
		res, tr := e.execute(ctx, s, a.tg, a.args, keys[i])
		xs[i] = Executed{Cleared: Cleared{a: a, name: calls[i].Tool, turn: s.id}, Result: res, trace: tr}
		unknown = unknown || tr.Status == gate.StatusOutcomeUnknown
	}
	if resumes && !unknown {
		if s.model, s.strategy = e.providerFor(s.tenant); s.model != nil {
			s.confirmed.ran = xs // the mode records them in its transcript
			resumer.Resume(ctx, &Turn{e: e, s: s})
			return
		}
	}
	start := e.cfg.Now()
	texts := make([]string, len(ran))
	for i, a := range ran {
		x := &xs[i]
		e.noteRun(s, a.tg.entry.Spec.Name, a.args, x.Result, x.trace)
		e.replyResult(s, a.tg.spec.TitleIn(s.lang), x.trace.Status, x.Result)
		texts[i] = s.out.Say
	}
	if len(texts) > 1 {
		s.out.Say, s.out.Buttons = strings.Join(texts, "\n"), nil
		s.trace.Say = s.out.Say
	}
	s.trace.step(StepReply, "", start, e.cfg.Now(), "")
}

package turn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/store"
	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/turn/internal/gate"
)

// DefaultApprovalTTL is how long an action waits for its approvers.
const DefaultApprovalTTL = 24 * time.Hour

// ApprovalTrace is what became of an action that waits for approvers, in
// the turn that proposed or carried it out.
type ApprovalTrace struct {
	ID     string `json:"id"`
	Tool   string `json:"tool"`
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
	// Reconciled: the outcome was read from the tool's system after an
	// unclear answer, not taken from the answer.
	Reconciled bool `json:"reconciled,omitempty"`
}

var _ chat.Approver = (*Engine)(nil)

// actions is the state's store.Actions, or nil.
func (e *Engine) actions() store.Actions {
	as, _ := e.cfg.State.(store.Actions)
	return as
}

// proposeApproval stores an authorized write as an action waiting for its
// approvers, with its values as the server resolves and renders them. It
// reports false after replying when the call cannot be put to them (its
// target does not resolve, or the store keeps no actions).
func (e *Engine) proposeApproval(ctx context.Context, s *state, a authorized) (store.Action, bool) {
	as := e.actions()
	if as == nil {
		e.veto(s, Veto{Guard: "approval", Tool: a.tg.spec.Name, Reason: "approvals_unavailable"}, txtNotAvailable)
		return store.Action{}, false
	}
	resolved, ok := e.preview(ctx, s, a.tg, a.args)
	if !ok {
		return store.Action{}, false
	}
	act := store.Action{
		ID: e.cfg.NewID(), Tenant: s.key.Tenant, Key: s.key, Requester: s.in.Identity, Case: s.caseVals,
		Tool: a.tg.spec.Name, Title: a.tg.spec.TitleIn(s.lang), Args: a.args, ArgsHash: gate.Hash(a.tg.spec.Name, a.args),
		Fields: renderFields(s.lang, s.loc, a.tg.spec, a.args, resolved), Approvers: a.tg.spec.Approve, Status: store.ActionProposed,
		TurnID: s.id, CreatedAt: s.now, ExpiresAt: s.now.Add(e.cfg.ApprovalTTL), UpdatedAt: s.now,
		Basis: e.basisOf(ctx, s, a.tg.spec),
	}
	if err := as.PutAction(ctx, act); err != nil {
		e.cfg.Logger.Error("store action", "turn", s.id, "err", err)
		s.trace.Notes = append(s.trace.Notes, "store action: "+err.Error())
		e.veto(s, Veto{Guard: "approval", Tool: act.Tool, Reason: "store_unavailable"}, txtToolFailed, act.Title, "the store is unavailable")
		return store.Action{}, false
	}
	s.trace.Approvals = append(s.trace.Approvals, ApprovalTrace{ID: act.ID, Tool: act.Tool, Status: act.Status})
	if s.listening() {
		s.show(chat.Step{Kind: chat.StepApproval, Name: act.Tool, Text: say(s.lang, txtAwaitingApproval, act.Title)}, tool.Spec{})
	}
	return act, true
}

// renderFields shows every argument as the confirmation does (labels,
// resolved values, local times), each value inert, in name order.
func renderFields(lang string, loc *time.Location, spec tool.Spec, args []byte, resolved map[string]string) []store.ActionField {
	var out []store.ActionField
	for _, f := range confirmationFields(lang, loc, spec, args, resolved) {
		out = append(out, store.ActionField{Name: f.label, Value: f.value})
	}
	return out
}

// proposedContent tells the model, as the result of its call, that the
// action waits for approvers and has not happened.
func proposedContent(act store.Action) string {
	b, _ := json.Marshal(map[string]any{"tool": act.Tool, "status": store.ActionProposed, "action_id": act.ID,
		"note": "waits for approval by " + strings.Join(act.Approvers, ", ") + "; it has not happened"})
	return string(b)
}

// Actions lists the actions of approver's tenant that approver's role may
// decide, with status (any when empty), newest first. An action past its
// time shows as expired.
func (e *Engine) Actions(ctx context.Context, approver chat.Identity, status string) ([]chat.ActionView, error) {
	as := e.actions()
	if as == nil {
		return nil, errors.New("this store keeps no actions")
	}
	list, err := as.ListActions(ctx, approver.TenantID, status, 200)
	if err != nil {
		return nil, err
	}
	now := e.cfg.Now()
	out := []chat.ActionView{}
	for _, a := range list {
		if !gate.Approves(approver, a) {
			continue
		}
		if gate.Expired(a, now) {
			a = e.expire(ctx, as, a, now)
			if status == store.ActionProposed {
				continue
			}
		}
		out = append(out, actionView(a))
	}
	return out, nil
}

// expire closes a proposed action past its time.
func (e *Engine) expire(ctx context.Context, as store.Actions, a store.Action, now time.Time) store.Action {
	next := a
	next.Status, next.UpdatedAt = store.ActionExpired, now
	if got, err := as.UpdateAction(ctx, next, store.ActionProposed); err == nil || errors.Is(err, store.ErrConflict) {
		return got
	}
	return next
}

// Decide approves or rejects a proposed action once. Only a member of the
// action's approver roles other than its requester may; anyone else reads
// it as not found. The decided action is carried out (or its rejection
// told) in its conversation, by a turn of that conversation, before Decide
// returns.
func (e *Engine) Decide(ctx context.Context, approver chat.Identity, id string, approve bool) (chat.ActionView, chat.Outbound, error) {
	as := e.actions()
	if as == nil {
		return chat.ActionView{}, chat.Outbound{}, fmt.Errorf("decide %s: %w", id, chat.ErrActionNotFound)
	}
	a, err := as.GetAction(ctx, approver.TenantID, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return chat.ActionView{}, chat.Outbound{}, fmt.Errorf("decide %s: %w", id, chat.ErrActionNotFound)
	case err != nil:
		return chat.ActionView{}, chat.Outbound{}, err
	case !gate.MayDecide(approver, a):
		return chat.ActionView{}, chat.Outbound{}, fmt.Errorf("decide %s: %w", id, chat.ErrActionNotFound)
	}
	now := e.cfg.Now()
	if gate.Expired(a, now) {
		a = e.expire(ctx, as, a, now)
	}
	if a.Status != store.ActionProposed {
		return actionView(a), chat.Outbound{}, fmt.Errorf("decide %s: it is %s: %w", id, a.Status, chat.ErrActionClosed)
	}
	next := gate.Decided(a, approver, approve, now)
	if got, err := as.UpdateAction(ctx, next, store.ActionProposed); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return actionView(got), chat.Outbound{}, fmt.Errorf("decide %s: it is %s: %w", id, got.Status, chat.ErrActionClosed)
		}
		return chat.ActionView{}, chat.Outbound{}, err
	}
	out, err := e.resume(ctx, next)
	final, gerr := as.GetAction(ctx, a.Tenant, a.ID)
	if gerr != nil {
		final = next
	}
	return actionView(final), out, err
}

// resume runs the turn that carries out (or tells the rejection of) a
// decided action in its conversation, as its requester.
func (e *Engine) resume(ctx context.Context, a store.Action) (chat.Outbound, error) {
	return e.handleTurn(ctx, chat.Inbound{Identity: a.Requester, Chat: a.Key.Chat, Channel: "approval"}, a.ID)
}

// ResumeActions carries out every approved action of the configured
// tenants that did not finish — its process stopped between the approval
// and the end of the write — and reports how many it resumed. The write
// itself is never repeated blindly: a begun one is reconciled (see
// executeAction). Servers call it at start and now and then.
func (e *Engine) ResumeActions(ctx context.Context) (int, error) {
	as := e.actions()
	if as == nil {
		return 0, nil
	}
	n := 0
	var errs []error
	for _, tenant := range slices.Sorted(maps.Keys(e.cfg.Tenants)) {
		for _, status := range []string{store.ActionApproved, store.ActionExecuting} {
			list, err := as.ListActions(ctx, tenant, status, 100)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			for _, a := range list {
				if _, err := e.resume(ctx, a); err != nil {
					errs = append(errs, fmt.Errorf("resume action %s: %w", a.ID, err))
					continue
				}
				n++
			}
		}
	}
	return n, errors.Join(errs...)
}

func actionView(a store.Action) chat.ActionView {
	v := chat.ActionView{
		ID: a.ID, ConversationID: a.Key.Chat, RequestedBy: a.Requester.UserID, Case: a.Case, Tool: a.Tool, Title: a.Title,
		Status: a.Status, CreatedAt: a.CreatedAt, ExpiresAt: a.ExpiresAt, DecidedBy: a.DecidedBy, Result: a.Result, Reason: a.Reason,
	}
	for _, f := range a.Fields {
		v.Fields = append(v.Fields, chat.Field{Name: f.Name, Value: f.Value})
	}
	for _, f := range a.Basis {
		v.Basis = append(v.Basis, chat.Fact{Tool: f.Tool, Source: f.Source, ObservedAt: f.ObservedAt, Data: f.Data})
	}
	if !a.DecidedAt.IsZero() {
		t := a.DecidedAt
		v.DecidedAt = &t
	}
	return v
}

// runResume handles the turn of a decided action (Engine.resume):
// an approved one is carried out here, under the conversation's lock, and
// the conversation is answered — by the executor's result, or by a mode
// whose task goes on after it (Resumer). It reports whether the turn was such a turn.
func (e *Engine) runResume(ctx context.Context, s *state) bool {
	if s.resume == "" {
		return false
	}
	s.trace.Route = RouteResume
	as := e.actions()
	if as == nil {
		e.replyText(s, say(s.lang, txtNotAvailable), nil)
		return true
	}
	a, err := as.GetAction(ctx, s.key.Tenant, s.resume)
	if err != nil || a.Key != s.key {
		s.trace.Notes = append(s.trace.Notes, fmt.Sprintf("resume %s: %v", s.resume, err))
		return true
	}
	if a.Case != nil {
		// The action carries out its own case, whatever the conversation
		// holds by now: it lives until it ends (see Lifetimes).
		s.caseVals = a.Case
	}
	var res tool.Result
	status := ""
	switch a.Status {
	case store.ActionApproved, store.ActionExecuting:
		// The write belongs to the case it was asked in, which the action
		// keeps: the conversation's memory (and its binding) may have
		// expired while the action waited for its approvers.
		bound := s.caseVals
		s.caseVals = a.Case
		a, res, status = e.executeAction(ctx, s, as, a)
		s.caseVals = bound
	case store.ActionRejected:
		res = tool.Result{Status: tool.StatusError, Error: "rejected by " + a.DecidedBy + "; nothing was done"}
		status = store.ActionRejected
		s.trace.Approvals = append(s.trace.Approvals, ApprovalTrace{ID: a.ID, Tool: a.Tool, Status: a.Status})
	default:
		// Finished already (a second resume): nothing to do or say.
		s.trace.Notes = append(s.trace.Notes, "resume "+a.ID+": already "+a.Status)
		return true
	}
	e.rememberResult(s, a.Tool, status, res)
	if resumer, ok := e.modeOf(s.assistant).(Resumer); ok {
		s.model, s.strategy = e.providerFor(s.tenant)
		if s.model != nil {
			// The model reads the outcome among the turn's messages and
			// tells the user; it cannot start a write (no words of the
			// user are in this turn).
			resumer.Resume(ctx, &Turn{e: e, s: s})
			return true
		}
	}
	switch status {
	case store.ActionRejected:
		e.replyText(s, say(s.lang, txtActionRejected, a.Title), nil)
	case store.ActionUnknown:
		e.replyText(s, say(s.lang, txtOutcomeUnknown, a.Title), nil)
	default:
		e.replyResult(s, a.Title, string(res.Status), res)
	}
	return true
}

// executeAction runs an approved action exactly once: approved → executing
// with a key derived from the case, the action and its approval; the
// requester's right to the call and the tool's preconditions checked
// again right before the write; the write; and when its answer leaves the
// outcome unclear, the tool's system read back (tool.Reconciler) before
// anything is reported. An action found executing (its process stopped)
// whose write was begun is settled by settleBegun, never prechecked: the
// write may have been sent.
func (e *Engine) executeAction(ctx context.Context, s *state, as store.Actions, a store.Action) (store.Action, tool.Result, string) {
	run := &actionRun{e: e, s: s, as: as, a: a, tr: ApprovalTrace{ID: a.ID, Tool: a.Tool}}
	defer func() { s.trace.Approvals = append(s.trace.Approvals, run.tr) }()
	resumed := a.Status == store.ActionExecuting
	if !resumed {
		next := a
		next.Status, next.IdempotencyKey, next.UpdatedAt = store.ActionExecuting, approvalKey(a), s.now
		got, err := as.UpdateAction(ctx, next, store.ActionApproved)
		if err != nil {
			// Another process took it over, or the store is down: the
			// write is theirs, or waits for ResumeActions.
			run.tr.Status, run.tr.Reason = got.Status, err.Error()
			return a, tool.Result{Status: tool.StatusError, Error: "the action is being carried out elsewhere"}, store.ActionExecuting
		}
		run.a = got
	}
	var begun *store.ExecutionRecord
	if resumed {
		rec, err := e.cfg.State.GetExecution(ctx, s.key.Tenant, run.a.IdempotencyKey)
		switch {
		case err == nil:
			begun = &rec
		case !errors.Is(err, store.ErrNotFound):
			// Whether the write began cannot be told now: it waits for
			// the next ResumeActions, untouched.
			run.tr.Status, run.tr.Reason = store.ActionExecuting, "read the execution record: "+err.Error()
			return run.a, tool.Result{Status: tool.StatusError, Error: "the action's record cannot be read now"}, store.ActionExecuting
		}
	}
	auth, v := e.authorize(ctx, s, callRequest{guard: "approval", name: run.a.Tool, args: run.a.Args, approved: run.a.ID})
	if v != nil {
		s.trace.Vetoes = append(s.trace.Vetoes, *v)
		res := tool.Result{Status: tool.StatusError, Error: "no longer allowed: " + v.Reason}
		if begun != nil {
			// Refused now, but the write may have happened before.
			res.OutcomeUnknown = true
			return run.finish(ctx, store.ActionUnknown, res, "refused: "+v.Reason+"; the write begun before may have happened")
		}
		return run.finish(ctx, store.ActionFailed, res, "refused: "+v.Reason)
	}
	call := tool.Call{Caller: callerOf(s), Args: auth.args, IdempotencyKey: run.a.IdempotencyKey, Now: s.now}
	if begun != nil {
		return e.settleBegun(ctx, s, run, auth, call, *begun)
	}
	return e.writeAction(ctx, s, run, auth, call)
}

// writeAction makes the write of an action none of whose attempts was
// begun: the facts it rests on read again and the precheck (the only
// point at which these run: nothing was sent), the write, and when its
// answer is unclear, the read-back.
func (e *Engine) writeAction(ctx context.Context, s *state, run *actionRun, auth authorized, call tool.Call) (store.Action, tool.Result, string) {
	if changed, ok := e.recheckBasis(ctx, s, run.a); !ok {
		return run.sendBack(ctx, changed)
	}
	if pc, ok := auth.tg.entry.Tool.(tool.Prechecker); ok {
		cctx, cancel := context.WithTimeout(ctx, auth.tg.spec.Timeout)
		err := pc.Precheck(cctx, call)
		cancel()
		if err != nil {
			res := tool.Result{Status: tool.StatusError, Error: "precondition: " + err.Error(), ObservedAt: s.now}
			return run.finish(ctx, store.ActionFailed, res, "precondition: "+err.Error())
		}
	}
	res, et := e.execute(ctx, s, auth.tg, auth.args, call.IdempotencyKey)
	e.noteExecution(s, auth, res, et)
	if res.Status == tool.StatusOK {
		return run.finish(ctx, store.ActionConfirmed, res, "")
	}
	// Not a clear success: what the tool's system says wins over what the
	// answer suggested.
	if rres, status, ok := e.readBack(ctx, s, auth, call); ok {
		run.tr.Reconciled = true
		return run.finish(ctx, status, rres, reconcileReason(status))
	}
	if et.Status == gate.StatusOutcomeUnknown || res.OutcomeUnknown {
		return run.finish(ctx, store.ActionUnknown, res, "the outcome is unknown: "+res.Error)
	}
	return run.finish(ctx, store.ActionFailed, res, res.Error)
}

// noteExecution puts an execution of an approved action in the turn's
// record and reply.
func (e *Engine) noteExecution(s *state, auth authorized, res tool.Result, et ExecutionTrace) {
	if et.Tool == "" {
		et.Tool, et.Args = auth.tg.spec.Name, auth.args
	}
	et.Result = &res
	s.trace.Executed = append(s.trace.Executed, et)
	s.out.Executed = append(s.out.Executed, chat.Execution{Tool: auth.tg.spec.Name, Args: auth.args, Status: et.Status, Result: res.Data, Error: res.Error})
}

// approvalKey is the idempotency key of an approved action's write: the
// case, the action and its approval, so no other write shares it and every
// attempt at this one does.
func approvalKey(a store.Action) string {
	caseJSON, _ := json.Marshal(a.Case)
	origin := "approval:" + a.Tenant + "\x00" + string(caseJSON) + "\x00" + a.ID + "\x00" + a.DecidedBy + "\x00" + a.DecidedAt.UTC().Format(time.RFC3339Nano)
	return "a:" + gate.Hash(origin, nil)[:40]
}

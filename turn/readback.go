package turn

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/arbiterhq/arbiter/internal/wait"
	"github.com/arbiterhq/arbiter/store"
	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/turn/internal/gate"
)

// A write whose answer was lost — a timeout after sending, a process that
// stopped with the call in flight — is settled from its system, never
// from a precheck: a precheck made after the write would see the write's
// own effect ("refunded already") and call it a failure. What the engine
// does instead, in order: read the write back (tool.Reconciler), asking
// again with a growing wait while the system cannot answer (Config.ReadBack);
// on a tool that dedupes by key, ask the write again with its own key; or
// else close it as unknown, for a person.

// ReadBackPolicy bounds the read-back (tool.Reconciler) of a write whose
// answer was lost while the system that holds it is unavailable: Attempts
// in all, the first retry after Wait, each later one after twice the wait
// before it. Zero values mean DefaultReadBackAttempts and
// DefaultReadBackWait.
type ReadBackPolicy struct {
	Attempts int
	Wait     time.Duration
}

// A read-back that is down is asked 5 times over 7.5 s (0.5, 1, 2, 4).
const (
	DefaultReadBackAttempts = 5
	DefaultReadBackWait     = 500 * time.Millisecond
)

// readBack asks the tool's system whether the call took effect, retrying
// while the system cannot answer. ok is false when nothing could tell
// within the policy's attempts (or the tool cannot read back at all).
func (e *Engine) readBack(ctx context.Context, s *state, auth authorized, call tool.Call) (tool.Result, string, bool) {
	wait := e.cfg.ReadBack.Wait
	for attempt := 1; ; attempt++ {
		res, status, ok, retry := e.reconcile(ctx, s, auth, call)
		if ok || !retry {
			return res, status, ok
		}
		if attempt >= e.cfg.ReadBack.Attempts {
			s.trace.Notes = append(s.trace.Notes, "read back "+auth.tg.spec.Name+": no answer in "+strconv.Itoa(attempt)+" attempts")
			return tool.Result{}, "", false
		}
		if err := e.cfg.Sleep(ctx, wait); err != nil {
			s.trace.Notes = append(s.trace.Notes, "read back "+auth.tg.spec.Name+": "+err.Error())
			return tool.Result{}, "", false
		}
		wait *= 2
	}
}

// reconcile asks a tool.Reconciler once whether the call took effect. ok
// is false when it could not tell; retry then says whether asking again
// may help (the system was unavailable, not unable to read back).
func (e *Engine) reconcile(ctx context.Context, s *state, auth authorized, call tool.Call) (res tool.Result, status string, ok, retry bool) {
	rc, isRC := auth.tg.entry.Tool.(tool.Reconciler)
	if !isRC {
		return tool.Result{}, "", false, false
	}
	start := e.cfg.Now()
	cctx, cancel := context.WithTimeout(ctx, auth.tg.spec.Timeout)
	res, err := rc.Reconcile(cctx, call)
	cancel()
	note := string(res.Status)
	if err != nil {
		note = "error: " + err.Error()
	}
	s.trace.step(StepReconcile, auth.tg.spec.Name, start, e.cfg.Now(), note)
	switch {
	case err != nil:
		s.trace.Notes = append(s.trace.Notes, "reconcile "+auth.tg.spec.Name+": "+err.Error())
		return tool.Result{}, "", false, !errors.Is(err, tool.ErrNoReadBack) && ctx.Err() == nil
	case res.Status == tool.StatusOK:
		if res.ObservedAt.IsZero() {
			res.ObservedAt = e.cfg.Now()
		}
		s.trace.Executed = append(s.trace.Executed, ExecutionTrace{Tool: auth.tg.spec.Name, Args: auth.args,
			IdempotencyKey: call.IdempotencyKey, Status: string(tool.StatusOK), Result: &res, Reconciled: true})
		return res, store.ActionConfirmed, true, false
	case res.Status == tool.StatusNotFound:
		return tool.Result{Status: tool.StatusError, Error: "not applied (the system has no record of it)", ObservedAt: e.cfg.Now()}, store.ActionFailed, true, false
	}
	return tool.Result{}, "", false, ctx.Err() == nil
}

func reconcileReason(status string) string {
	if status == store.ActionFailed {
		return "reconciled: not applied"
	}
	return ""
}

// settleBegun ends an action whose write was begun by a process that
// stopped: the write may have been sent, so no precheck runs. A recorded
// success answers; otherwise the system is read back; when it cannot
// tell, a recorded clear refusal stands, a tool that dedupes by key is
// asked again with the same key, and anything else is unknown.
func (e *Engine) settleBegun(ctx context.Context, s *state, run *actionRun, auth authorized, call tool.Call, rec store.ExecutionRecord) (store.Action, tool.Result, string) {
	var recorded tool.Result
	done := rec.State == store.ExecDone && json.Unmarshal(rec.Result, &recorded) == nil
	if done && recorded.Status == tool.StatusOK {
		e.noteExecution(s, auth, recorded, ExecutionTrace{Status: string(recorded.Status), Reused: true})
		return run.finish(ctx, store.ActionConfirmed, recorded, "")
	}
	if res, status, ok := e.readBack(ctx, s, auth, call); ok {
		run.tr.Reconciled = true
		return run.finish(ctx, status, res, reconcileReason(status))
	}
	if done && !recorded.OutcomeUnknown && recorded.Error != gate.StatusOutcomeUnknown {
		// The system answered the write with a refusal before the stop.
		e.noteExecution(s, auth, recorded, ExecutionTrace{Status: string(recorded.Status), Reused: true})
		return run.finish(ctx, store.ActionFailed, recorded, recorded.Error)
	}
	reason := "the outcome is unknown: the write may have happened and its system cannot tell"
	if auth.tg.spec.Idempotent {
		// The same key again: the system answers with the write it made,
		// or makes it now, once. Only a success settles it — a refusal
		// could be the first write's own effect.
		res, et := e.repeatWrite(ctx, s, auth, call.IdempotencyKey)
		e.noteExecution(s, auth, res, et)
		if res.Status == tool.StatusOK {
			return run.finish(ctx, store.ActionConfirmed, res, "")
		}
		reason += "; asked again with its key: " + res.Error
	}
	res := tool.Result{Status: tool.StatusError, Error: gate.StatusOutcomeUnknown, OutcomeUnknown: true, ObservedAt: e.cfg.Now()}
	return run.finish(ctx, store.ActionUnknown, res, reason)
}

// repeatWrite calls a tool that dedupes by key again with the key of a
// write begun before, and records its answer on the execution record.
func (e *Engine) repeatWrite(ctx context.Context, s *state, auth authorized, key string) (tool.Result, ExecutionTrace) {
	start := e.cfg.Now()
	res := e.call(ctx, s, auth.tg.entry, auth.tg.spec, auth.args, key)
	tr := ExecutionTrace{Tool: auth.tg.spec.Name, Args: auth.args, IdempotencyKey: key, Status: string(res.Status), Result: &res,
		DurationMS: e.cfg.Now().Sub(start).Milliseconds()}
	s.trace.step(StepExecute, auth.tg.spec.Name, start, e.cfg.Now(), tr.Status)
	if res.Status == tool.StatusOK {
		encoded, _ := json.Marshal(res)
		if err := e.cfg.State.FinishExecution(ctx, s.key.Tenant, key, encoded, e.cfg.Now()); err != nil {
			e.cfg.Logger.Error("finish execution record", "turn", s.id, "tool", auth.tg.spec.Name, "err", err)
		}
	}
	e.auditCall(s, auth.tg, key, auth.args, tr, res, start)
	return res, tr
}

// actionRun is an approved action being carried out and its trace.
type actionRun struct {
	e  *Engine
	s  *state
	as store.Actions
	a  store.Action
	tr ApprovalTrace
}

// finish closes the executing action with status, its result and reason.
func (r *actionRun) finish(ctx context.Context, status string, res tool.Result, reason string) (store.Action, tool.Result, string) {
	next := r.a
	next.Status, next.Reason, next.UpdatedAt = status, reason, r.e.cfg.Now()
	next.Result, _ = json.Marshal(res)
	if got, err := r.as.UpdateAction(ctx, next, store.ActionExecuting); err == nil {
		r.a = got
	} else {
		r.e.cfg.Logger.Error("finish action", "turn", r.s.id, "action", r.a.ID, "err", err)
	}
	r.tr.Status, r.tr.Reason = status, reason
	return r.a, res, status
}

// withDefaults fills the policy's zero values with the defaults.
func (p ReadBackPolicy) withDefaults() ReadBackPolicy {
	if p.Attempts <= 0 {
		p.Attempts = DefaultReadBackAttempts
	}
	if p.Wait <= 0 {
		p.Wait = DefaultReadBackWait
	}
	return p
}

// sleepOr is f, or a timer when f is nil.
func sleepOr(f func(ctx context.Context, d time.Duration) error) func(ctx context.Context, d time.Duration) error {
	if f != nil {
		return f
	}
	return wait.Sleep
}

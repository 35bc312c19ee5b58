package turn

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/arbiterhq/arbiter/store"
	"github.com/arbiterhq/arbiter/tool"
)

// An action that waits for approvers rests on facts: the refund on the
// payment's state as the task read it. The facts (tool.Spec.Basis) are
// kept with the action so its approvers decide on what was checked —
// which system said it, and when — and they are read again right before
// the write: if the system says something else now, the approval was
// given on facts that no longer hold, and the action goes back to its
// approvers with the new facts instead of being written.

// checkBasis reports a tool whose basis names a tool that is not
// registered or that writes, or a tool with a basis but no approvers.
func checkBasis(reg *tool.Registry) error {
	for _, name := range reg.Names() {
		entry, _ := reg.Lookup(name)
		spec := entry.Spec
		if len(spec.Basis) > 0 && len(spec.Approve) == 0 {
			return fmt.Errorf("tool %s: basis is for a write its approvers approve (approve is empty)", name)
		}
		for _, b := range spec.Basis {
			read, ok := reg.Lookup(b)
			switch {
			case !ok:
				return fmt.Errorf("tool %s: basis tool %q is not registered", name, b)
			case read.Spec.Risk.Writes():
				return fmt.Errorf("tool %s: basis tool %s writes; only reads are facts", name, b)
			}
		}
	}
	return nil
}

// basisOf is the facts a proposed call of spec rests on: each basis
// read's latest success in this turn, or, when the turn did not make it,
// the read made now.
func (e *Engine) basisOf(ctx context.Context, s *state, spec tool.Spec) []store.ActionFact {
	var out []store.ActionFact
	for _, name := range spec.Basis {
		if f, ok := e.readInTurn(s, name); ok {
			out = append(out, f)
			continue
		}
		if f, ok := e.readFact(ctx, s, "basis", name, nil); ok {
			out = append(out, f)
		}
	}
	return out
}

// readInTurn is the latest successful result of tool name in the turn.
func (e *Engine) readInTurn(s *state, name string) (store.ActionFact, bool) {
	entry, ok := e.cfg.Tools.Lookup(name)
	if !ok {
		return store.ActionFact{}, false
	}
	for i := len(s.trace.Executed) - 1; i >= 0; i-- {
		tr := s.trace.Executed[i]
		if tr.Tool == name && tr.Result != nil && tr.Result.Status == tool.StatusOK {
			return e.factOf(entry.Spec, tr.Args, *tr.Result), true
		}
	}
	return store.ActionFact{}, false
}

// readFact runs the read name (its bound arguments filled from the case)
// through authorize, the one path every call takes, and returns what it
// answered; ok is false when it was refused or did not succeed, with why.
func (e *Engine) readFact(ctx context.Context, s *state, guard, name string, args json.RawMessage) (store.ActionFact, bool) {
	a, v := e.authorize(ctx, s, callRequest{guard: guard, name: name, args: args})
	if v != nil {
		s.trace.Vetoes = append(s.trace.Vetoes, *v)
		return store.ActionFact{Tool: name, Data: errorData("refused: " + v.Reason)}, false
	}
	res, tr := e.execute(ctx, s, a.tg, a.args, "")
	tr.Result = &res
	s.trace.Executed = append(s.trace.Executed, tr)
	if res.Status != tool.StatusOK {
		return store.ActionFact{Tool: name, Data: errorData(res.Error)}, false
	}
	return e.factOf(a.tg.spec, a.args, res), true
}

func errorData(msg string) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"error": Clip(msg, 300)})
	return b
}

// factOf is a read's result as an action keeps it, its redacted fields
// (tool.Spec.Redact) as keyed hashes.
func (e *Engine) factOf(spec tool.Spec, args []byte, res tool.Result) store.ActionFact {
	source := res.Source
	if source == "" {
		source = spec.Name
	}
	return store.ActionFact{Tool: spec.Name, Args: slices.Clone(args), Source: source, ObservedAt: res.ObservedAt.UTC(),
		Data: e.redactFact(spec, slices.Clone(res.Data))}
}

// recheckBasis reads a's facts again. ok is true when each answered what
// it answered before (observation times aside); otherwise the returned
// facts are the new ones, and the reason says what changed.
func (e *Engine) recheckBasis(ctx context.Context, s *state, a store.Action) (basisChange, bool) {
	var ch basisChange
	for _, old := range a.Basis {
		now, ok := e.readFact(ctx, s, "recheck", old.Tool, old.Args)
		ch.facts = append(ch.facts, now)
		switch {
		case !ok:
			ch.reasons = append(ch.reasons, old.Tool+" could not be read again: "+string(now.Data))
		default:
			if diff := factDiff(old.Data, now.Data); diff != "" {
				ch.reasons = append(ch.reasons, old.Tool+": "+diff)
			}
		}
	}
	return ch, len(ch.reasons) == 0
}

// basisChange is what a re-read of an action's facts found.
type basisChange struct {
	facts   []store.ActionFact
	reasons []string
}

// sendBack returns the executing action to its approvers, nothing
// written: its decision is undone, its facts are the new ones, and its
// time to be decided starts again.
func (r *actionRun) sendBack(ctx context.Context, ch basisChange) (store.Action, tool.Result, string) {
	now := r.e.cfg.Now()
	reason := "sent back to the approvers: the facts changed since they were checked — " + strings.Join(ch.reasons, "; ")
	next := r.a
	next.Status, next.Reason, next.Basis, next.UpdatedAt = store.ActionProposed, reason, ch.facts, now
	next.DecidedBy, next.DecidedAt, next.IdempotencyKey, next.ExpiresAt = "", time.Time{}, "", now.Add(r.e.cfg.ApprovalTTL)
	if got, err := r.as.UpdateAction(ctx, next, store.ActionExecuting); err == nil {
		r.a = got
	} else {
		r.e.cfg.Logger.Error("send action back", "turn", r.s.id, "action", r.a.ID, "err", err)
	}
	r.tr.Status, r.tr.Reason = store.ActionProposed, reason
	res := tool.Result{Status: tool.StatusError, Error: reason + "; nothing was done", ObservedAt: now}
	return r.a, res, store.ActionProposed
}

// factDiff says which values differ between two results' data (dotted
// paths, old → new), observation times aside; "" when none do.
func factDiff(old, now json.RawMessage) string {
	a, b := map[string]string{}, map[string]string{}
	flatten("", decodeAny(old), a)
	flatten("", decodeAny(now), b)
	var diffs []string
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			diffs = append(diffs, k+": "+v+" → "+orNone(w, ok))
		}
	}
	for k, w := range b {
		if _, ok := a[k]; !ok {
			diffs = append(diffs, k+": (none) → "+w)
		}
	}
	sort.Strings(diffs)
	return strings.Join(diffs, ", ")
}

func orNone(v string, ok bool) string {
	if !ok {
		return "(none)"
	}
	return v
}

func decodeAny(raw json.RawMessage) any {
	var v any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	_ = d.Decode(&v)
	return v
}

// flatten puts each leaf of v in out by its dotted path, except the
// fields that say when something was observed.
func flatten(path string, v any, out map[string]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, c := range x {
			if k == "observed_at" {
				continue
			}
			flatten(joinPath(path, k), c, out)
		}
	case []any:
		for i, c := range x {
			flatten(joinPath(path, fmt.Sprint(i)), c, out)
		}
	default:
		b, _ := json.Marshal(x)
		out[path] = string(b)
	}
}

func joinPath(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

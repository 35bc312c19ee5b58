package turn

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/arbiterhq/arbiter/decision"
	"github.com/arbiterhq/arbiter/tool"
)

// Calls: the way a mode that runs its model's calls itself takes them
// through the guards: Authorize is the one way to a Cleared call,
// Execute the one way to run it, and what needs a person goes to Confirm
// or ProposeApproval instead. The types carry no way around that: a
// Cleared cannot be built outside this package, belongs to the turn that
// cleared it, and does not run while it waits for a yes or an approval.

// CallRequest is a call a mode asks the guards for.
type CallRequest struct {
	Tool string
	Args json.RawMessage
	// Attachments: the arguments may name the user's stored file ("last").
	Attachments bool
	// Preflight: one of the assistant's preflight reads, made before the
	// model and shown to it as if it had read it (guard "preflight").
	Preflight bool
	// Rule names the mode's own rule that made a call it carries out
	// (CarryOut), for the journal.
	Rule string
}

// Cleared is a call the guards let through, with its canonical arguments
// and the spec that governs it (a resolved target's, for a universal
// action).
type Cleared struct {
	a    authorized
	name string // the tool as called
	turn string // the turn that cleared it
}

// Tool is the tool as it was called.
func (c Cleared) Tool() string { return c.name }

// Args are the call's canonical arguments.
func (c Cleared) Args() json.RawMessage { return c.a.args }

// Spec is the spec that governs the call.
func (c Cleared) Spec() tool.Spec { return c.a.tg.spec }

// Key names the call within a task: the governing tool and the canonical
// arguments, so that two calls with the same key are the same call.
func (c Cleared) Key() string { return c.a.tg.spec.Name + "\x00" + string(c.a.args) }

// Writes tells a call that changes data.
func (c Cleared) Writes() bool { return c.a.tg.spec.Risk.Writes() }

// WaitsForYes tells a write the user must confirm (Calls.Confirm).
func (c Cleared) WaitsForYes() bool { return c.a.confirm }

// WaitsForApprovers tells a write its approvers must approve
// (Calls.ProposeApproval).
func (c Cleared) WaitsForApprovers() bool { return c.a.approve }

// Executed is a call that ran, with its result.
type Executed struct {
	Cleared
	Result tool.Result
	trace  ExecutionTrace
}

// Status is how the run ended: the executor's status, or the engine's
// own (outcome_unknown, dry_run, ...).
func (x Executed) Status() string { return x.trace.Status }

// Failed tells a run whose result is an error.
func (x Executed) Failed() bool { return x.Result.Status == tool.StatusError }

// Authorize takes a call of the mode's through the guards: catalog,
// rights and scopes, arguments, resolved target, evidence, confirmation
// policy. A refusal is recorded in the turn's vetoes and returned.
func (t *Calls) Authorize(ctx context.Context, r CallRequest) (Cleared, *Veto) {
	guard := string(t.s.assistant.Mode)
	if r.Preflight {
		guard = "preflight"
	}
	a, v := t.e.authorize(ctx, t.s, callRequest{guard: guard, name: r.Tool, args: r.Args, attach: r.Attachments})
	if v != nil {
		t.s.trace.Vetoes = append(t.s.trace.Vetoes, *v)
		return Cleared{}, v
	}
	return Cleared{a: a, name: r.Tool, turn: t.s.id}, nil
}

// Repeats reports whether c is a write its task made or proposed already
// (seen holds the task's writes so far, by Key), and records it as
// dropped: one answer that holds one refund twice is one refund.
func (t *Calls) Repeats(c Cleared, seen map[string]bool) bool {
	return dropRepeat(t.s, seen, string(t.s.assistant.Mode), c.a)
}

// Execute runs a cleared call once — a write under the idempotency key of
// this message's next write — and records nothing: Show does. False, and
// nothing runs, for a call cleared by another turn or one that waits for
// a person. Reads may run at once from several goroutines; writes one
// after another.
func (t *Calls) Execute(ctx context.Context, c Cleared) (Executed, bool) {
	if c.turn != t.s.id || c.a.confirm || c.a.approve {
		return Executed{}, false
	}
	key := ""
	if c.Writes() {
		key = t.e.directKey(t.s, c.a.tg.spec)
	}
	res, tr := t.e.execute(ctx, t.s, c.a.tg, c.a.args, key)
	return Executed{Cleared: c, Result: res, trace: tr}, true
}

// RecordRun records a run no model read — the turn's record, the reply's
// executions, the conversation's memory —, unlike Show: what it returned
// backs no later call's values.
func (t *Calls) RecordRun(x Executed) {
	t.e.noteRun(t.s, x.a.tg.entry.Spec.Name, x.a.args, x.Result, x.trace)
}

// ShowDraft answers the turn with a run's draft, as the server keeps it,
// with its buttons (only the publish button writes); false when the
// result holds no draft.
func (t *Calls) ShowDraft(x Executed) bool {
	if !drafted(x.Result) {
		return false
	}
	t.e.showDraft(t.s, x.Result)
	return true
}

// Remember keeps a line of a tool's outcome in the conversation's memory
// (a proposed action's status), which the model reads next turn.
func (t *Calls) Remember(name, status string) {
	t.e.rememberResult(t.s, name, status, tool.Result{Status: tool.StatusOK})
}

// ResultContent is a run's result as the model reads it: labelled data,
// with where it came from when that is another system, and when it was
// observed when that is not just now.
func (t *Calls) ResultContent(x Executed) string {
	return resultContent(x.a.tg.spec, x.trace.Status, x.Result, t.e.cfg.Now())
}

// Show records a run the model reads as shown — the turn's record, the
// reply's executions, the conversation's memory — and counts shown as
// content the model saw (where a later write's values came from).
func (t *Calls) Show(x Executed, shown string) { t.e.recordShown(t.s, x, shown) }

// ShowPreflight is Show for a read made before the model: it is also
// remembered as shown, as if the model had read it.
func (t *Calls) ShowPreflight(x Executed, shown string) {
	t.e.recordShown(t.s, x, shown)
	t.s.added[len(t.s.added)-1].Text = Clip(shown, maxToolMemory)
}

// ShowRan records the i-th call of Ran as Show does; false when i names
// none or one recorded already.
func (t *Calls) ShowRan(i int, shown string) bool {
	x, ok := t.s.confirmed.take(i)
	if ok {
		t.e.recordShown(t.s, x, shown)
	}
	return ok
}

// CarryOut is Call for a request: its Rule, when set, names the mode's
// rule that made the call, journaled as the guard "<mode>:<rule>".
func (t *Calls) CarryOut(ctx context.Context, r CallRequest) {
	guard := "mode:" + string(t.s.assistant.Mode)
	if r.Rule != "" {
		guard = string(t.s.assistant.Mode) + ":" + r.Rule
	}
	t.e.runFixedCall(ctx, t.s, callRequest{guard: guard, name: r.Tool, args: r.Args, attach: r.Attachments})
}

// Ran are the calls the user's yes ran in this turn, in order, before
// the mode's Resume. They are in no message yet: a Resumer records each
// (ShowRan or Record, by its index here) or shows it to its model its own
// way.
func (t *Calls) Ran() []Executed { return t.s.confirmed.ran }

// Record puts the i-th call of Ran in the turn's record, the reply's
// executions and the conversation's memory, where Messages shows it. It
// takes an index, not a RanCall, so that only a call that ran is
// recorded, and each at most once; false when i names none or one
// recorded already.
func (t *Calls) Record(i int) bool {
	x, ok := t.s.confirmed.take(i)
	if ok {
		t.e.noteRun(t.s, x.name, x.a.args, x.Result, x.trace)
	}
	return ok
}

// take returns the i-th call that ran and marks it recorded; false when i
// names none or one recorded already.
func (c *confirmedCalls) take(i int) (Executed, bool) {
	if i < 0 || i >= len(c.ran) || c.recorded[i] {
		return Executed{}, false
	}
	if c.recorded == nil {
		c.recorded = make(map[int]bool, len(c.ran))
	}
	c.recorded[i] = true
	return c.ran[i], true
}

// recordShown journals and remembers a run, and adds it, as shown, to
// what the model saw.
func (e *Engine) recordShown(s *state, x Executed, shown string) {
	e.noteRun(s, x.a.tg.entry.Spec.Name, x.a.args, x.Result, x.trace)
	m := s.added[len(s.added)-1]
	if shown != "" {
		m.Text = shown
	}
	// A copy, since s.viewed[1] may share its array with s.added.
	s.viewed[1] = append(slices.Clip(s.viewed[1]), m)
}

// Confirm puts writes that wait for the user's yes to the user, as one
// confirmation, and returns the id of the pending action their yes runs;
// "" when none could be put (the turn is answered with why).
func (t *Calls) Confirm(ctx context.Context, calls []Cleared) string {
	held := make([]authorized, 0, len(calls))
	for _, c := range calls {
		if c.turn != t.s.id || !c.a.confirm || c.a.approve {
			return ""
		}
		held = append(held, c.a)
	}
	if len(held) == 0 {
		return ""
	}
	t.e.proposeAll(ctx, t.s, held)
	if t.s.putPending == nil {
		return ""
	}
	return t.s.putPending.ID
}

// ProposeApproval stores a write for its approvers and returns what the
// model reads as its result: the action waits and has not happened.
// False when it could not be stored (the turn is answered with why).
func (t *Calls) ProposeApproval(ctx context.Context, c Cleared) (string, bool) {
	if c.turn != t.s.id || !c.a.approve {
		return "", false
	}
	act, ok := t.e.proposeApproval(ctx, t.s, c.a)
	if !ok {
		return "", false
	}
	return proposedContent(act), true
}

// resultContent is a tool result as the model reads it: labelled data,
// with where it came from and, when it was not observed just now (a
// tool's cached answer), when. The tool is named by the call the result
// answers (a tool message's call id, a block's tool attribute); its source
// only when it is another system's (an MCP server).
func resultContent(spec tool.Spec, status string, res tool.Result, now time.Time) string {
	out := resultMemo{Source: spec.Server, Status: status, Data: res.Data, Text: res.Text, Error: res.Error, Field: res.Field, Candidates: res.Candidates}
	if !res.ObservedAt.IsZero() && res.ObservedAt.Before(now.Add(-freshFor)) {
		out.ObservedAt = res.ObservedAt.UTC().Format(time.RFC3339)
	}
	b, _ := json.Marshal(out)
	return string(b)
}

// resultMemo is a tool's result as a model reads it, in a tool message
// or in memory (where it has no source nor time).
type resultMemo struct {
	Source     string          `json:"source,omitempty"`
	ObservedAt string          `json:"observed_at,omitempty"`
	Status     string          `json:"status"`
	Data       json.RawMessage `json:"data,omitempty"`
	Text       string          `json:"text,omitempty"`
	Error      string          `json:"error,omitempty"`
	Field      string          `json:"field,omitempty"`
	Candidates []string        `json:"candidates,omitempty"`
}

// freshFor is how old a result may be and still go to the model without
// its time: observed during the task.
const freshFor = time.Minute

// RefusalContent tells the model why a call did not run, without saying
// whether a refused tool exists.
func RefusalContent(v *Veto) string {
	out := struct {
		Status   string             `json:"status"`
		Reason   string             `json:"reason"`
		Problems []decision.Problem `json:"problems,omitempty"`
	}{"refused", v.Reason, v.Problems}
	if out.Reason == reasonUnknownTool || out.Reason == reasonNotGranted {
		out.Reason = "not_available"
	}
	b, _ := json.Marshal(out)
	return string(b)
}

// ResultsDiffer tells two results of one read that say different things:
// another status, or other facts.
func ResultsDiffer(was, now tool.Result) bool {
	return was.Status != now.Status || factDiff(was.Data, now.Data) != ""
}

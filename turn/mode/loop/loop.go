// Package loop is the tool-calling loop mode: the model calls tools, sees
// their results and calls again, until it answers without a call or a
// limit of the assistant (Settings.Limits) ends the task, handed to a person
// with the reason. Every call goes through the engine's guards
// (turn.Calls.Authorize); a write that waits for the user's yes or its
// approvers' ends the task until they decide, and the task goes on after
// (turn.Resumer).
package loop

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"

	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/turn"
)

// Name is the mode's name in turn.Config.Modes.
const Name turn.ModeName = "loop"

// opLoop labels a loop's model calls in the journal.
const opLoop = "loop"

// New returns the loop mode.
func New() turn.Mode { return mode{} }

// mode is the loop; a task that waited for a person goes on.
type mode struct{}

// Settings are a loop assistant's own (turn.Assistant.Settings); none
// are needed.
type Settings struct {
	// Limits bound a task; zero fields take the defaults.
	Limits Limits
	// Preflight are reads the task runs first, in this order and before
	// the model is asked, so the model starts from the case's facts (the
	// payment and the subscription of the ticket). They pass the same
	// guards as the model's calls; a write is refused.
	Preflight []turn.Command
	// HandOff offers the model the server's hand_off_to_human tool, to
	// hand the case to a person with a reason. Off by default; a task
	// that reaches a limit is handed over either way.
	HandOff bool
}

// settingsOf is an assistant's loop settings, after Check: never nil.
func settingsOf(a turn.Assistant) *Settings {
	if s, ok := a.Settings.(*Settings); ok && s != nil {
		return s
	}
	return &Settings{Limits: Limits{}.WithDefaults()}
}

// TakesSettings: a loop's are *Settings.
func (mode) TakesSettings(s any) bool {
	_, ok := s.(*Settings)
	return ok
}

// Check fills the limits' defaults, in a copy of the settings, and
// refuses a preflight read that is not a registered read.
func (mode) Check(a *turn.Assistant, in turn.CheckInput) error {
	s := turn.SettingsCopy[Settings](*a)
	s.Limits = s.Limits.WithDefaults()
	a.Settings = &s
	for _, c := range s.Preflight {
		entry, ok := in.Tools.Lookup(c.Tool)
		switch {
		case !ok:
			return in.Errorf("preflight tool %q is not registered", c.Tool)
		case entry.Spec.Risk.Writes():
			return in.Errorf("preflight tool %s writes; only reads run before the model", c.Tool)
		}
	}
	return nil
}

func (mode) Prompts(in turn.PromptInput) turn.Prompts {
	a, handOff := in.Assistant, settingsOf(in.Assistant).HandOff
	r := rules{handOff: handOff, live: in.Live, approvals: turn.WaitsForPeople(in.Tools)}
	p := turn.Prompts{System: prompt(in.Tenant, in.Language, a.Prompt, r), Tools: in.Defs}
	r.native = true
	p.Native = prompt(in.Tenant, in.Language, a.Prompt, r)
	if handOff {
		p.Tools = append(slices.Clip(in.Defs), handOffDef)
	}
	return p
}

func (mode) Run(ctx context.Context, t *turn.Turn) { run(ctx, t) }

// Resume goes on with the task after the calls a yes or an approval ran.
func (mode) Resume(ctx context.Context, t *turn.Turn) { run(ctx, t) }

// task is one loop's running state.
type task struct {
	t    *turn.Turn
	lim  Limits
	msgs []llm.Message
	// runs counts runs per call (turn.Cleared.Key).
	runs map[string]int
	// writes are the writes made or proposed so far (turn.Calls.Repeats),
	// with what the model was told of each.
	writes map[string]bool
	told   map[string]string
	trace  Trace
	draft  string // the model's latest text
	// fresh are the task's reads whose results stand for the current
	// state only for a while (tool.Spec.FreshFor), by call.
	fresh map[string]*freshRead
}

// Trace is what a loop task did and how it ended: the mode's section of
// the turn's record ("loop").
type Trace struct {
	ModelCalls  int `json:"model_calls"`
	ToolCalls   int `json:"tool_calls"`
	ResultBytes int `json:"result_bytes"`
	// Ended is "answer" (the model's final reply was sent),
	// "confirmation" (a write waits for the user's yes), "needs_review",
	// or "refused" (a call could not be put to its approvers).
	Ended string `json:"ended"`
}

// run is the loop. What cannot be answered within the limits — a limit
// reached, a dependency that stays down, output that breaks the contract
// — is handed to a person (needs_review) with the reason, never guessed.
func run(ctx context.Context, t *turn.Turn) {
	k := newTask(t)
	t.RecordSection(&k.trace)
	defer func() {
		// However the task was handed over (a limit here, a claim the
		// engine refused), its record says so.
		if t.Trace().Status == turn.StatusNeedsReview {
			k.trace.Ended = string(turn.StatusNeedsReview)
		}
	}()
	taskCtx, cancel := context.WithTimeout(ctx, k.lim.Deadline)
	defer cancel()
	if !t.Facts().Resuming() && !k.preflight(taskCtx) {
		return
	}
	k.msgs = t.Messages(taskCtx)
	k.confirmedResults()
	for k.step(ctx, taskCtx) {
	}
}

// step is one model call of the task and what follows from its answer.
// It reports whether the loop goes on.
func (k *task) step(turnCtx, taskCtx context.Context) bool {
	t := k.t
	switch {
	case taskCtx.Err() != nil:
		t.HandOff(turn.ReviewDeadline, "the task took longer than "+k.lim.Deadline.String(), k.draft)
		return false
	case k.trace.ModelCalls >= k.lim.ModelCalls:
		t.HandOff(turn.ReviewModelCalls, strconv.Itoa(k.lim.ModelCalls)+" model calls without a final answer", k.draft)
		return false
	}
	k.trace.ModelCalls++
	model := t.Model()
	resp, err := model.CompleteStreamed(taskCtx, llm.Request{
		Messages: k.msgs, Schema: model.Schema(), Tools: model.Prompts().Tools, ParallelToolCalls: true,
		Temperature: model.Temperature(), MaxTokens: model.MaxTokens(), Operation: opLoop,
	})
	if err != nil {
		if taskCtx.Err() != nil {
			t.HandOff(turn.ReviewDeadline, "the task took longer than "+k.lim.Deadline.String(), k.draft)
		} else {
			t.HandOff(turn.ReviewModelDown, turn.Clip(err.Error(), 300), k.draft)
		}
		return false
	}
	calls, text, native, problems := k.answerCalls(resp)
	if problems != nil {
		t.Trace().Repair = &turn.RepairTrace{Output: turn.Clip(resp.Text, 2000), Problems: problems}
		t.HandOff(turn.ReviewInvalidOutput, problems[0].Message, k.draft)
		return false
	}
	if text != "" {
		k.draft = text
	}
	if len(calls) == 0 {
		return k.answer(taskCtx, resp.Text, text)
	}
	if k.trace.ToolCalls+len(calls) > k.lim.ToolCalls {
		t.HandOff(turn.ReviewToolCalls, strconv.Itoa(k.lim.ToolCalls)+" tool calls reached", k.draft)
		return false
	}
	k.trace.ToolCalls += len(calls)
	return k.runCalls(turnCtx, taskCtx, calls, native, resp.Text)
}

// answer sends the model's final answer, unless a result it rests on has
// gone stale and changed (the loop goes on) or it claims what no call
// confirmed.
func (k *task) answer(ctx context.Context, said, text string) bool {
	if again, ok := k.refreshStale(ctx, said); !ok {
		return false
	} else if again {
		return true
	}
	if k.t.Answer().ClaimsUnconfirmed(text) {
		return false
	}
	k.trace.Ended = "answer"
	k.t.Reply(text)
	return false
}

// taskSlot keeps what a task waiting for the user's yes has used of its
// limits, until the task goes on or another begins.
const taskSlot = "loop_task"

// savedTask is a task's use of its limits while it waits for a yes: the
// pending action it waits on, its model and tool calls, the result bytes
// it read and its runs per call.
type savedTask struct {
	Pending     string         `json:"pending"`
	ModelCalls  int            `json:"model_calls"`
	ToolCalls   int            `json:"tool_calls"`
	ResultBytes int            `json:"result_bytes"`
	Runs        map[string]int `json:"runs"`
}

// newTask starts a task, or goes on with the one whose pending action
// this turn's yes ran: with what it has used of its limits (the deadline
// is counted from now: waiting for the user is not the task's time), or,
// when that is not kept, with the confirmed calls counted.
func newTask(t *turn.Turn) *task {
	k := &task{t: t, lim: settingsOf(t.Facts().Assistant()).Limits, runs: map[string]int{}}
	confirmed := t.Facts().Confirmed()
	if confirmed == "" {
		t.Memory().DropSlot(taskSlot)
		return k
	}
	var saved savedTask
	kept := t.Memory().Slot(taskSlot, &saved)
	t.Memory().DropSlot(taskSlot)
	if kept && saved.Pending == confirmed {
		k.trace.ModelCalls, k.trace.ToolCalls, k.trace.ResultBytes = saved.ModelCalls, saved.ToolCalls, saved.ResultBytes
		for key, n := range saved.Runs {
			k.runs[key] = n
		}
		return k
	}
	for _, x := range t.Calls().Ran() {
		k.runs[x.Key()]++
		k.trace.ToolCalls++
	}
	return k
}

// save keeps the task's use of its limits with the pending action the
// turn proposed, for the turn its yes arrives in.
func (k *task) save(pending string) {
	if pending == "" {
		return
	}
	k.t.Memory().SetSlot(taskSlot, savedTask{Pending: pending, ModelCalls: k.trace.ModelCalls, ToolCalls: k.trace.ToolCalls,
		ResultBytes: k.trace.ResultBytes, Runs: k.runs})
}

// confirmedResults puts the calls the user's yes ran in this turn in the
// task's transcript, after the yes: the model's calls as they were stored,
// each answered by its result, as the calls of an answer are (tool
// messages, or tool_result blocks for a model that answers in JSON).
func (k *task) confirmedResults() {
	t := k.t
	ran := t.Calls().Ran()
	if len(ran) == 0 {
		return
	}
	native := t.Model().Protocol() == llm.ProtocolTools
	calls := make([]llm.ToolCall, len(ran))
	for i, x := range ran {
		calls[i] = llm.ToolCall{Name: x.Tool(), Arguments: x.Args()}
	}
	calls = llm.UniqueCallIDs(k.msgs, calls)
	if native {
		k.msgs = append(k.msgs, llm.Message{Role: llm.RoleAssistant, ToolCalls: calls})
	}
	for i, x := range ran {
		content := t.Calls().ResultContent(x)
		t.Calls().ShowRan(i, content)
		k.trace.ResultBytes += len(content)
		if native {
			k.msgs = append(k.msgs, llm.Message{Role: llm.RoleTool, ToolCallID: calls[i].ID, Content: content, IsError: x.Failed()})
		} else {
			k.msgs = append(k.msgs, llm.Message{Role: llm.RoleUser, Content: t.Model().ResultBlock(x.Tool(), content)})
		}
	}
}

// preflight runs the assistant's preflight reads in order; their results
// join the turn's messages as data, as if the model had read them. A read
// that fails is shown as failed; a read refused is recorded and skipped.
// It reports false when a limit ended the task.
func (k *task) preflight(ctx context.Context) bool {
	t := k.t
	for _, c := range settingsOf(t.Facts().Assistant()).Preflight {
		if k.trace.ToolCalls >= k.lim.ToolCalls {
			t.HandOff(turn.ReviewToolCalls, "the preflight reads passed "+strconv.Itoa(k.lim.ToolCalls)+" tool calls", "")
			return false
		}
		k.trace.ToolCalls++
		cl, v := t.Calls().Authorize(ctx, turn.CallRequest{Tool: c.Tool, Args: json.RawMessage(c.Args), Preflight: true})
		if v != nil {
			continue
		}
		x, ok := t.Calls().Execute(ctx, cl)
		if !ok {
			// A read that waits for the user's yes is not made unasked.
			t.Note("preflight " + c.Tool + " needs the user's yes; not read before the model")
			continue
		}
		t.Calls().ShowPreflight(x, t.Calls().ResultContent(x))
		k.runs[cl.Key()]++
		k.noteRead(x)
	}
	return true
}

package mode_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/llm/llmtest"
	"github.com/arbiterhq/arbiter/store/sqlitestore"
	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/turn"
	"github.com/arbiterhq/arbiter/turn/mode/builtin"
	"github.com/arbiterhq/arbiter/turn/mode/loop"
)

// tally is a toy mode: it counts the conversation's turns in a slot of
// its own, asks the model with its own prompt and numbers the reply; a
// message that starts with "do:" is decided and carried out the way a
// single-decision assistant does it.
type tally struct{}

func (tally) Check(a *turn.Assistant, in turn.CheckInput) error {
	if strings.TrimSpace(a.Prompt) == "" {
		return in.Errorf("a tally assistant needs a prompt")
	}
	return nil
}

func (tally) Prompts(in turn.PromptInput) turn.Prompts {
	var b strings.Builder
	name, language := turn.Speaker(in.Tenant, in.Language)
	b.WriteString("You are " + name + ", and you count.\n\n")
	turn.WriteOwn(&b, in.Assistant.Prompt)
	b.WriteString("Answer in " + language + ".\n")
	return turn.Prompts{System: b.String(), Tools: in.Defs}
}

func (tally) Run(ctx context.Context, t *turn.Turn) {
	var n int
	t.Memory().Slot("tally", &n)
	n++
	t.Memory().SetSlot("tally", n)
	if note, ok := strings.CutPrefix(t.Input(), "note:"); ok {
		args, _ := json.Marshal(map[string]string{"text": strings.TrimSpace(note)})
		t.Call(ctx, "add_note", args)
		return
	}
	if strings.HasPrefix(t.Input(), "delete:") {
		t.Call(ctx, "delete_everything", json.RawMessage(`{}`))
		return
	}
	if strings.HasPrefix(t.Input(), "do:") {
		if d, ok := t.Decide(ctx, t.Messages(ctx)); ok {
			t.Act(ctx, d)
		}
		return
	}
	resp, err := t.Model().Complete(ctx, llm.Request{Messages: t.Messages(ctx), Operation: "tally", MaxTokens: 50})
	if err != nil {
		t.Answer().ModelFailed(err)
		return
	}
	t.Note(fmt.Sprintf("tally %d", n))
	t.RecordSection(map[string]int{"count": n})
	t.Reply(fmt.Sprintf("%d: %s", n, resp.Text))
}

// takingTally is tally taking every message, a yes included.
type takingTally struct{ tally }

func (takingTally) TakesEveryMessage() {}

// resumingTally is tally whose task goes on after a write the user
// confirmed: it reads the write's outcome from the turn's messages.
type resumingTally struct{ tally }

func (resumingTally) Resume(ctx context.Context, t *turn.Turn) {
	for i := range t.Calls().Ran() {
		if !t.Calls().Record(i) || t.Calls().Record(i) {
			panic("a call that ran is recorded once")
		}
	}
	msgs := t.Messages(ctx)
	t.Reply("after the yes: " + msgs[len(msgs)-1].Content)
}

// noteTool records the notes it is asked to add.
type noteTool struct {
	name    string
	confirm tool.Confirm
	mu      sync.Mutex
	notes   []string
}

func (n *noteTool) Spec() tool.Spec {
	return tool.Spec{
		Name:        n.name,
		Description: "Add a note.",
		InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["text"],"properties":{"text":{"type":"string"}}}`),
		Policy:      tool.Policy{Risk: tool.RiskWriteSafe, Idempotent: true, Confirm: n.confirm},
	}
}

func (n *noteTool) Call(_ context.Context, c tool.Call) (tool.Result, error) {
	var a struct{ Text string }
	if err := json.Unmarshal(c.Args, &a); err != nil {
		return tool.Result{}, err
	}
	n.mu.Lock()
	n.notes = append(n.notes, a.Text)
	n.mu.Unlock()
	return tool.Result{Status: tool.StatusOK, Text: "noted"}, nil
}

type bench struct {
	t     *testing.T
	eng   *turn.Engine
	st    *sqlitestore.Store
	model *llmtest.Scripted
	notes *noteTool
	// letters waits for the user's yes.
	letters *noteTool
}

func newBench(t *testing.T, a turn.Assistant) (*bench, error) {
	return newBenchWith(t, a, tally{})
}

func newBenchWith(t *testing.T, a turn.Assistant, m turn.Mode) (*bench, error) {
	return newBenchNamed(t, a, "tally", m)
}

// newBenchNamed registers m as mode name, beside the tools extra.
func newBenchNamed(t *testing.T, a turn.Assistant, name turn.ModeName, m turn.Mode, extra ...tool.Tool) (*bench, error) {
	st, err := sqlitestore.Open(filepath.Join(t.TempDir(), "toy.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	b := &bench{t: t, st: st, model: llmtest.NewScripted(), notes: &noteTool{name: "add_note"},
		letters: &noteTool{name: "send_letter", confirm: tool.ConfirmAlways}}
	reg, err := tool.NewRegistry(append([]tool.Tool{b.notes, b.letters}, extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	modes := builtin.Modes()
	modes[name] = m
	if a.Mode == "" {
		a.Mode = name
	}
	b.eng, err = turn.New(turn.Config{State: st, Locker: st, Journal: st, Tools: reg, Model: b.model, Modes: modes, DefaultMode: builtin.DefaultMode,
		Assistants: map[string]turn.Assistant{"counter": a},
		Tenants: map[string]turn.Tenant{"t": {ID: "t", Language: "en", AssistantName: "Tally", Assistant: "counter",
			Roles: map[string]turn.Role{"desk": {Tools: []string{"*"}}}}}})
	return b, err
}

func (b *bench) send(text string) (chat.Outbound, []string) {
	b.t.Helper()
	id := chat.Identity{TenantID: "t", UserID: "u", Role: "desk", Scopes: []chat.Scope{chat.ScopeRead, chat.ScopeWriteSafe}}
	out, err := b.eng.HandleTurn(context.Background(), chat.Inbound{Identity: id, Chat: "c", Text: text})
	if err != nil {
		b.t.Fatal(err)
	}
	rec, err := b.st.GetTurn(context.Background(), "t", out.TurnID)
	if err != nil {
		b.t.Fatal(err)
	}
	var ops []string
	for _, c := range rec.LLMCalls {
		ops = append(ops, c.Operation)
	}
	return out, ops
}

// A mode registered from outside the engine runs its turns: its prompt is
// what the model sees, its slot lasts from turn to turn, its model call
// is journaled under its operation.
func TestToyModeRunsTurns(t *testing.T) {
	b, err := newBench(t, turn.Assistant{Prompt: "Number every answer."})
	if err != nil {
		t.Fatal(err)
	}
	b.model.Push(llmtest.Text("hello"), llmtest.Text("again"))
	out, ops := b.send("hi")
	if out.Say != "1: hello" || strings.Join(ops, ",") != "tally" {
		t.Errorf("first turn: reply %q, model calls %v", out.Say, ops)
	}
	out, _ = b.send("and again")
	if out.Say != "2: again" {
		t.Errorf("second turn: reply %q, want the count kept in the mode's slot", out.Say)
	}
	rec := b.record(out)
	if !slices.Contains(rec.Notes, "tally 2") {
		t.Errorf("notes %q, want the mode's", rec.Notes)
	}
	if got := string(rec.Tally); got != `{"count":2}` {
		t.Errorf("the mode's own section of the record %q, want its count", got)
	}
	reqs := b.model.Requests()
	if len(reqs) != 2 || !strings.HasPrefix(reqs[0].Messages[0].Content, "You are Tally, and you count.\n\nNumber every answer.") {
		t.Fatalf("requests %d, first system prompt %q", len(reqs), reqs[0].Messages[0].Content)
	}
	if last := reqs[1].Messages[len(reqs[1].Messages)-1]; last.Content != "and again" {
		t.Errorf("the second request ends with %q, want the user's words", last.Content)
	}
	if !hasMessage(reqs[1].Messages, "1: hello") {
		t.Errorf("the second request lacks the first reply from memory: %+v", reqs[1].Messages)
	}
}

// A toy mode's decision goes through the engine's guards and runs its
// tool, as any mode's does.
func TestToyModeDecisionRunsTheTool(t *testing.T) {
	b, err := newBench(t, turn.Assistant{Prompt: "Take notes."})
	if err != nil {
		t.Fatal(err)
	}
	b.model.Push(llmtest.Text(`{"tool":"add_note","args":{"text":"call back"},"say":"Noting it."}`))
	out, ops := b.send("do: note that I call back")
	if len(b.notes.notes) != 1 || b.notes.notes[0] != "call back" {
		t.Fatalf("notes %v, reply %q, calls %v", b.notes.notes, out.Say, ops)
	}
	if strings.Contains(out.Say, "Noting it.") {
		t.Errorf("reply %q is the model's say, not the tool's result", out.Say)
	}
}

// A bare "yes" is the engine's to read as a confirmation, unless the mode
// takes every message (turn.MessageTaker).
func TestToyModeTakesEveryMessage(t *testing.T) {
	b, err := newBench(t, turn.Assistant{Prompt: "Count."})
	if err != nil {
		t.Fatal(err)
	}
	b.model.Push(llmtest.Text("counted"))
	if out, ops := b.send("yes"); len(ops) != 0 || strings.HasPrefix(out.Say, "1:") {
		t.Errorf("a yes with nothing waiting went to the mode: reply %q, model calls %v", out.Say, ops)
	}
	b, err = newBenchWith(t, turn.Assistant{Prompt: "Count."}, takingTally{})
	if err != nil {
		t.Fatal(err)
	}
	b.model.Push(llmtest.Text("counted"))
	if out, ops := b.send("yes"); out.Say != "1: counted" || strings.Join(ops, ",") != "tally" {
		t.Errorf("the taking mode: reply %q, model calls %v", out.Say, ops)
	}
}

// A call the mode makes by its own rule goes through the guards as the
// model's would: a granted tool runs and the reply is its result, a tool
// the catalog lacks is refused, journaled under the mode's name.
func TestToyModeCall(t *testing.T) {
	b, err := newBench(t, turn.Assistant{Prompt: "Take notes."})
	if err != nil {
		t.Fatal(err)
	}
	out, ops := b.send("note: ring the bank")
	if len(b.notes.notes) != 1 || b.notes.notes[0] != "ring the bank" || len(ops) != 0 {
		t.Fatalf("notes %v, model calls %v, reply %q", b.notes.notes, ops, out.Say)
	}
	out, _ = b.send("delete: all of it")
	tr := b.record(out)
	if len(tr.Vetoes) != 1 || tr.Vetoes[0].Guard != "mode:tally" || tr.Vetoes[0].Tool != "delete_everything" {
		t.Errorf("vetoes %+v, reply %q", tr.Vetoes, out.Say)
	}
}

// publisher is a mode that tries to publish a draft of its own, once by
// Turn.Call and once by Calls.Authorize and Calls.Execute.
type publisher struct{ tally }

func (publisher) Run(ctx context.Context, t *turn.Turn) {
	args := json.RawMessage(`{"text":"unreviewed post"}`)
	t.Call(ctx, "publish_post", args)
	if c, v := t.Calls().Authorize(ctx, turn.CallRequest{Tool: "publish_post", Args: args}); v == nil {
		t.Calls().Execute(ctx, c)
	}
	t.Reply("tried")
}

// A tool that publishes a draft runs only from its draft's button: a mode
// cannot run it by any path of the Turn handle, not even a mode that
// names itself "choice", the draft button's guard.
func TestModeCannotPublishADraft(t *testing.T) {
	posts := &noteTool{name: "publish_post"}
	publish := publishingTool{posts}
	for _, name := range []turn.ModeName{"tally", "choice"} {
		b, err := newBenchNamed(t, turn.Assistant{Prompt: "Publish."}, name, publisher{}, publish)
		if err != nil {
			t.Fatal(err)
		}
		out, _ := b.send("publish it")
		if len(posts.notes) != 0 {
			t.Fatalf("mode %s published %v", name, posts.notes)
		}
		tr := b.record(out)
		if len(tr.Vetoes) != 2 {
			t.Fatalf("mode %s: vetoes %+v, want both calls refused", name, tr.Vetoes)
		}
		for _, v := range tr.Vetoes {
			if v.Tool != "publish_post" || v.Reason != "not_granted" {
				t.Errorf("mode %s: veto %+v", name, v)
			}
		}
	}
}

// publishingTool is a noteTool that publishes a draft.
type publishingTool struct{ *noteTool }

func (p publishingTool) Spec() tool.Spec {
	sp := p.noteTool.Spec()
	sp.PublishesDraft = true
	return sp
}

// A write the user confirms runs once; then the mode that goes on after
// it (turn.Resumer) tells the user, reading the outcome among the turn's
// messages, and another is answered with the engine's line.
func TestToyModeResumesAfterTheYes(t *testing.T) {
	for _, tc := range []struct {
		name string
		mode turn.Mode
		want string
	}{
		{"resumer", resumingTally{}, "after the yes: "},
		{"plain", tally{}, ""},
	} {
		b, err := newBenchWith(t, turn.Assistant{Prompt: "Write letters."}, tc.mode)
		if err != nil {
			t.Fatal(err)
		}
		b.model.Push(llmtest.Text(`{"tool":"send_letter","args":{"text":"dear bank"},"say":"Sending."}`))
		if out, _ := b.send("do: write to the bank"); len(out.Buttons) == 0 || len(b.letters.notes) != 0 {
			t.Fatalf("%s: the write did not wait for a yes: reply %q, buttons %v, sent %v", tc.name, out.Say, out.Buttons, b.letters.notes)
		}
		out, ops := b.send("yes")
		if len(b.letters.notes) != 1 || len(ops) != 0 {
			t.Fatalf("%s: after the yes sent %v, model calls %v", tc.name, b.letters.notes, ops)
		}
		if resumed := strings.HasPrefix(out.Say, "after the yes: "); resumed != (tc.want != "") || resumed && !strings.Contains(out.Say, "send_letter") {
			t.Errorf("%s: reply %q", tc.name, out.Say)
		}
	}
}

// The engine refuses modes that leave unclear what an assistant naming
// none runs (the turns of a tenant without an assistant run under it),
// a mode named after a key of the turn's record, and no modes at all: it
// has none of its own to fall back on. One mode is the default by itself.
func TestModesNeedTheDefault(t *testing.T) {
	st, err := sqlitestore.Open(filepath.Join(t.TempDir(), "toy.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tally := turn.Modes{"tally": tally{}}
	for _, c := range []struct {
		modes turn.Modes
		def   turn.ModeName
		want  string
	}{
		{builtin.Modes(), "", `Config.DefaultMode "" is none of the modes (interview, loop, router, single)`},
		{builtin.Modes(), "tally", `Config.DefaultMode "tally" is none of the modes`},
		{turn.Modes{"status": tally["tally"]}, "", `mode "status" is named after a key of the turn's record`},
		{turn.Modes{"tally": tally["tally"], "say": tally["tally"]}, "tally", `mode "say" is named after a key`},
		{nil, "", "Config.Modes is empty"},
	} {
		_, err = turn.New(turn.Config{State: st, Locker: st, Journal: st, Modes: c.modes, DefaultMode: c.def})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("modes %v, default %q: err = %v, want %q", c.modes.Names(), c.def, err, c.want)
		}
	}
	if _, err = turn.New(turn.Config{State: st, Locker: st, Journal: st, Modes: tally}); err != nil {
		t.Errorf("one mode, the default by itself: %v", err)
	}
}

// A mode's Check refuses an assistant it cannot run, and New says which.
func TestToyModeCheck(t *testing.T) {
	_, err := newBench(t, turn.Assistant{})
	if err == nil || !strings.Contains(err.Error(), "assistant counter: a tally assistant needs a prompt") {
		t.Errorf("err = %v", err)
	}
	_, err = newBench(t, turn.Assistant{Prompt: "Count.", Settings: &loop.Settings{HandOff: true}})
	if err == nil || !strings.Contains(err.Error(), "assistant counter: its settings are mode loop's, not tally's") {
		t.Errorf("a loop's settings on another mode: err = %v", err)
	}
	_, err = newBench(t, turn.Assistant{Prompt: "Count.", Settings: map[string]int{"questions": 3}})
	if err == nil || !strings.Contains(err.Error(), "assistant counter: no mode takes settings of type map[string]int") {
		t.Errorf("settings no mode takes: err = %v", err)
	}
	_, err = newBench(t, turn.Assistant{Mode: "swarm", Prompt: "Count."})
	if err == nil || !strings.Contains(err.Error(), `unknown mode "swarm" (one of: interview, loop, router, single, tally)`) {
		t.Errorf("err = %v, want the registered modes named", err)
	}
}

// record is what the journal holds of a turn's trace.
type record struct {
	Notes  []string                               `json:"notes"`
	Vetoes []struct{ Guard, Tool, Reason string } `json:"vetoes"`
	Tally  json.RawMessage                        `json:"tally"`
}

func (b *bench) record(out chat.Outbound) record {
	b.t.Helper()
	rec, err := b.st.GetTurn(context.Background(), "t", out.TurnID)
	if err != nil {
		b.t.Fatal(err)
	}
	var r record
	if err := json.Unmarshal(rec.Trace, &r); err != nil {
		b.t.Fatal(err)
	}
	return r
}

func hasMessage(msgs []llm.Message, content string) bool {
	for _, m := range msgs {
		if m.Content == content {
			return true
		}
	}
	return false
}

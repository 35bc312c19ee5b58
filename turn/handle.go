package turn

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/tool"
)

// Turn is a mode's handle on the turn it runs: what the user said, the
// prompt and the model, and the steps that end a turn — a reply, a
// decision or a call carried out through the guards, a hand-off. Everything a mode
// does to the turn goes through it, so the kernel's rules (what is
// remembered, journaled, authorized) hold for every mode.
type Turn struct {
	e *Engine
	s *state
}

// Input is the user's words of this turn.
func (t *Turn) Input() string { return t.s.route.input }

// Language is the language the turn answers in.
func (t *Turn) Language() string { return t.s.lang }

// Now is the turn's time.
func (t *Turn) Now() time.Time { return t.s.now }

// Assistant is the profile the turn runs under, its defaults filled.
func (t *Turn) Assistant() Assistant { return t.s.assistant }

// Prompts are what the mode built for the caller's catalog.
func (t *Turn) Prompts() Prompts { return t.s.cat.prompts }

// Messages are the model's view of the conversation: the mode's system
// prompt, the remembered messages within the memory window, the live
// context and this turn's messages.
func (t *Turn) Messages(ctx context.Context) []llm.Message { return t.e.assemble(ctx, t.s) }

// Complete makes one model call of the turn, journaled with its
// attempts; the strategy is the turn's.
func (t *Turn) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	req.Strategy = t.s.strategy
	return t.e.complete(ctx, t.s, req)
}

// Temperature is the engine's sampling temperature for a turn's answer.
func (t *Turn) Temperature() float64 { return t.e.cfg.Temperature }

// Prompted records a prompt the mode assembled itself rather than with
// Messages: how many messages follow its system prompt, and how much of it
// repeats the conversation's last prompt (what a provider's cache reuses).
func (t *Turn) Prompted(msgs []llm.Message) {
	t.e.measurePrefix(t.s, msgs)
	t.s.trace.PromptMessages = len(msgs) - 1
}

// Proposal is a model's decision that parsed against the catalog, its
// arguments in canonical form.
type Proposal struct{ p proposal }

// Say is what the model would tell the user.
func (p Proposal) Say() string { return p.p.Say }

// Tool is the tool the model proposes to call, or "".
func (p Proposal) Tool() string { return p.p.Tool }

// Decide asks the model for one decision on msgs, under the strict
// contract with one repair. False: the turn is answered already (the
// model failed, or its output stayed invalid).
func (t *Turn) Decide(ctx context.Context, msgs []llm.Message) (Proposal, bool) {
	p, ok := t.e.decide(ctx, t.s, msgs)
	return Proposal{p}, ok
}

// Act carries out a decision: a reply, or its call through the guards —
// refused, put to the user or its approvers, or run.
func (t *Turn) Act(ctx context.Context, p Proposal) { t.e.act(ctx, t.s, p.p) }

// Call makes a call the mode decided on by its own rules, not the model's,
// through the same guards, under the guard "mode:<name>": refused, put to
// the user or its approvers, or run and answered from its result. The
// prefix keeps a mode's name from ever reading as one of the engine's own
// paths (a draft's button, "choice", may publish; a mode's call may not).
func (t *Turn) Call(ctx context.Context, name string, args json.RawMessage) {
	t.CarryOut(ctx, CallRequest{Tool: name, Args: args})
}

// CarryOut is Call for a request: its Rule, when set, names the mode's
// rule that made the call, journaled as the guard "<mode>:<rule>".
func (t *Turn) CarryOut(ctx context.Context, r CallRequest) {
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
func (t *Turn) Ran() []Executed { return t.s.confirmed.ran }

// Record puts the i-th call of Ran in the turn's record, the reply's
// executions and the conversation's memory, where Messages shows it. It
// takes an index, not a RanCall, so that only a call that ran is
// recorded, and each at most once; false when i names none or one
// recorded already.
func (t *Turn) Record(i int) bool {
	x, ok := t.s.confirmed.take(i)
	if ok {
		t.e.noteRun(t.s, x.name, x.a.args, x.Result, x.trace)
	}
	return ok
}

// Reply answers the turn with text (links made inert where the
// deployment says so) and remembers it.
func (t *Turn) Reply(text string, buttons ...chat.Button) { t.e.replyText(t.s, text, buttons) }

// Options are buttons for suggested answers: a press answers with the
// option's text as words the user typed, never as a confirmation or a
// command.
func (t *Turn) Options(values []string) []chat.Button { return t.e.offerOptions(t.s, values) }

// NotAvailable answers the turn with the server's line on what is not
// available to the user, so nothing was done.
func (t *Turn) NotAvailable() { t.e.replyText(t.s, say(t.s.lang, txtNotAvailable), nil) }

// Rephrase answers the turn asking the user to say it again: the model's
// answer could not be read.
func (t *Turn) Rephrase() { t.e.replyText(t.s, say(t.s.lang, txtRephrase), nil) }

// ShowSkill tells the client the conversation's skill after this turn
// (chat.Outbound.Skill): its id, "" for none, and its label.
func (t *Turn) ShowSkill(id, label string) { t.s.out.Skill, t.s.out.SkillLabel = &id, label }

// Step tells a streaming channel that a step of kind began or ended, in
// text's words; nothing is built when none listens.
func (t *Turn) Step(kind, name string, text tool.Localized, done bool) {
	if t.s.listening() {
		t.s.show(chat.Step{Kind: kind, Name: name, Text: text.In(t.s.lang), Done: done}, tool.Spec{})
	}
}

// SetFinal makes f the turn's deliverable (chat.Outbound.Final).
func (t *Turn) SetFinal(f chat.Final) { t.s.out.Final = &f }

// ModelFailed ends a turn whose model call failed: nothing runs, the
// user is told, the turn is journaled as failed.
func (t *Turn) ModelFailed(err error) { t.e.modelFailed(t.s, err) }

// HandOff ends the turn as needs_review: a person takes it over with the
// reason and the model's last draft, and the user is told so.
func (t *Turn) HandOff(reason ReviewReason, detail, draft string) {
	t.e.handOff(t.s, draft, reason, detail)
}

// EvidenceBlocks is the evidence as the model reads data: each piece in
// a block whose tags carry the conversation's marker, after a newline.
func (t *Turn) EvidenceBlocks() string {
	var b strings.Builder
	marker := blockMarker(t.s)
	for _, ev := range t.s.in.Evidence {
		b.WriteString("\n<evidence" + marker + " kind=\"" + attr(ev.Kind) + "\">\n" + fence(ev.Text, marker) + "\n</evidence" + marker + ">")
	}
	return b.String()
}

// Trace is the turn's record, where a mode notes what it did (its own
// section of the record among them).
func (t *Turn) Trace() *Trace { return &t.s.trace }

// RecordSection keeps v as the mode's own section of the turn's record
// (Trace.Sections, under the mode's name), in place of an earlier one.
// It is encoded when the record is written, so a pointer the mode goes on
// filling records how the turn ended; values of fields a tool redacts are
// hashed in it as everywhere.
func (t *Turn) RecordSection(v any) {
	if t.s.trace.Sections == nil {
		t.s.trace.Sections = Sections{}
	}
	t.s.trace.Sections[t.s.assistant.Mode] = v
}

// Note adds a line to the turn's record.
func (t *Turn) Note(text string) { t.s.trace.Notes = append(t.s.trace.Notes, text) }

// Slot decodes the conversation's slot name into v: the mode's durable
// state beside the memory. False when it is absent or does not decode.
func (t *Turn) Slot(name string, v any) bool { return getSlot(t.s, name, v) }

// DropSlot forgets the conversation's slot name.
func (t *Turn) DropSlot(name string) { delete(t.s.conv.Slots, name) }

// SetSlot keeps v as the conversation's slot name, committed with the
// turn.
func (t *Turn) SetSlot(name string, v any) { setSlot(t.s, name, v) }

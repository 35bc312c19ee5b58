package turn

import (
	"context"
	"encoding/json"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/llm"
)

// Turn is a mode's handle on the turn it runs: what the user said, the
// model's view of the conversation, and the steps that end a turn — a
// reply, a decision or a call carried out through the guards, a hand-off.
// Everything a mode does to the turn goes through it, so the kernel's
// rules (what is remembered, journaled, authorized) hold for every mode.
//
// Its own methods are what most modes need; the rest is grouped by
// concern in facets, each the same turn seen from one side:
//
//   - Facts: the moment, read-only — language, time, profile, tenant,
//     button, client, evidence, whether the turn resumes a task.
//   - Model: the prompt and the model calls, each journaled.
//   - Calls: a mode's own calls through the guards — authorize, execute,
//     confirm or propose for approval, and record what ran.
//   - Memory: the conversation's slots, its last messages and its draft.
//   - Answer: the other ways to answer — options, the server's lines,
//     progress steps, the deliverable, a failed model, an unbacked claim.
type Turn struct {
	e *Engine
	s *state
}

// The facets: each has Turn's fields, so a conversion is the whole cost.
type (
	// Facts is what a mode reads of the turn's moment; see Turn.
	Facts Turn
	// Model is the turn's prompt and model; see Turn.
	Model Turn
	// Calls is how a mode's own calls go through the guards; see Turn.
	Calls Turn
	// Memory is the conversation's durable state as a mode sees it; see Turn.
	Memory Turn
	// Answer is how a turn answers besides Reply and HandOff; see Turn.
	Answer Turn
)

// Facts is the turn's moment.
func (t *Turn) Facts() *Facts { return (*Facts)(t) }

// Model is the turn's prompt and model.
func (t *Turn) Model() *Model { return (*Model)(t) }

// Calls is the way of a mode's own calls through the guards.
func (t *Turn) Calls() *Calls { return (*Calls)(t) }

// Memory is the conversation's durable state.
func (t *Turn) Memory() *Memory { return (*Memory)(t) }

// Answer is the turn's other ways to answer.
func (t *Turn) Answer() *Answer { return (*Answer)(t) }

// Input is the user's words of this turn.
func (t *Turn) Input() string { return t.s.route.input }

// Messages are the model's view of the conversation: the mode's system
// prompt, the remembered messages within the memory window, the live
// context and this turn's messages.
func (t *Turn) Messages(ctx context.Context) []llm.Message { return t.e.assemble(ctx, t.s) }

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
	t.Calls().CarryOut(ctx, CallRequest{Tool: name, Args: args})
}

// Reply answers the turn with text (links made inert where the
// deployment says so) and remembers it.
func (t *Turn) Reply(text string, buttons ...chat.Button) { t.e.replyText(t.s, text, buttons) }

// HandOff ends the turn as needs_review: a person takes it over with the
// reason and the model's last draft, and the user is told so.
func (t *Turn) HandOff(reason ReviewReason, detail, draft string) {
	t.e.handOff(t.s, draft, reason, detail)
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

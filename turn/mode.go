package turn

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/tool"
)

// Mode is how an assistant gets from a message to its reply: the step of
// the pipeline after the deterministic routes, once a model is there to
// ask. The engine names no mode; it looks an assistant's mode up by name
// in Config.Modes and asks it three things: whether the assistant's
// settings are right for it (once, in New), what its stable prompts are
// (once per catalog), and to take a turn to its reply (Run). What a mode
// may do with a turn is what Turn offers; what the engine should know of
// a mode besides is said by the optional interfaces below (Resumer,
// MessageTaker, AnswerAwaiter, SlotKeeper, SettingsTaker).
type Mode interface {
	// Check validates assistant a for this mode and fills the defaults
	// of its settings; in is the rest of the configuration.
	Check(a *Assistant, in CheckInput) error
	// Prompts builds the prompts and tool definitions of one catalog.
	Prompts(in PromptInput) Prompts
	// Run takes the turn to its reply: a reply, an action put to the
	// user or its approvers, or a hand-off.
	Run(ctx context.Context, t *Turn)
}

// ModeName names a mode in Config.Modes (Assistant.Mode).
type ModeName string

// OpTurn labels a turn's answer in the journal's model calls.
const OpTurn = opTurn

// Modes are the modes assistants may name, by name.
type Modes map[ModeName]Mode

// Names are the modes' names, sorted.
func (m Modes) Names() []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, string(n))
	}
	slices.Sort(names)
	return names
}

// Resumer is a mode whose task goes on after a write that waited for a
// person, and tells the user its outcome instead of the engine's line on
// it: after a user's yes, the calls it ran are in Calls.Ran; after the
// approvers', the action's outcome is among the turn's messages.
type Resumer interface {
	Mode
	Resume(ctx context.Context, t *Turn)
}

// MessageTaker is a mode that takes every message which is not a
// command, a direct call or empty, before the engine reads it as a yes, a
// no or a choice: an interviewer's "да" is an answer, not a confirmation.
type MessageTaker interface {
	Mode
	TakesEveryMessage()
}

// AnswerAwaiter is a mode that may have asked the user something a short
// "yes" answers: while AwaitsAnswer says so and no action waits, a yes is
// a message for the mode, not a confirmation of nothing.
type AnswerAwaiter interface {
	Mode
	AwaitsAnswer(t *Turn) bool
}

// SlotKeeper is a mode that keeps state of its own in the conversation's
// slots (Memory.SetSlot) for longer than the messages, or that a reset, a
// cancel or a closed case must end.
type SlotKeeper interface {
	Mode
	Slots() []ModeSlot
}

// ModeSlot is a slot a mode keeps.
type ModeSlot struct {
	Name string
	// Default is how long the slot lasts after the turn that committed
	// it where Lifetimes.Slots sets nothing for it; zero: as long as the
	// messages.
	Default time.Duration
	// Task: the slot is a task in progress (questions to answer), which /reset,
	// /cancel and a closed case end; the buttons of its questions last as
	// long as it.
	Task bool
}

// modeSlots are the slots of the modes, by name.
func modeSlots(modes Modes) map[string]ModeSlot {
	slots := map[string]ModeSlot{}
	for _, m := range modes {
		if k, ok := m.(SlotKeeper); ok {
			for _, sl := range k.Slots() {
				slots[sl.Name] = sl
			}
		}
	}
	return slots
}

// taskSlots are the names of the modes' task slots, sorted.
func (e *Engine) taskSlots() []string {
	var names []string
	for name, sl := range e.slots {
		if sl.Task {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// SettingsTaker is a mode with settings of its own, which an assistant
// carries in Assistant.Settings; New refuses settings on an assistant
// whose mode does not take them, naming the modes that do.
type SettingsTaker interface {
	Mode
	// TakesSettings tells settings of the mode's own type.
	TakesSettings(settings any) bool
}

// SettingsCopy is a copy of assistant a's settings of type *T, or T's
// zero value when it has none: what a mode's Check fills with defaults
// and keeps as a's settings, leaving the caller's as they were.
func SettingsCopy[T any](a Assistant) T {
	if s, ok := a.Settings.(*T); ok && s != nil {
		return *s
	}
	var zero T
	return zero
}

// checkSettings refuses assistant a's settings when its mode does not
// take them.
func checkSettings(name string, a Assistant, modes Modes) error {
	if taker, ok := modes[a.Mode].(SettingsTaker); a.Settings == nil || ok && taker.TakesSettings(a.Settings) {
		return nil
	}
	var takers []string
	for _, n := range modes.Names() {
		if taker, ok := modes[ModeName(n)].(SettingsTaker); ok && taker.TakesSettings(a.Settings) {
			takers = append(takers, n)
		}
	}
	if len(takers) == 0 {
		return fmt.Errorf("assistant %s: no mode takes settings of type %T", name, a.Settings)
	}
	return fmt.Errorf("assistant %s: its settings are mode %s's, not %s's", name, strings.Join(takers, " or "), a.Mode)
}

// CheckInput is what a mode's Check may consult besides the assistant:
// its name, the registered tools and the other assistants.
type CheckInput struct {
	Name       string
	Tools      *tool.Registry
	Assistants map[string]Assistant
}

// Errorf is an error about the assistant being checked.
func (in CheckInput) Errorf(format string, args ...any) error {
	return fmt.Errorf("assistant "+in.Name+": "+format, args...)
}

// PromptInput is what a mode builds its prompts from: the caller's
// tenant and language, the assistant, and the tools the catalog shows.
type PromptInput struct {
	Tenant    Tenant
	Language  string
	Assistant Assistant
	// Tools are the entries the model is shown; Defs the same as native
	// tool definitions (one slice per catalog, which providers cache).
	Tools []*tool.Entry
	Defs  []llm.ToolDef
	// Live: the requests may carry the live context.
	Live bool
}

// Prompts are what a mode keeps per catalog: built once, reused as bytes.
type Prompts struct {
	// System is the system prompt; Native, when set, the one for a model
	// that calls tools natively (the catalog travels as definitions).
	System, Native string
	// Tools are the definitions the mode offers the model.
	Tools []llm.ToolDef
	// Extra is anything else of the mode's, per catalog.
	Extra any
}

// Speaker is how prompts name the assistant of tenant and the language
// it answers in.
func Speaker(tenant Tenant, lang string) (name, language string) { return speaker(tenant, lang) }

// MarkedBlocksRule is the prompt's rule on the marker of data blocks'
// tags (see Model.EvidenceBlocks).
const MarkedBlocksRule = markedBlocksRule

// WriteDataRules adds the prompt's rules on data for a model that reads
// tool results as blocks — evidence and results, their marker — and the
// live context's when the requests can carry one (PromptInput.Live).
func WriteDataRules(b *strings.Builder, live bool) { writeDataRules(b, live) }

// NativeDataRule is the prompt's rule on data for a model that calls
// tools natively: its results come back as tool messages.
const NativeDataRule = nativeDataRule

// WaitsForPeople tells a catalog with a write that may wait for a
// person's yes or approval.
func WaitsForPeople(entries []*tool.Entry) bool { return waitsForPeople(entries) }

// WriteOwn adds an assistant's own instructions to a prompt, if any.
func WriteOwn(b *strings.Builder, own string) { writeOwn(b, own) }

// modeOf is assistant a's mode; New has checked that it is registered.
func (e *Engine) modeOf(a Assistant) Mode { return e.cfg.Modes[a.Mode] }

// awaitsAnswer reports whether the turn's mode waits for the user's answer
// to a question of its own (see AnswerAwaiter).
func (e *Engine) awaitsAnswer(s *state) bool {
	m, ok := e.modeOf(s.assistant).(AnswerAwaiter)
	return ok && m.AwaitsAnswer(&Turn{e: e, s: s})
}

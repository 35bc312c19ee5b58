package turn

import (
	"context"
	"fmt"
	"time"

	"github.com/arbiterhq/arbiter/tool"
)

// Mode is how an assistant gets from a message to its reply. A mode is the
// step of the pipeline after "assemble": it takes the prompt and ends the
// turn with a reply, an action put to the user, or a hand-off. Each mode
// lives in its own file and is listed in modes; adding one is adding a
// file and a row.
type Mode string

// Modes.
const (
	// ModeSingle: one decision per turn — a reply, or one tool call
	// through the guards (mode_single.go). The default.
	ModeSingle Mode = "single"
	// ModeLoop: model → tool calls → results → model, until a final answer
	// or a limit (mode_loop.go).
	ModeLoop Mode = "loop"
	// ModeInterview: the model interviews the user — one question at a
	// time, at most MaxQuestions — then delivers a result; the server
	// holds it to that (mode_interview.go).
	ModeInterview Mode = "interview"
)

// modes are the assistant modes by name.
var modes = map[Mode]func(e *Engine, ctx context.Context, s *state){
	ModeSingle:    (*Engine).runSingle,
	ModeLoop:      (*Engine).runLoop,
	ModeInterview: (*Engine).runInterview,
	ModeRouter:    (*Engine).runRouter,
}

// Assistant is a named profile a tenant's turns run under: what the model
// is told, which tools it may see, how it decides and within what limits.
type Assistant struct {
	// Prompt is the assistant's own instructions, placed at the top of
	// its system prompt.
	Prompt string
	// Tools narrows the catalog (names or globs) within what the caller's
	// role and scopes allow; a tool outside it is not shown and does not
	// run, by any path. Empty: everything the role allows.
	Tools []string
	// Mode is ModeSingle (default) or ModeLoop.
	Mode   Mode
	Limits Limits
	// HandOff offers a loop assistant's model the server's
	// hand_off_to_human tool, to hand the case to a person with a reason.
	// Off by default; a task that reaches a limit is handed over either way.
	HandOff bool
	// LiveContext says when the request carries the live context (the
	// user, the local time, the case, the context sources' sections).
	// Default LiveContextAuto.
	LiveContext LiveContextPolicy
	// Preflight are reads a loop assistant's task runs first, in this
	// order and before the model is asked, so the model starts from the
	// case's facts (the payment and the subscription of the ticket).
	// They pass the same guards as the model's calls; a write is refused.
	Preflight []Command
	// MaxQuestions bounds an interview's questions (default
	// DefaultMaxQuestions).
	MaxQuestions int
	// MaxTokens bounds one model answer of this assistant; zero means
	// the engine's (an interview's deliverable may be long: default
	// DefaultInterviewTokens). MaxReplyChars bounds a delivered result;
	// zero means DefaultMaxReplyChars.
	MaxTokens     int
	MaxReplyChars int
	// Memory overrides the engine's memory policy where set: an
	// interview is not cut by the task assistant's pause (its defaults
	// are a day).
	Memory MemoryPolicy
	// Lifetimes override the engine's where set (an interview assistant's
	// Interview, a router's Skill).
	Lifetimes Lifetimes
	// Router is a router assistant's setup (ModeRouter).
	Router *Router
	// Receipts: a reply the model wrote ends with the server's line on
	// each write of the turn, its true state (chat.Outbound.Actions holds
	// the lines either way). Nil: on for an assistant with a tool that
	// waits for approvers (tool.Spec.Approve).
	Receipts *bool
}

// LiveContextPolicy says when a turn's request carries the live context.
type LiveContextPolicy string

// Live context policies.
const (
	// LiveContextAuto: when the conversation has a case or the deployment
	// a context source (the user and the local time then go on every turn,
	// with what the sources say; a source that fails says so). The
	// default.
	LiveContextAuto LiveContextPolicy = "auto"
	// LiveContextAlways: on every turn, the user and the local time at
	// least.
	LiveContextAlways LiveContextPolicy = "always"
	// LiveContextOff: never; the context sources are not asked.
	LiveContextOff LiveContextPolicy = "off"
)

// Defaults of an interview assistant.
const (
	DefaultMaxQuestions    = 3
	DefaultInterviewTokens = 4000
	DefaultMaxReplyChars   = 32000
	DefaultInterviewPause  = 24 * time.Hour
)

// Defaults of Limits.
const (
	DefaultModelCalls  = 8
	DefaultToolCalls   = 16
	DefaultDeadline    = 60 * time.Second
	DefaultResultBytes = 16 << 10
	DefaultTotalBytes  = 64 << 10
	DefaultSameCall    = 2
)

// Limits bound one task of a loop assistant. Reaching any of them ends the
// task as needs_review, handed to a person with the reason; zero fields
// take the defaults.
type Limits struct {
	ModelCalls int // model calls per task
	ToolCalls  int // tool calls per task, refused ones included
	// Deadline bounds the task's wall-clock time (never beyond the turn's
	// timeout).
	Deadline time.Duration
	// ResultBytes bounds one tool result as the model would see it;
	// TotalBytes all of a task's results together.
	ResultBytes int
	TotalBytes  int
	// SameCall is how many times one call — the same tool with the same
	// canonical arguments — may run in a task.
	SameCall int
}

// withDefaults returns l with zero fields set to the defaults.
func (l Limits) withDefaults() Limits {
	set := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	set(&l.ModelCalls, DefaultModelCalls)
	set(&l.ToolCalls, DefaultToolCalls)
	set(&l.ResultBytes, DefaultResultBytes)
	set(&l.TotalBytes, DefaultTotalBytes)
	set(&l.SameCall, DefaultSameCall)
	if l.Deadline <= 0 {
		l.Deadline = DefaultDeadline
	}
	return l
}

// checkAssistants validates the profiles and the tenants' choices, and
// fills the defaults.
func checkAssistants(cfg *Config) error {
	for name, a := range cfg.Assistants {
		switch a.Mode {
		case "":
			a.Mode = ModeSingle
		case ModeSingle, ModeLoop, ModeInterview, ModeRouter:
		default:
			return fmt.Errorf("assistant %s: unknown mode %q", name, a.Mode)
		}
		a.Limits = a.Limits.withDefaults()
		switch a.LiveContext {
		case "":
			a.LiveContext = LiveContextAuto
		case LiveContextAuto, LiveContextAlways, LiveContextOff:
		default:
			return fmt.Errorf("assistant %s: unknown live context policy %q", name, a.LiveContext)
		}
		if a.HandOff && a.Mode != ModeLoop {
			return fmt.Errorf("assistant %s: the hand-off tool needs mode loop", name)
		}
		if a.Mode == ModeInterview {
			if a.MaxQuestions <= 0 {
				a.MaxQuestions = DefaultMaxQuestions
			}
			if a.MaxTokens <= 0 {
				a.MaxTokens = DefaultInterviewTokens
			}
			if a.Memory.Pause <= 0 {
				a.Memory.Pause = DefaultInterviewPause
			}
			if a.Memory.TTL <= 0 {
				a.Memory.TTL = DefaultInterviewPause
			}
		}
		if a.MaxReplyChars <= 0 {
			a.MaxReplyChars = DefaultMaxReplyChars
		}
		if a.Receipts == nil {
			on := approvesAny(cfg.Tools, a.Tools)
			a.Receipts = &on
		}
		for _, c := range a.Preflight {
			entry, ok := cfg.Tools.Lookup(c.Tool)
			switch {
			case a.Mode != ModeLoop:
				return fmt.Errorf("assistant %s: preflight reads need mode loop", name)
			case !ok:
				return fmt.Errorf("assistant %s: preflight tool %q is not registered", name, c.Tool)
			case entry.Spec.Risk.Writes():
				return fmt.Errorf("assistant %s: preflight tool %s writes; only reads run before the model", name, c.Tool)
			}
		}
		cfg.Assistants[name] = a
	}
	for name, a := range cfg.Assistants {
		if a.Mode == ModeRouter {
			if err := checkRouter(name, a, cfg); err != nil {
				return err
			}
		}
	}
	for id, t := range cfg.Tenants {
		if _, ok := cfg.Assistants[t.Assistant]; t.Assistant != "" && !ok {
			return fmt.Errorf("tenant %s: unknown assistant %q", id, t.Assistant)
		}
	}
	return nil
}

// memoryFor is the engine's memory policy with a's own values.
func (e *Engine) memoryFor(a Assistant) MemoryPolicy {
	m := e.cfg.Memory
	if a.Memory.Window > 0 {
		m.Window = a.Memory.Window
	}
	if a.Memory.TTL > 0 {
		m.TTL = a.Memory.TTL
	}
	if a.Memory.Pause > 0 {
		m.Pause = a.Memory.Pause
	}
	return m
}

// assistantFor returns the profile tenant t's turns run under: its
// assistant, or the default single-decision one.
func (e *Engine) assistantFor(t Tenant) Assistant {
	if a, ok := e.cfg.Assistants[t.Assistant]; ok && t.Assistant != "" {
		return a
	}
	return Assistant{Mode: ModeSingle}
}

// approvesAny reports whether a tool the patterns admit (all when empty)
// waits for approvers.
func approvesAny(reg *tool.Registry, patterns []string) bool {
	for _, name := range reg.Names() {
		entry, _ := reg.Lookup(name)
		if len(entry.Spec.Approve) > 0 && (len(patterns) == 0 || matchesAny(patterns, name)) {
			return true
		}
	}
	return false
}

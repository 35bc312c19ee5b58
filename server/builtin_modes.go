package server

import (
	"errors"
	"fmt"
	"time"

	"github.com/arbiterhq/arbiter/config"
	"github.com/arbiterhq/arbiter/intent"
	"github.com/arbiterhq/arbiter/turn"
	"github.com/arbiterhq/arbiter/turn/mode/interview"
	"github.com/arbiterhq/arbiter/turn/mode/loop"
	"github.com/arbiterhq/arbiter/turn/mode/router"
)

// builtinModeSettings read the built-in modes' settings from their
// fields of the assistant's section (limits, preflight, hand_off;
// max_questions, max_reply_chars; router), which the configuration
// checks with their lines; none of them takes a settings section.
func builtinModeSettings() map[turn.ModeName]ModeSettingsKind {
	return map[turn.ModeName]ModeSettingsKind{
		loop.Name:      fixedFields(loopSettings),
		interview.Name: fixedFields(interviewSettings),
		router.Name:    fixedFields(func(s ModeSection) (any, error) { return routerSettings(s.Assistant.Router, s.Dir) }),
	}
}

// fixedFields is a kind that reads the assistant's own fields and
// refuses a settings section.
func fixedFields(read ModeSettingsKind) ModeSettingsKind {
	return func(s ModeSection) (any, error) {
		if s.Node != nil {
			return nil, fmt.Errorf("line %d: %s: mode %s takes no settings section", s.Node.Line, s.Kind, s.Assistant.Mode)
		}
		return read(s)
	}
}

// loopSettings are a loop's limits, preflight reads and hand-off.
func loopSettings(s ModeSection) (any, error) {
	a := s.Assistant
	out := &loop.Settings{HandOff: a.HandOff, Limits: loop.Limits{ModelCalls: a.Limits.ModelCalls, ToolCalls: a.Limits.ToolCalls,
		Deadline: time.Duration(a.Limits.Deadline), ResultBytes: a.Limits.ResultBytes, TotalBytes: a.Limits.TotalBytes, SameCall: a.Limits.SameCall}}
	for _, c := range a.Preflight {
		out.Preflight = append(out.Preflight, turn.Command{Tool: c.Tool, Args: c.Args})
	}
	return out, nil
}

// interviewSettings are an interview's bounds.
func interviewSettings(s ModeSection) (any, error) {
	return &interview.Settings{MaxQuestions: s.Assistant.MaxQuestions, MaxReplyChars: s.Assistant.MaxReplyChars}, nil
}

// routerSettings are a router section as the router mode takes it, with
// its word lists compiled.
func routerSettings(r *config.Router, dir string) (*router.Settings, error) {
	if r == nil {
		return nil, errors.New("mode router needs a router section")
	}
	words, err := r.LoadWords(dir)
	if err != nil {
		return nil, err
	}
	lexicon, err := intent.CompileLexicon(words)
	if err != nil {
		return nil, fmt.Errorf("router words: %w", err)
	}
	settings := &router.Settings{Prompt: r.Prompt, WebSearch: r.WebSearch, Intercepts: r.Intercepts, Generation: r.Generation, EditTool: r.EditTool,
		Timeout: time.Duration(r.Timeout), Words: lexicon}
	for _, g := range r.Guards {
		settings.Guards = append(settings.Guards, router.GuardRule{Guard: g.Guard, Tools: g.Tools})
	}
	for _, sk := range r.Skills {
		settings.Skills = append(settings.Skills, router.Skill{ID: sk.ID, Assistant: sk.Assistant, Label: sk.Label, Auto: sk.Auto})
	}
	return settings, nil
}

// lifetimes are a configuration's lifetimes for the engine (zero fields:
// the engine's and the modes' defaults); skill and interview are the
// router's and the interview's slots.
func lifetimes(l config.Lifetimes) turn.Lifetimes {
	out := turn.Lifetimes{Case: time.Duration(l.Case), Offer: time.Duration(l.Offer)}
	for slot, d := range map[string]config.Duration{router.SkillSlot: l.Skill, interview.Slot: l.Interview} {
		if d > 0 {
			if out.Slots == nil {
				out.Slots = map[string]time.Duration{}
			}
			out.Slots[slot] = time.Duration(d)
		}
	}
	return out
}

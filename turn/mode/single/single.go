// Package single is the single-decision mode, the engine's default: one
// model decision per turn — a reply, or one tool call carried out through
// the engine's guards.
package single

import (
	"context"

	"github.com/arbiterhq/arbiter/turn"
)

// Name is the mode's name in turn.Config.Modes: the built-in modes'
// default (builtin.DefaultMode), the mode of an assistant that names
// none.
const Name turn.ModeName = "single"

// New returns the single-decision mode.
func New() turn.Mode { return mode{} }

type mode struct{}

func (mode) Check(*turn.Assistant, turn.CheckInput) error { return nil }

func (mode) Prompts(in turn.PromptInput) turn.Prompts { return turn.DecisionPrompts(in) }

// Run is one model decision for the turn, carried out.
func (mode) Run(ctx context.Context, t *turn.Turn) {
	d, ok := t.Decide(ctx, t.Messages(ctx))
	if !ok {
		return
	}
	t.Act(ctx, d)
}

package turn

import "context"

// ModeSingle: one decision per turn — a reply, or one tool call through
// the guards (decide.go, act.go). The default.
const ModeSingle ModeName = "single"

// singleMode is ModeSingle.
type singleMode struct{}

func (singleMode) Check(*Assistant, CheckInput) error { return nil }

func (singleMode) Prompts(in PromptInput) Prompts { return DecisionPrompts(in) }

// Run is one model decision for the turn, carried out.
func (singleMode) Run(ctx context.Context, t *Turn) {
	d, ok := t.Decide(ctx, t.Messages(ctx))
	if !ok {
		return
	}
	t.Act(ctx, d)
}

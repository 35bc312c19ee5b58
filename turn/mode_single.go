package turn

import "context"

// ModeSingle: one decision per turn — a reply, or one tool call through
// the guards (decide.go, act.go). The default.
const ModeSingle ModeName = "single"

// singleMode is ModeSingle.
type singleMode struct{}

func (singleMode) Check(a *Assistant, in CheckInput) error { return noLoopSettings(a, in) }

func (singleMode) Prompts(in PromptInput) Prompts {
	own := in.Assistant.Prompt
	return Prompts{
		System: systemPrompt(in.Tenant, in.Language, own, in.Tools, in.Live),
		Native: toolsPrompt(in.Tenant, in.Language, own, in.Tools, in.Live),
		Tools:  in.Defs,
	}
}

// Run is one model decision for the turn, carried out.
func (singleMode) Run(ctx context.Context, t *Turn) {
	d, ok := t.Decide(ctx, t.Messages(ctx))
	if !ok {
		return
	}
	t.Act(ctx, d)
}

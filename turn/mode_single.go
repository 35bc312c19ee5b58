package turn

import "context"

// runSingle is ModeSingle: one model decision for the turn — a reply, or
// one tool call through the guards (decide.go, act.go).
func (e *Engine) runSingle(ctx context.Context, s *state) {
	messages := e.assemble(ctx, s)
	d, ok := e.decide(ctx, s, messages)
	if !ok {
		return
	}
	e.act(ctx, s, d)
}

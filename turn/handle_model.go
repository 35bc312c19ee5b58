package turn

import (
	"context"
	"strings"

	"github.com/arbiterhq/arbiter/decision"
	"github.com/arbiterhq/arbiter/llm"
)

// Model: the prompt a mode sends and the model calls it makes, each
// journaled with its attempts under the turn's strategy.

// Prompts are what the mode built for the caller's catalog.
func (t *Model) Prompts() Prompts { return t.s.cat.prompts }

// Complete makes one model call of the turn, journaled with its
// attempts; the strategy is the turn's.
func (t *Model) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	req.Strategy = t.s.strategy
	return t.e.complete(ctx, t.s, req)
}

// Temperature is the engine's sampling temperature for a turn's answer.
func (t *Model) Temperature() float64 { return t.e.cfg.Temperature }

// Prompted records a prompt the mode assembled itself rather than with
// Messages: how many messages follow its system prompt, and how much of it
// repeats the conversation's last prompt (what a provider's cache reuses).
func (t *Model) Prompted(msgs []llm.Message) {
	t.e.measurePrefix(t.s, msgs)
	t.s.trace.PromptMessages = len(msgs) - 1
}

// EvidenceBlocks is the evidence as the model reads data: each piece in
// a block whose tags carry the conversation's marker, after a newline.
func (t *Model) EvidenceBlocks() string {
	var b strings.Builder
	marker := blockMarker(t.s)
	for _, ev := range t.s.in.Evidence {
		b.WriteString("\n<evidence" + marker + " kind=\"" + attr(ev.Kind) + "\">\n" + fence(ev.Text, marker) + "\n</evidence" + marker + ">")
	}
	return b.String()
}

// ResultBlock is a tool's result as text for a model without native tool
// calls: a block marked as the conversation's data blocks are.
func (t *Model) ResultBlock(name, content string) string {
	return toolResultBlock(name, content, blockMarker(t.s))
}

// Ask is Complete for a call that decides nothing the user reads (a
// classifier's, a dispatcher's): journaled with its attempts, the turn's
// decider left as it is.
func (t *Model) Ask(ctx context.Context, req llm.Request) (llm.Response, error) {
	req.Strategy = t.s.strategy
	return t.e.callModel(ctx, t.s, t.s.model, req)
}

// CompleteStreamed is Complete for a call whose answer's text a listener
// may watch arrive; the decider is recorded.
func (t *Model) CompleteStreamed(ctx context.Context, req llm.Request) (llm.Response, error) {
	req.Strategy = t.s.strategy
	return t.e.completeStreamed(ctx, t.s, req)
}

// Schema is the decision's JSON schema for the caller's catalog, for a
// model that answers in JSON.
func (t *Model) Schema() *llm.Schema { return t.s.cat.schema }

// ParseDecision reads a JSON decision against the caller's catalog.
func (t *Model) ParseDecision(text string) (decision.Decision, error) {
	return decision.Parse(text, t.s.cat.names)
}

// Protocol is how the turn's model answers: native tool calls or JSON.
func (t *Model) Protocol() llm.Protocol { return llm.ProtocolOf(t.s.model) }

// MaxTokens is the engine's bound on a model answer.
func (t *Model) MaxTokens() int { return t.e.cfg.MaxTokens }

// Neutralize shows as "‹" every "<" of text that would start a tag of a
// prompt block, so data put in a prompt cannot end its block or open
// another.
func Neutralize(text string) string { return neutralize(text) }

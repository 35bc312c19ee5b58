package turn

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/arbiterhq/arbiter/decision"
	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/store"
	"github.com/arbiterhq/arbiter/turn/internal/gate"
)

// Operations as they appear in the journal.
const (
	opTurn   = "turn"
	opRepair = "repair"
)

// proposal is a decision that parsed and whose arguments fit the tool's
// schema, with the arguments in canonical form.
type proposal struct {
	decision.Decision
	args []byte // canonical JSON (sorted keys, absent = omitted)
}

// decide asks the model for a decision. A reply that breaks the contract
// gets one repair request — to the same model first, with the same schema
// and the list of problems; if that fails too, nothing runs and the user is
// asked to rephrase (or, when Config.InvalidFallback is set, the next model
// of the chain gets the same chance). Provider errors are the chain's
// business; when it gives up, the turn ends with nothing done.
func (e *Engine) decide(ctx context.Context, s *state, messages []llm.Message) (proposal, bool) {
	req := llm.Request{
		Messages:    messages,
		Schema:      s.cat.schema,
		Tools:       s.cat.toolDefs,
		Temperature: e.cfg.Temperature,
		MaxTokens:   e.cfg.MaxTokens,
		Operation:   opTurn,
		Strategy:    s.strategy,
	}
	sticky, _ := s.model.(llm.Sticky)
	for {
		resp, err := e.completeStreamed(ctx, s, req)
		if err != nil {
			e.modelFailed(s, err)
			return proposal{}, false
		}
		p, problems := e.parseProposal(s, resp)
		if problems == nil {
			return p, true
		}
		said := answerText(resp)
		s.trace.Repair = &RepairTrace{Output: Clip(said, 2000), Problems: problems}

		if sticky != nil {
			sticky.Stick() // the repair goes to the model that answered
		}
		repair := req
		repair.Operation = opRepair
		repair.Messages = append(append([]llm.Message(nil), req.Messages...),
			llm.Message{Role: llm.RoleAssistant, Content: said},
			llm.Message{Role: llm.RoleUser, Content: repairInstruction(problems, resp.Protocol)})
		resp, err = e.complete(ctx, s, repair)
		if err != nil {
			e.modelFailed(s, err)
			return proposal{}, false
		}
		p, problems = e.parseProposal(s, resp)
		if problems == nil {
			s.trace.Repair.Repaired = true
			return p, true
		}
		s.trace.Repair.SecondOutput = Clip(answerText(resp), 2000)
		s.trace.Repair.SecondProblems = problems
		if !e.cfg.InvalidFallback || sticky == nil || !sticky.Advance() {
			break
		}
		s.trace.Notes = append(s.trace.Notes, "output still invalid after repair; asking the next model of the chain")
	}
	s.trace.Status = StatusInvalidOutput
	e.replyText(s, say(s.lang, txtRephrase), nil)
	return proposal{}, false
}

// modelFailed ends a turn whose model calls all failed: nothing runs, the
// user gets an apology, the turn is journaled as failed.
func (e *Engine) modelFailed(s *state, err error) {
	s.trace.Status = StatusFailed
	s.trace.Error = Clip(err.Error(), 500)
	if llm.KindOf(err) == llm.ErrBadRequest {
		// This request's own: the models are there, trying again later
		// would not help.
		e.replyText(s, say(s.lang, txtRequestRefused), nil)
		return
	}
	e.replyText(s, say(s.lang, txtModelDown), nil)
}

// answerText is an answer as text, whichever protocol it used.
func answerText(resp llm.Response) string {
	if resp.Protocol != llm.ProtocolTools || len(resp.ToolCalls) == 0 {
		return resp.Text
	}
	return decision.DescribeToolCalls(resp.Text, toolCalls(resp))
}

func toolCalls(resp llm.Response) []decision.ToolCall {
	calls := make([]decision.ToolCall, len(resp.ToolCalls))
	for i, c := range resp.ToolCalls {
		calls[i] = decision.ToolCall{Name: c.Name, Arguments: c.Arguments}
	}
	return calls
}

// complete makes one model call of the decision (which a provider chain
// may turn into several attempts) and journals every attempt.
func (e *Engine) complete(ctx context.Context, s *state, req llm.Request) (llm.Response, error) {
	resp, err := e.callModel(ctx, s, s.model, req)
	if err == nil {
		s.trace.DecidedBy = &DecidedBy{Provider: resp.Provider, Model: resp.Model}
	}
	return resp, err
}

// completeStreamed is complete for a call whose answer's text a listener
// may watch arrive (see streamFor).
func (e *Engine) completeStreamed(ctx context.Context, s *state, req llm.Request) (llm.Response, error) {
	stream := e.streamFor(s, req)
	if stream != nil {
		req.OnText = stream.onText
	}
	resp, err := e.callModel(ctx, s, s.model, req)
	if stream != nil {
		stream.close()
	}
	if err == nil {
		s.trace.DecidedBy = &DecidedBy{Provider: resp.Provider, Model: resp.Model}
	}
	return resp, err
}

// callModel makes one call of model for turn s and journals every attempt
// in the turn's record. A plain call is bounded by the model timeout; a
// streamed one only by the turn's deadline and the provider's stream
// limits, which tell a slow model that is writing from a dead one (a long
// answer watched as it arrives may take longer than the model timeout).
// Safe to call from a tool's goroutine while the turn waits for the tool.
func (e *Engine) callModel(ctx context.Context, s *state, model llm.Provider, req llm.Request) (llm.Response, error) {
	cctx, cancel := ctx, context.CancelFunc(func() {})
	if req.OnText == nil {
		cctx, cancel = context.WithTimeout(ctx, e.cfg.ModelTimeout)
	}
	defer cancel()
	start := e.cfg.Now()
	resp, err := model.Complete(cctx, req)
	took := e.cfg.Now().Sub(start)
	s.trace.step(StepDecide, req.Operation, start, start.Add(took), "")

	attempts := resp.Attempts
	if err != nil {
		attempts = failedAttempts(err, attempts)
	}
	if len(attempts) == 0 {
		a := llm.Attempt{Provider: model.Name(), Model: model.Model(), Duration: took, Err: err, Started: start}
		if err == nil {
			a.Provider, a.Model, a.Usage = resp.Provider, resp.Model, resp.Usage
		}
		attempts = []llm.Attempt{a}
	}
	s.trace.mu.Lock()
	for _, a := range attempts {
		kind := a.Kind
		if kind == "" {
			kind = llm.AttemptFirst
		}
		call := store.LLMCall{
			Provider: a.Provider, Model: a.Model, Operation: req.Operation, Strategy: req.Strategy, Attempt: kind,
			InputTokens: a.Usage.InputTokens, CachedInputTokens: a.Usage.CachedInputTokens, OutputTokens: a.Usage.OutputTokens,
			DurationMS: a.Duration.Milliseconds(),
			Status:     "ok", Note: a.Note, At: a.Started,
		}
		if price, known := e.priceOf(a.Provider, a.Model); known {
			call.CostUSD = price.Cost(a.Usage)
		} else {
			call.CostUnknown = true
			s.trace.CostUnknown = true
		}
		if a.Err != nil {
			call.Status = string(llm.KindOf(a.Err))
			call.Error = Clip(a.Err.Error(), 500)
		}
		s.trace.LLMCalls = append(s.trace.LLMCalls, call)
		s.trace.CostUSD += call.CostUSD
	}
	s.trace.mu.Unlock()
	if err != nil {
		e.cfg.Logger.Warn("model call failed", "turn", s.id, "op", req.Operation, "err", err)
	}
	return resp, err
}

// priceOf finds the price of model as provider serves it: none for a
// provider whose prices are unknown (Config.Unpriced), else by name
// (llm.Prices.Lookup).
func (e *Engine) priceOf(provider, model string) (llm.Price, bool) {
	if e.cfg.Unpriced[provider] {
		return llm.Price{}, false
	}
	return e.cfg.Prices.Lookup(model)
}

// parseProposal parses an answer (JSON or tool calls) and validates the
// arguments of a known tool. An unknown tool is not a contract problem: it
// becomes a veto.
func (e *Engine) parseProposal(s *state, resp llm.Response) (proposal, []decision.Problem) {
	var d decision.Decision
	var err error
	if resp.Protocol == llm.ProtocolTools {
		d, err = decision.FromToolCalls(resp.Text, toolCalls(resp), s.cat.names)
	} else {
		d, err = decision.Parse(resp.Text, s.cat.names)
	}
	if err != nil {
		var pe *decision.ParseError
		if errors.As(err, &pe) {
			return proposal{}, pe.Problems
		}
		return proposal{}, []decision.Problem{{Message: err.Error()}}
	}
	p := proposal{Decision: d}
	if d.Tool == "" || d.UnknownTool {
		return p, nil
	}
	entry, _ := s.cat.lookup(d.Tool)
	start := e.cfg.Now()
	raw := d.Args
	if bound, v := e.bindArgs(s, entry.Spec, raw); v == nil {
		raw = bound // a refusal comes from authorize, after the schema
	}
	args, problems := gate.Args(entry, s.cat.required[d.Tool], raw)
	s.trace.step(StepValidate, d.Tool, start, e.cfg.Now(), problemNote(problems))
	if problems != nil {
		return proposal{}, problems
	}
	p.args = args
	return p, nil
}

// problemNote is a step's note for a validation: empty when it passed.
func problemNote(problems []decision.Problem) string {
	if len(problems) == 0 {
		return ""
	}
	return strconv.Itoa(len(problems)) + " problem(s)"
}

func repairInstruction(problems []decision.Problem, protocol llm.Protocol) string {
	var b strings.Builder
	b.WriteString("Your previous answer broke the contract and nothing was done. Problems:\n")
	for _, p := range problems {
		b.WriteString("- ")
		if p.Location != "" {
			b.WriteString("at " + p.Location + ": ")
		}
		b.WriteString(p.Message + "\n")
	}
	if protocol == llm.ProtocolTools {
		b.WriteString("Answer again: a short text, and at most one tool call whose arguments follow the tool's schema.")
	} else {
		b.WriteString("Answer again with exactly one JSON object that follows the schema: say, tool, args, done, newTopic, buttons.")
	}
	return b.String()
}

// Clip cuts s to at most n bytes, at a character's start, and marks the
// cut with "…": how the journal keeps a long text of a turn (a dropped
// call, a model's reasoning) short. Modes use it for their trace.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// failedAttempts returns the attempts a failed call reports, or else
// attempts. (Apart from callModel so that a call that succeeded allocates
// no error pointer to look with.)
func failedAttempts(err error, attempts []llm.Attempt) []llm.Attempt {
	var lerr *llm.Error
	if errors.As(err, &lerr) && len(lerr.Attempts) > 0 {
		return lerr.Attempts
	}
	return attempts
}

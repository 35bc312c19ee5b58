package turn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/arbiterhq/arbiter/store"
	"github.com/arbiterhq/arbiter/tool"
)

// maxDirectWrites bounds the direct writes looked up for one interrupted
// message; a turn runs at most this many without confirmation.
const maxDirectWrites = 8

// loadInterrupted runs when this turn's message was accepted by an earlier
// turn that never completed (its process died). It journals that turn, so
// the record has no gap, and loads the writes it began: their keys name
// the message alone (see directKey), so they are found whatever a model
// would propose now. A store error fails the turn — deciding the message
// afresh without knowing what already ran could repeat a side effect.
func (e *Engine) loadInterrupted(ctx context.Context, s *state) error {
	if s.interrupted == "" {
		return nil
	}
	for n := 1; n <= maxDirectWrites; n++ {
		rec, err := e.cfg.State.GetExecution(ctx, s.key.Tenant, writeKey(s, n))
		if errors.Is(err, store.ErrNotFound) {
			break
		}
		if err != nil {
			return fmt.Errorf("look up the writes of interrupted turn %s: %w", s.interrupted, err)
		}
		s.unfinished = append(s.unfinished, rec)
	}
	e.journalInterrupted(ctx, s)
	return nil
}

// finishInterrupted answers a redelivered message from the writes its
// interrupted turn began, without asking a model again: a finished write
// gives its recorded result, an unfinished one is asked again of a tool
// that dedupes by key (the stored call, the same key), and on any other
// tool is reported as of unknown outcome, never repeated. It reports
// whether the turn is handled.
func (e *Engine) finishInterrupted(ctx context.Context, s *state) bool {
	if len(s.unfinished) == 0 {
		return false
	}
	s.trace.Route = RouteRecovered
	e.recordUserInput(s)
	for _, rec := range s.unfinished {
		s.directWrites++
		entry, ok := e.cfg.Tools.Lookup(rec.Tool)
		if !ok {
			e.veto(s, Veto{Guard: "recover", Tool: rec.Tool, Reason: reasonUnknownTool}, txtNotAvailable)
			continue
		}
		tg, err := e.resolve(ctx, s, entry, rec.Args)
		if err != nil || !e.allowed(s, tg) {
			e.veto(s, Veto{Guard: "recover", Tool: rec.Tool, Reason: reasonNotGranted}, txtNotAvailable)
			continue
		}
		e.runTool(ctx, s, tg, rec.Args, rec.IdempotencyKey)
	}
	return true
}

// journalInterrupted appends the record of the interrupted turn unless the
// journal has it: what it began and that it never completed.
func (e *Engine) journalInterrupted(ctx context.Context, s *state) {
	if _, err := e.cfg.Journal.GetTurn(ctx, s.key.Tenant, s.interrupted); err == nil {
		return
	}
	t := Trace{
		TurnID: s.interrupted, ConversationID: s.in.Chat, Tenant: s.key.Tenant, UserID: s.key.User,
		Channel: s.in.Channel, MessageID: s.in.MessageID, Route: RouteInterrupted, Status: StatusInterrupted,
		StartedAt: s.interruptedAt, Decision: json.RawMessage("null"),
		LLMCalls: []store.LLMCall{}, Vetoes: []Veto{}, Executed: []ExecutionTrace{},
		Notes: []string{"the turn stopped before it completed (the process ended); turn " + s.id + " took the redelivered message over"},
	}
	for _, rec := range s.unfinished {
		var spec tool.Spec
		if entry, ok := e.cfg.Tools.Lookup(rec.Tool); ok {
			spec = entry.Spec
		}
		tr := ExecutionTrace{Tool: rec.Tool, Args: rec.Args, IdempotencyKey: rec.IdempotencyKey, Status: rec.State}
		t.Executed = append(t.Executed, tr)
		t.ToolCalls = append(t.ToolCalls, store.ToolCall{Tool: rec.Tool, IdempotencyKey: rec.IdempotencyKey,
			ArgsHash: e.auditHash(spec, rec.Args), Status: rec.State, At: rec.StartedAt})
	}
	redact := e.redactTrace(&t) // as any record: the calls' redacted values hashed
	raw, err := t.encode()
	if err != nil {
		e.cfg.Logger.Error("encode interrupted turn", "turn", s.interrupted, "err", err)
		return
	}
	if redact != nil {
		raw = []byte(redact.Replace(string(raw)))
	}
	rec := store.TurnRecord{
		TurnID: s.interrupted, Tenant: s.key.Tenant, Chat: s.key.Chat, UserID: s.key.User,
		Route: string(RouteInterrupted), Status: string(StatusInterrupted), StartedAt: s.interruptedAt,
		LLMCalls: t.LLMCalls, ToolCalls: t.ToolCalls, Trace: raw,
	}
	e.appendRecord(ctx, s, rec)
}

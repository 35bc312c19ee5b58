package turn

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/store"
	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/turn/internal/gate"
)

// ExecutionTrace is one tool execution as the journal keeps it.
type ExecutionTrace struct {
	Tool           string          `json:"tool"`
	Args           json.RawMessage `json:"args"`
	IdempotencyKey string          `json:"idempotency_key,omitempty"`
	Status         string          `json:"status"`
	Result         *tool.Result    `json:"result,omitempty"`
	// Reused is true when the result came from the execution record of an
	// earlier attempt and the tool was not called again.
	Reused bool `json:"reused,omitempty"`
	// Reconciled is true when the outcome was read from the tool's system
	// after an unclear answer (tool.Reconciler).
	Reconciled bool  `json:"reconciled,omitempty"`
	DurationMS int64 `json:"duration_ms"`
}

// execute runs one tool call with its timeout, size cap and idempotency
// key. A write with a key runs exactly once (gate.Once), so a retry of the
// same stored action never causes a second effect.
func (e *Engine) execute(ctx context.Context, s *state, tg target, args []byte, idemKey string) (tool.Result, ExecutionTrace) {
	spec := tg.spec
	tr := ExecutionTrace{Tool: spec.Name, Args: args, IdempotencyKey: idemKey}
	start := e.cfg.Now()
	defer func() {
		tr.DurationMS = e.cfg.Now().Sub(start).Milliseconds()
		s.trace.step(StepExecute, spec.Name, start, e.cfg.Now(), tr.Status)
	}()
	call := func() tool.Result { return e.call(ctx, s, tg.entry, spec, args, idemKey) }
	if !spec.Risk.Writes() || idemKey == "" {
		res := call()
		tr.Status, tr.Result = string(res.Status), &res
		e.auditCall(s, tg, idemKey, args, tr, res, start)
		return res, tr
	}
	ran := gate.Once(ctx, e.cfg.State, gate.Write{Record: executionRecord(s, spec, args, idemKey), Idempotent: spec.Idempotent, Now: e.cfg.Now}, call)
	tr.Status, tr.Result, tr.Reused = ran.Status, &ran.Result, ran.Reused
	s.finishes.add(func() {
		if err := ran.Finished(); err != nil {
			e.cfg.Logger.Error("execution record", "turn", s.id, "tool", spec.Name, "err", err)
		}
	})
	if ran.Attempted {
		e.auditCall(s, tg, idemKey, args, tr, ran.Result, start)
	}
	return ran.Result, tr
}

// executionRecord is the record a write of the turn begins with.
func executionRecord(s *state, spec tool.Spec, args []byte, idemKey string) store.ExecutionRecord {
	rec := store.ExecutionRecord{
		Tenant: s.key.Tenant, IdempotencyKey: idemKey, Tool: spec.Name, ArgsHash: gate.Hash(spec.Name, args),
		Args: args, TurnID: s.id, State: store.ExecStarted, StartedAt: s.now,
	}
	if s.in.MessageID != "" {
		// The message's claim becomes durable with the record: a
		// redelivery after a crash looks for this write.
		rec.Key, rec.MessageID = s.key, s.in.MessageID
	}
	return rec
}

// auditCall adds the journal's row for a tool call that started at start.
func (e *Engine) auditCall(s *state, tg target, idemKey string, args []byte, tr ExecutionTrace, res tool.Result, start time.Time) {
	spec := tg.spec
	s.trace.mu.Lock() // a mode's reads may run in parallel
	defer s.trace.mu.Unlock()
	s.trace.ToolCalls = append(s.trace.ToolCalls, store.ToolCall{
		Tool: spec.Name, Server: spec.Server, RemoteTool: spec.RemoteName, IdempotencyKey: idemKey,
		ArgsHash: e.auditHash(spec, args), Risk: string(spec.Risk), Scope: string(spec.Risk),
		ConfirmationID: tg.confirmation, Status: tr.Status, Error: res.Error, At: start,
		DurationMS: e.cfg.Now().Sub(start).Milliseconds(),
	})
}

// auditHash is the journal's hash of a call's arguments as run: their
// SHA-256 (hex), or, for a tool that redacts fields, "hmac:" and their
// HMAC-SHA256 under the redaction key, so that whoever reads the journal
// cannot test a guess of a redacted value against it.
func (e *Engine) auditHash(spec tool.Spec, args []byte) string {
	if len(spec.Redact) == 0 {
		digest := sha256.Sum256(args)
		var text [2 * sha256.Size]byte
		hex.Encode(text[:], digest[:])
		return string(text[:])
	}
	m := hmac.New(sha256.New, e.cfg.RedactionKey)
	m.Write(args)
	return "hmac:" + hex.EncodeToString(m.Sum(nil))
}

// call invokes the tool under its timeout and caps the result size. A
// timeout is an error, never "not found".
func (e *Engine) call(ctx context.Context, s *state, entry *tool.Entry, spec tool.Spec, args []byte, idemKey string) tool.Result {
	session := e.sessionFor(s, spec)
	cctx, cancel := context.WithTimeout(ctx, spec.Timeout)
	defer cancel()
	chip := s.show(chat.Step{Kind: chat.StepTool, Name: spec.Name}, spec)
	res, err := entry.Tool.Call(cctx, tool.Call{Caller: callerOf(s), Args: args, IdempotencyKey: idemKey, Now: s.now, Session: session})
	session.end()
	s.show(chat.Step{Kind: chat.StepTool, Name: spec.Name, Text: chip, Done: true}, spec)
	switch {
	case err != nil && errors.Is(cctx.Err(), context.DeadlineExceeded):
		res = tool.Result{Status: tool.StatusError, Error: fmt.Sprintf("timed out after %s", spec.Timeout), OutcomeUnknown: spec.Risk.Writes()}
	case err != nil:
		res = tool.Result{Status: tool.StatusError, Error: err.Error()}
	case res.Status == "":
		res.Status = tool.StatusError
		res.Error = "the tool returned no status"
	}
	if res.ObservedAt.IsZero() {
		res.ObservedAt = s.now
	}
	if len(res.Data) > spec.MaxResultBytes {
		res.Data = json.RawMessage(fmt.Sprintf(`{"truncated":true,"bytes":%d,"limit":%d}`, len(res.Data), spec.MaxResultBytes))
	}
	return res
}

package turn

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/turn/internal/gate"
)

// act carries out a valid proposal: a plain reply, a veto, a confirmation
// request, or an execution. What the user is told about an execution comes
// from the executor's result, never from the model's "say".
func (e *Engine) act(ctx context.Context, s *state, p proposal) {
	raw, _ := p.Decision.MarshalJSON() // compact already: json.Marshal would only copy it
	s.trace.Decision = raw
	if p.NewTopic {
		s.keepLast = true
	}
	if p.Done {
		s.resetMemory = true
	}
	if p.Tool == "" {
		if e.claimsUnconfirmed(s, p.Say) {
			return
		}
		e.replyText(s, p.Say, offerButtons(s, p.Buttons))
		return
	}
	a, v := e.authorize(ctx, s, callRequest{guard: "catalog", name: p.Tool, args: p.args, canonical: true, attach: true})
	if v != nil {
		e.refused(s, v)
		return
	}
	e.carryOut(ctx, s, a)
}

// carryOut puts an authorized call to the user or runs it.
func (e *Engine) carryOut(ctx context.Context, s *state, a authorized) {
	if a.approve {
		if act, ok := e.proposeApproval(ctx, s, a); ok {
			e.replyText(s, say(s.lang, txtSentForApproval, act.Title), nil)
		}
		return
	}
	if a.confirm {
		e.propose(ctx, s, a.tg, a.args, a.why)
		return
	}
	e.runTool(ctx, s, a.tg, a.args, e.directKey(s, a.tg.spec))
}

// directKey is the idempotency key of a write that runs without
// confirmation: the turn's n-th such write. With a message id it names the
// message alone — never what a model proposed for it — so a redelivery
// after a crash finds the write its first attempt began, whatever a model
// would answer when asked again (see recoverInterrupted).
func (e *Engine) directKey(s *state, spec tool.Spec) string {
	if !spec.Risk.Writes() {
		return ""
	}
	s.directWrites++
	return writeKey(s, s.directWrites)
}

// writeKey is the key of the n-th direct write of s's message (or turn).
func writeKey(s *state, n int) string {
	origin := "turn:" + s.id
	if s.in.MessageID != "" {
		origin = "msg:" + s.key.String() + "\x00" + s.in.MessageID
	}
	return "w:" + gate.Hash(origin, nil)[:32] + ":" + strconv.Itoa(n)
}

// runCommand handles slash commands without a model.
func (e *Engine) runCommand(ctx context.Context, s *state) bool {
	if s.route.kind != routeCommand {
		return false
	}
	switch s.route.command {
	case "/start", "/help":
		e.replyText(s, e.helpText(s.lang), nil)
		return true
	case "/reset":
		s.resetMemory, s.dropPending = true, true
		for _, slot := range append(e.taskSlots(), draftSlot) {
			delete(s.conv.Slots, slot)
		}
		e.replyText(s, say(s.lang, txtReset), nil)
		return true
	case "/cancel":
		key := txtNothingPending
		if s.pending != nil {
			key, s.dropPending = txtCancelled, true
		}
		for _, slot := range append(e.taskSlots(), draftSlot) { // a mode's task, an offer awaiting a choice
			if _, ok := s.conv.Slots[slot]; ok {
				key = txtCancelled
				delete(s.conv.Slots, slot)
			}
		}
		e.replyText(s, say(s.lang, key), nil)
		return true
	}
	e.recordUserInput(s)
	cmd := e.cfg.Commands[s.route.command]
	e.runFixedCall(ctx, s, callRequest{guard: "command", name: cmd.Tool, args: json.RawMessage(cmd.Args)})
	return true
}

// runDirectCall handles a tool call made by the caller's own program
// (chat.Inbound.Call): the model's decision is replaced, the guards are not.
func (e *Engine) runDirectCall(ctx context.Context, s *state) bool {
	if s.route.kind != routeCall {
		return false
	}
	e.recordUserInput(s)
	e.runFixedCall(ctx, s, callRequest{guard: "call", name: s.in.Call.Tool, args: s.in.Call.Args})
	return true
}

// runFixedCall runs a call that no model proposed (a slash command's
// configured call, a client's direct call) through the same authorization
// as a model's proposal.
func (e *Engine) runFixedCall(ctx context.Context, s *state, r callRequest) {
	a, v := e.authorize(ctx, s, r)
	switch {
	case v == nil:
		e.carryOut(ctx, s, a)
	case v.Problems != nil && s.route.kind == routeCall:
		// A program made the call: it is told what to fix, as the model
		// would be in a repair.
		s.trace.Vetoes = append(s.trace.Vetoes, *v)
		parts := make([]string, len(v.Problems))
		for i, p := range v.Problems {
			parts[i] = p.Location + ": " + p.Message
		}
		e.replyText(s, say(s.lang, txtCallArgs, strings.Join(parts, "; ")), nil)
	default:
		e.refused(s, v)
	}
}

package turn

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/arbiterhq/arbiter/tool"
)

// act carries out a valid proposal: a plain reply, a veto, a confirmation
// request, or an execution. What the user is told about an execution comes
// from the executor's result, never from the model's "say".
func (e *Engine) act(ctx context.Context, s *state, p proposal) {
	raw, _ := json.Marshal(p.Decision)
	s.trace.Decision = raw
	if p.NewTopic {
		s.keepLast = true
	}
	if p.Done {
		s.resetMemory = true
	}
	if p.Tool == "" {
		e.replyText(s, p.Say, p.Buttons)
		return
	}
	tg, ok := e.guard(ctx, s, p)
	if !ok {
		return
	}
	args, err := fillAttachment(s, tg.entry.Spec, p.args)
	if err == nil && !bytes.Equal(args, p.args) {
		err = tg.entry.Schema.Validate(tg.entry.Spec.Name, args)
	}
	if err != nil {
		s.trace.Notes = append(s.trace.Notes, "attachment: "+err.Error())
		e.veto(s, Veto{Guard: "attachment", Tool: tg.spec.Name, Reason: reasonInvalidArgs}, txtNoAttachment)
		return
	}
	p.args = args
	if need, why := needsConfirmation(s, tg.spec); need {
		e.propose(s, tg, p.args, why)
		return
	}
	e.runTool(ctx, s, tg, p.args, e.directKey(s, tg.spec, p.args))
}

// directKey is the idempotency key of a write that runs without
// confirmation. With a message id it is stable across redeliveries of that
// message, so a crash between the call and the commit cannot double it.
func (e *Engine) directKey(s *state, spec tool.Spec, args []byte) string {
	if !spec.Risk.Writes() {
		return ""
	}
	origin := "turn:" + s.id
	if s.in.MessageID != "" {
		origin = "msg:" + s.key.String() + ":" + s.in.MessageID
	}
	return argsHash(origin, append([]byte(spec.Name+"\x00"), args...))[:32]
}

// runCommand handles slash commands without a model.
func (e *Engine) runCommand(ctx context.Context, s *state) bool {
	if s.route.kind != routeCommand {
		return false
	}
	switch s.route.command {
	case "/start", "/help":
		e.replyText(s, say(s.lang, txtHelp), nil)
		return true
	case "/reset":
		s.resetMemory, s.dropPending = true, true
		e.replyText(s, say(s.lang, txtReset), nil)
		return true
	case "/cancel":
		key := txtNothingPending
		if s.pending != nil {
			key, s.dropPending = txtCancelled, true
		}
		e.replyText(s, say(s.lang, key), nil)
		return true
	}
	e.recordUserInput(s)
	cmd := e.cfg.Commands[s.route.command]
	entry, ok := s.cat.lookup(cmd.Tool)
	if !ok {
		e.veto(s, Veto{Guard: "catalog", Tool: cmd.Tool, Reason: reasonNotGranted}, txtNotAvailable)
		return true
	}
	rawArgs := cmd.Args
	if rawArgs == "" {
		rawArgs = "{}"
	}
	args, problems := validateArgs(entry, s.cat.required[cmd.Tool], json.RawMessage(rawArgs))
	if problems != nil {
		e.veto(s, Veto{Guard: "command", Tool: cmd.Tool, Reason: reasonInvalidArgs}, txtNotAvailable)
		return true
	}
	tg, err := e.resolve(ctx, s, entry, args)
	if err != nil || !e.allowed(s, tg) {
		e.veto(s, Veto{Guard: "command", Tool: cmd.Tool, Reason: reasonNotGranted}, txtNotAvailable)
		return true
	}
	if need, why := needsConfirmation(s, tg.spec); need {
		e.propose(s, tg, args, why)
		return true
	}
	e.runTool(ctx, s, tg, args, e.directKey(s, tg.spec, args))
	return true
}

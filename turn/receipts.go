package turn

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/store"
	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/turn/internal/gate"
)

// receiptStatusAwaitingYes is the status of a write put to the user for
// their yes.
const receiptStatusAwaitingYes = "awaiting_confirmation"

// receipts puts the server's line on each write of the turn in the reply
// (chat.Outbound.Actions, and the actions of approvers as
// chat.Outbound.Approvals): its true state, in the user's language,
// rendered from what the engine recorded — the stored action, the
// executor's status — never from the model's words. Where the assistant
// is set for it (Assistant.Receipts), a reply the model wrote, or the
// notice of a hand-off, ends with the lines as well.
func (e *Engine) receipts(ctx context.Context, s *state) {
	s.out.Actions = e.actionLines(ctx, s)
	for _, a := range s.trace.Approvals {
		s.out.Approvals = append(s.out.Approvals, chat.ApprovalRef{ID: a.ID, Tool: a.Tool, Status: a.Status})
	}
	if len(s.out.Actions) == 0 || !s.modelReply && s.trace.Status != StatusNeedsReview || s.assistant.Receipts == nil || !*s.assistant.Receipts {
		return
	}
	var b strings.Builder
	b.WriteString(s.out.Say)
	for _, l := range s.out.Actions {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString(l.Text)
	}
	text := b.String()
	for i := len(s.added) - 1; i >= 0; i-- {
		if m := &s.added[i]; m.Role == store.RoleAssistant && m.Text == s.out.Say {
			m.Text = text
			break
		}
	}
	s.out.Say, s.trace.Say = text, text
}

// actionLines lists the turn's writes: actions of approvers (their last
// status in the turn), a write put to the user, and writes that ran at
// once.
func (e *Engine) actionLines(ctx context.Context, s *state) []chat.ActionLine {
	var out []chat.ActionLine
	for _, a := range s.trace.Approvals {
		if i := slices.IndexFunc(out, func(l chat.ActionLine) bool { return l.ID == a.ID }); i >= 0 {
			out[i].Status = a.Status
			continue
		}
		out = append(out, chat.ActionLine{ID: a.ID, Tool: a.Tool, Status: a.Status})
	}
	for i := range out {
		var args json.RawMessage
		if as := e.actions(); as != nil {
			if act, err := as.GetAction(ctx, s.key.Tenant, out[i].ID); err == nil {
				args = act.Args
			}
		}
		out[i].Text = e.receiptLine(s, out[i].Tool, args, out[i].Status)
	}
	if p := s.putPending; p != nil {
		out = append(out, chat.ActionLine{Tool: p.Tool, Status: receiptStatusAwaitingYes, Text: e.receiptLine(s, p.Tool, p.Args, receiptStatusAwaitingYes)})
	}
	for _, x := range s.trace.Executed {
		entry, ok := e.cfg.Tools.Lookup(x.Tool)
		if !ok || !entry.Spec.Risk.Writes() || strings.HasPrefix(x.IdempotencyKey, "a:") {
			continue // a read, or the write of an action listed above
		}
		status := store.ActionConfirmed
		switch {
		case x.Status == gate.StatusOutcomeUnknown || x.Result != nil && x.Result.OutcomeUnknown:
			status = store.ActionUnknown
		case x.Status != string(tool.StatusOK):
			status = store.ActionFailed
		}
		out = append(out, chat.ActionLine{Tool: x.Tool, Status: status, Text: e.receiptLine(s, x.Tool, x.Args, status)})
	}
	return out
}

// receiptLine renders one write's line.
func (e *Engine) receiptLine(s *state, toolName string, args json.RawMessage, status string) string {
	key := txtReceiptFailed
	switch status {
	case store.ActionProposed:
		key = txtReceiptProposed
	case store.ActionApproved, store.ActionExecuting:
		key = txtReceiptApproved
	case store.ActionConfirmed:
		key = txtReceiptConfirmed
	case store.ActionRejected:
		key = txtReceiptRejected
	case store.ActionExpired:
		key = txtReceiptExpired
	case store.ActionUnknown:
		key = txtReceiptUnknown
	case receiptStatusAwaitingYes:
		key = txtReceiptAwaitYes
	}
	subject := "«" + toolName + "»"
	if entry, ok := e.cfg.Tools.Lookup(toolName); ok {
		subject = receiptSubject(s.lang, entry.Spec, args)
	}
	return say(s.lang, key, subject)
}

// receiptSubject names a call: the tool's Receipt with its arguments'
// values in place of {name}, or its title in quotes.
func receiptSubject(lang string, spec tool.Spec, args json.RawMessage) string {
	open, closing := "«", "»"
	if lang == "en" {
		open, closing = "\"", "\""
	}
	tmpl := spec.Receipt.In(lang)
	if tmpl == "" {
		return open + spec.TitleIn(lang) + closing
	}
	var values map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	_ = dec.Decode(&values)
	var b strings.Builder
	for {
		i := strings.IndexByte(tmpl, '{')
		j := strings.IndexByte(tmpl[max(i, 0):], '}')
		if i < 0 || j < 0 {
			b.WriteString(tmpl)
			return b.String()
		}
		b.WriteString(tmpl[:i])
		name := tmpl[i+1 : i+j]
		b.WriteString(argText(values[name]))
		tmpl = tmpl[i+j+1:]
	}
}

// argText is an argument's value as text: a string without its quotes, a
// number as written, anything else as JSON; "?" when absent.
func argText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "?"
	}
	var str string
	if json.Unmarshal(raw, &str) == nil {
		return str
	}
	return string(raw)
}

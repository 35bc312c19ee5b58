package turn

import (
	"slices"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/store"
	"github.com/arbiterhq/arbiter/tool"
)

// The part of Turn that shows a mode the moment beyond the user's words:
// the button pressed, what the client says the user has open, the
// attachments, the conversation's last messages and its draft, and the
// deployment's other assistant profiles. All of it is read-only.

// Tenant is the team the turn is for.
func (t *Turn) Tenant() Tenant { return t.s.tenant }

// Button is the value of the button pressed for this turn, or "".
func (t *Turn) Button() string { return t.s.in.Button }

// Client is what the user's client says they are doing (an active mode,
// an open document), or nil: a hint, never a command.
func (t *Turn) Client() *chat.ClientHint { return t.s.in.Client }

// Evidence is what came with the message (attachments, forwards,
// quotes), read as data.
func (t *Turn) Evidence() []chat.Evidence { return slices.Clip(t.s.in.Evidence) }

// AttachmentOf is the stored file an attachment's evidence refers to, as
// a tool's argument names it.
func AttachmentOf(ev chat.Evidence) tool.Attachment { return attachmentOf(ev) }

// Recent are the conversation's last n messages, this turn's included,
// as the model reads them (data in marked blocks).
func (t *Turn) Recent(n int) []llm.Message {
	history := append(append([]store.Message(nil), t.s.conv.Messages...), t.s.added...)
	if len(history) > n {
		history = history[len(history)-n:]
	}
	marker := blockMarker(t.s)
	msgs := make([]llm.Message, len(history))
	for i, m := range history {
		msgs[i] = renderMessage(m, marker)
	}
	return msgs
}

// LastReply is what the assistant said last in the conversation's
// memory, before this turn; "" when it said nothing yet.
func (t *Turn) LastReply() string {
	for i := len(t.s.conv.Messages) - 1; i >= 0; i-- {
		if m := t.s.conv.Messages[i]; m.Role == store.RoleAssistant {
			return m.Text
		}
	}
	return ""
}

// Profile is the deployment's assistant profile name, its defaults
// filled as the engine runs it.
func (t *Turn) Profile(name string) (Assistant, bool) {
	a, ok := t.e.cfg.Assistants[name]
	return a, ok
}

// DraftState is the conversation's draft as a mode sees it.
type DraftState struct {
	Text string
	// Editing: the user pressed its edit button, so this message revises
	// it.
	Editing bool
	// Shown: the user sees it and can still publish it (within the
	// offer's lifetime).
	Shown bool
}

// Draft is the conversation's draft; false when it keeps none with text.
func (t *Turn) Draft() (DraftState, bool) {
	var d draft
	if !getSlot(t.s, draftSlot, &d) || d.Text == "" {
		return DraftState{}, false
	}
	return DraftState{Text: d.Text, Editing: d.Editing, Shown: t.e.draftShown(t.s, d)}, true
}

// Neutralize shows as "‹" every "<" of text that would start a tag of a
// prompt block, so data put in a prompt cannot end its block or open
// another.
func Neutralize(text string) string { return neutralize(text) }

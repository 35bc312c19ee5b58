package turn

import (
	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/store"
)

// Memory: what the conversation keeps between turns as a mode sees it —
// the mode's slots, committed with the turn, the last messages as the
// model reads them, and the draft.

// Slot decodes the conversation's slot name into v: the mode's durable
// state beside the memory. False when it is absent or does not decode.
func (t *Memory) Slot(name string, v any) bool { return getSlot(t.s, name, v) }

// DropSlot forgets the conversation's slot name.
func (t *Memory) DropSlot(name string) { delete(t.s.conv.Slots, name) }

// SetSlot keeps v as the conversation's slot name, committed with the
// turn.
func (t *Memory) SetSlot(name string, v any) { setSlot(t.s, name, v) }

// Recent are the conversation's last n messages, this turn's included,
// as the model reads them (data in marked blocks).
func (t *Memory) Recent(n int) []llm.Message {
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
func (t *Memory) LastReply() string {
	for i := len(t.s.conv.Messages) - 1; i >= 0; i-- {
		if m := t.s.conv.Messages[i]; m.Role == store.RoleAssistant {
			return m.Text
		}
	}
	return ""
}

// Draft is the conversation's draft; false when it keeps none with text.
func (t *Memory) Draft() (DraftState, bool) {
	var d draft
	if !getSlot(t.s, draftSlot, &d) || d.Text == "" {
		return DraftState{}, false
	}
	return DraftState{Text: d.Text, Editing: d.Editing, Shown: t.e.draftShown(t.s, d)}, true
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

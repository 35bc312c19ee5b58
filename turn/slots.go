package turn

import "encoding/json"

// A conversation's slots (store.Conversation.Slots) are its durable state
// beside the memory window, committed with each turn: the case, the
// modes' own slots, the draft, kept long buttons, the last attachment,
// the prompt's fingerprint.

// getSlot decodes slot name into v; false when the slot is absent or does
// not decode.
func getSlot(s *state, name string, v any) bool {
	raw, ok := s.conv.Slots[name]
	return ok && json.Unmarshal(raw, v) == nil
}

// setSlot stores v as slot name.
func setSlot(s *state, name string, v any) {
	if s.conv.Slots == nil {
		s.conv.Slots = map[string]json.RawMessage{}
	}
	s.conv.Slots[name], _ = json.Marshal(v)
}

package turn

import (
	"encoding/json"
	"testing"

	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/store"
)

// The prompt fingerprint counts the bytes repeated from the previous
// prompt's start, whichever form the previous fingerprint was kept in.
func TestMeasurePrefix(t *testing.T) {
	msgs := []llm.Message{{Role: llm.RoleSystem, Content: "system rules"}, {Role: llm.RoleUser, Content: "hello"}}
	first := &state{}
	(&Engine{}).measurePrefix(first, msgs)
	if first.trace.StablePrefixBytes != 0 || first.trace.PromptBytes != 17 {
		t.Fatalf("first prompt: stable %d of %d, want 0 of 17", first.trace.StablePrefixBytes, first.trace.PromptBytes)
	}
	next := []llm.Message{msgs[0], {Role: llm.RoleUser, Content: "bye"}}
	old, _ := json.Marshal(oldFingerprint{Hashes: []uint64{messageHash(msgs[0]), messageHash(msgs[1])}, Lengths: []int{12, 5}})
	for name, slot := range map[string]json.RawMessage{"current": first.conv.Slots[prefixSlot], "older form": old} {
		s := &state{held: held{conv: store.Conversation{Slots: map[string]json.RawMessage{prefixSlot: slot}}}}
		(&Engine{}).measurePrefix(s, next)
		if s.trace.StablePrefixBytes != 12 || s.trace.PromptBytes != 15 {
			t.Errorf("%s: stable %d of %d, want 12 of 15", name, s.trace.StablePrefixBytes, s.trace.PromptBytes)
		}
	}
	for _, bad := range []string{`"zz:1"`, `[1]`, `"`, `{"h":[1],"n":[]}`} {
		if got := previousFingerprint(json.RawMessage(bad)); got != nil {
			t.Errorf("previousFingerprint(%s) = %v, want nil", bad, got)
		}
	}
}

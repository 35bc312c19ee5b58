package store

import (
	"encoding/binary"
	"encoding/json"
	"testing"
	"time"
)

func TestCodecRoundTrip(t *testing.T) {
	at := time.Date(2026, 5, 6, 7, 8, 9, 123456789, time.UTC)
	tests := []Conversation{
		{},
		{StartedAt: at, UpdatedAt: at.Add(time.Hour)},
		{
			StartedAt: at, UpdatedAt: at,
			Messages: []Message{
				{Role: RoleUser, Text: "привет", At: at},
				{Role: RoleTool, Text: "", Name: "search", Source: "web", At: time.Time{}},
			},
			Slots: map[string]json.RawMessage{"a": json.RawMessage(`{"x":1}`), "": json.RawMessage(`null`)},
		},
		{
			UpdatedAt: at, MessagesUntil: at.Add(30 * time.Minute),
			Slots:      map[string]json.RawMessage{"case": json.RawMessage(`{"t":"1"}`), "skill": json.RawMessage(`"s"`)},
			SlotsUntil: map[string]time.Time{"case": at.Add(30 * 24 * time.Hour)},
		},
	}
	def := at.Add(time.Hour)
	for i, want := range tests {
		b := AppendConversation(nil, &want, def)
		got, gotDef, err := DecodeConversation(string(b))
		if err != nil {
			t.Fatalf("case %d: decode: %v", i, err)
		}
		if !gotDef.Equal(def) {
			t.Errorf("case %d: default end %v, want %v", i, gotDef, def)
		}
		if !got.StartedAt.Equal(want.StartedAt) || !got.UpdatedAt.Equal(want.UpdatedAt) ||
			got.StartedAt.IsZero() != want.StartedAt.IsZero() || len(got.Messages) != len(want.Messages) ||
			len(got.Slots) != len(want.Slots) {
			t.Fatalf("case %d: got %+v, want %+v", i, got, want)
		}
		for j := range want.Messages {
			g, w := got.Messages[j], want.Messages[j]
			if g.Role != w.Role || g.Text != w.Text || g.Name != w.Name || g.Source != w.Source ||
				!g.At.Equal(w.At) || g.At.IsZero() != w.At.IsZero() {
				t.Errorf("case %d message %d: got %+v, want %+v", i, j, g, w)
			}
		}
		if !got.MessagesUntil.Equal(want.MessagesUntil) || got.MessagesUntil.IsZero() != want.MessagesUntil.IsZero() {
			t.Errorf("case %d: messages until %v, want %v", i, got.MessagesUntil, want.MessagesUntil)
		}
		for k, v := range want.Slots {
			if string(got.Slots[k]) != string(v) {
				t.Errorf("case %d slot %q: got %s, want %s", i, k, got.Slots[k], v)
			}
			// A slot without a time of its own comes back without one.
			if w, g := want.SlotsUntil[k], got.SlotsUntil[k]; !g.Equal(w) || g.IsZero() != w.IsZero() {
				t.Errorf("case %d slot %q: until %v, want %v", i, k, g, w)
			}
		}
		// Every truncation is rejected, never a panic or a silent success.
		for n := range len(b) {
			if _, _, err := DecodeConversation(string(b[:n])); err == nil {
				t.Errorf("case %d: decoding %d of %d bytes succeeded", i, n, len(b))
			}
		}
	}
}

// A record of format 1 (written before parts had lifetimes) still
// decodes, its parts without times of their own.
func TestCodecFormat1(t *testing.T) {
	at := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	b := []byte{memoryFormatV1}
	b = appendTime(b, at)
	b = appendTime(b, at)
	b = binary.AppendUvarint(b, 1)
	for _, s := range []string{RoleUser, "hi", "", ""} {
		b = appendString(b, s)
	}
	b = appendTime(b, at)
	b = binary.AppendUvarint(b, 1)
	b = appendString(b, "case")
	b = appendString(b, `{"t":"1"}`)
	got, def, err := DecodeConversation(string(b))
	if err != nil || !def.IsZero() {
		t.Fatal(def, err)
	}
	if len(got.Messages) != 1 || got.Messages[0].Text != "hi" || string(got.Slots["case"]) != `{"t":"1"}` ||
		!got.MessagesUntil.IsZero() || len(got.SlotsUntil) != 0 {
		t.Fatalf("format 1 decoded as %+v", got)
	}
	// Its parts end with the record: nothing is pruned.
	if !got.Prune(at.Add(365*24*time.Hour), def) || len(got.Messages) != 1 || len(got.Slots) != 1 {
		t.Errorf("format 1 record pruned: %+v", got)
	}
}

package store

import (
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
	}
	for i, want := range tests {
		b := AppendConversation(nil, &want)
		got, err := DecodeConversation(string(b))
		if err != nil {
			t.Fatalf("case %d: decode: %v", i, err)
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
		for k, v := range want.Slots {
			if string(got.Slots[k]) != string(v) {
				t.Errorf("case %d slot %q: got %s, want %s", i, k, got.Slots[k], v)
			}
		}
		// Every truncation is rejected, never a panic or a silent success.
		for n := range len(b) {
			if _, err := DecodeConversation(string(b[:n])); err == nil {
				t.Errorf("case %d: decoding %d of %d bytes succeeded", i, n, len(b))
			}
		}
	}
}

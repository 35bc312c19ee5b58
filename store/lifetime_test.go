package store

import (
	"encoding/json"
	"testing"
	"time"
)

func TestExpiryAndPrune(t *testing.T) {
	at := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	day := 24 * time.Hour
	mk := func() Conversation {
		return Conversation{
			UpdatedAt: at, MessagesUntil: at.Add(30 * time.Minute),
			Messages: []Message{{Role: RoleUser, Text: "hi", At: at}},
			Slots: map[string]json.RawMessage{
				"case": json.RawMessage(`{}`), "skill": json.RawMessage(`"s"`), "marker": json.RawMessage(`"m"`),
			},
			SlotsUntil: map[string]time.Time{"case": at.Add(30 * day), "skill": at.Add(2 * day)},
		}
	}
	c := mk()
	if got := c.Expiry(at.Add(time.Hour)); !got.Equal(at.Add(30 * day)) {
		t.Errorf("Expiry = %v, want the case's end", got)
	}
	// A part without a time ends at def, and def can be the latest.
	if got := c.Expiry(at.Add(40 * day)); !got.Equal(at.Add(40 * day)) {
		t.Errorf("Expiry with a later default = %v", got)
	}
	if got := (&Conversation{}).Expiry(at); !got.Equal(at) {
		t.Errorf("Expiry of an empty record = %v, want def", got)
	}

	tests := []struct {
		after     time.Duration
		messages  int
		slots     []string
		wantAlive bool
	}{
		{30 * time.Minute, 1, []string{"case", "skill", "marker"}, true}, // inclusive
		{31 * time.Minute, 0, []string{"case", "skill", "marker"}, true},
		{2*day + time.Second, 0, []string{"case", "marker"}, true},
		{30*day + time.Second, 0, []string{"marker"}, true}, // no time of its own: the record's
	}
	for _, tt := range tests {
		c := mk()
		alive := c.Prune(at.Add(tt.after), time.Time{})
		if alive != tt.wantAlive || len(c.Messages) != tt.messages || len(c.Slots) != len(tt.slots) {
			t.Errorf("after %v: alive %v, %d messages, slots %v", tt.after, alive, len(c.Messages), c.Slots)
		}
		for _, k := range tt.slots {
			if _, ok := c.Slots[k]; !ok {
				t.Errorf("after %v: slot %s gone", tt.after, k)
			}
		}
		if len(c.SlotsUntil) > len(c.Slots) {
			t.Errorf("after %v: times of slots that are gone: %v", tt.after, c.SlotsUntil)
		}
	}
	c = mk()
	delete(c.Slots, "marker")
	if c.Prune(at.Add(31*day), time.Time{}) {
		t.Errorf("every part past its time, and the record still lives: %+v", c)
	}
	// With a default end, the untimed part ends there.
	c = mk()
	if !c.Prune(at.Add(3*day), at.Add(4*day)) || c.Slots["marker"] == nil {
		t.Errorf("the untimed part ended before its default: %v", c.Slots)
	}
	if c.Prune(at.Add(31*day), at.Add(4*day)); c.Slots["marker"] != nil {
		t.Errorf("the untimed part outlived its default: %v", c.Slots)
	}
}

package turn

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/store"
)

// Each part of the state committed gets its own time, counted from the
// turn: the messages the memory's TTL, the case, the skill, the interview
// and the offers their lifetimes (an assistant's own where it sets one),
// the block marker as long as the longest of them.
func TestStateLifetimes(t *testing.T) {
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	interviewing := slotKeeper{ModeSlot{Name: interviewSlot, Default: day, Task: true}}
	skilled := slotKeeper{ModeSlot{Name: skillSlot, Default: 30 * day}}
	modes := Modes{"interview": interviewing, "router": skilled}
	e := &Engine{cfg: Config{Lifetimes: Lifetimes{Slots: map[string]time.Duration{skillSlot: 7 * day}}.withDefaults()}, slots: modeSlots(modes)}
	slots := func(names ...string) map[string]json.RawMessage {
		m := map[string]json.RawMessage{}
		for _, n := range names {
			m[n] = json.RawMessage(`1`)
		}
		return m
	}
	tests := []struct {
		name      string
		assistant Assistant
		slots     map[string]json.RawMessage
		want      map[string]time.Duration
	}{
		{"memory only", Assistant{}, nil, map[string]time.Duration{}},
		{"every kind", Assistant{}, slots(caseSlot, skillSlot, interviewSlot, draftSlot, buttonSlot, attachmentSlot, prefixSlot, blockMarkerSlot),
			map[string]time.Duration{caseSlot: 30 * day, skillSlot: 7 * day, interviewSlot: day, draftSlot: day, buttonSlot: day,
				attachmentSlot: 30 * time.Minute, prefixSlot: 30 * time.Minute, blockMarkerSlot: 30 * day}},
		{"an interviewer's own", Assistant{Mode: "interview", Lifetimes: Lifetimes{Slots: map[string]time.Duration{interviewSlot: 3 * day}}}, slots(interviewSlot, buttonSlot, blockMarkerSlot),
			map[string]time.Duration{interviewSlot: 3 * day, buttonSlot: 3 * day, blockMarkerSlot: 3 * day}},
		{"a marker with nothing else", Assistant{}, slots(blockMarkerSlot), map[string]time.Duration{blockMarkerSlot: 30 * time.Minute}},
	}
	for _, tt := range tests {
		s := &state{arrival: arrival{now: now}, caller: caller{assistant: tt.assistant, memory: MemoryPolicy{TTL: 30 * time.Minute}},
			held: held{conv: store.Conversation{Slots: tt.slots}}}
		e.stateLifetimes(s)
		if want := now.Add(30 * time.Minute); !s.conv.MessagesUntil.Equal(want) {
			t.Errorf("%s: messages until %v, want %v", tt.name, s.conv.MessagesUntil, want)
		}
		if len(s.conv.SlotsUntil) != len(tt.want) {
			t.Errorf("%s: times %v, want one per slot %v", tt.name, s.conv.SlotsUntil, tt.want)
		}
		for k, d := range tt.want {
			if got := s.conv.SlotsUntil[k]; !got.Equal(now.Add(d)) {
				t.Errorf("%s: %s until %v, want %v after the turn", tt.name, k, got, d)
			}
		}
	}
}

// slotKeeper stands in for a mode that keeps one slot of its own, the
// way the interview keeps its interview in progress (package
// turn/mode/interview, which imports this one): only its Slots are asked.
type slotKeeper struct{ slot ModeSlot }

func (slotKeeper) Check(*Assistant, CheckInput) error { return nil }
func (slotKeeper) Prompts(PromptInput) Prompts        { return Prompts{} }
func (slotKeeper) Run(context.Context, *Turn)         {}
func (k slotKeeper) Slots() []ModeSlot                { return []ModeSlot{k.slot} }

// The slots of the interview's and the router's stand-ins, named as
// theirs are.
const (
	interviewSlot = "interview"
	skillSlot     = "skill"
)

func TestCaseOutlivesMemory(t *testing.T) {
	day := 24 * time.Hour
	ok := Config{Lifetimes: Lifetimes{}.withDefaults(), Memory: MemoryPolicy{TTL: time.Hour},
		Assistants: map[string]Assistant{"iv": {Mode: "interview", Memory: MemoryPolicy{TTL: day}}}}
	if err := checkLifetimes(&ok); err != nil {
		t.Errorf("defaults: %v", err)
	}
	short := ok
	short.Lifetimes.Case = 10 * time.Minute
	if err := checkLifetimes(&short); err == nil || !strings.Contains(err.Error(), "shorter than the memory's TTL") {
		t.Errorf("a case shorter than the memory: %v", err)
	}
	long := ok
	long.Assistants = map[string]Assistant{"iv": {Memory: MemoryPolicy{TTL: 40 * day}}}
	if err := checkLifetimes(&long); err == nil || !strings.Contains(err.Error(), "assistant iv") {
		t.Errorf("an assistant's memory longer than the case: %v", err)
	}
}

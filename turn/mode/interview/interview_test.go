package interview_test

import (
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/turn"
	"github.com/arbiterhq/arbiter/turn/mode/interview"
)

// The interview in progress is a task of the conversation (a reset, a
// cancel or a closed case ends it) that waits for its answer a day unless
// the lifetimes say otherwise; the mode takes every message.
func TestInterviewKeepsItsTask(t *testing.T) {
	m := interview.New()
	if _, ok := m.(turn.MessageTaker); !ok {
		t.Error("the interview does not take every message")
	}
	k, ok := m.(turn.SlotKeeper)
	if !ok || len(k.Slots()) != 1 {
		t.Fatalf("slot keeper %v", ok)
	}
	sl := k.Slots()[0]
	if !sl.Task || sl.Name != interview.Slot || sl.Default != 24*time.Hour || interview.DefaultLifetime != 24*time.Hour {
		t.Errorf("slot %q: task %v, default lifetime %v, want the interview's task for a day", sl.Name, sl.Task, sl.Default)
	}
}

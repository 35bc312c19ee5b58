package interview_test

import (
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/turn"
	"github.com/arbiterhq/arbiter/turn/mode/interview"
)

// The interview in progress is a task of the conversation (a reset, a
// cancel or a closed case ends it) that waits for its answer as long as
// the lifetimes' Interview says; the mode takes every message.
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
	if !sl.Task || sl.Lifetime == nil || sl.Lifetime(turn.Lifetimes{Interview: 3 * time.Hour, Offer: time.Hour}) != 3*time.Hour {
		t.Errorf("slot %q: task %v, lifetime of the interview's lifetimes", sl.Name, sl.Task)
	}
}

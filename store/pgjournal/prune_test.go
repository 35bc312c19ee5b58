package pgjournal

import (
	"fmt"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/store"
)

func TestPruneDeletesOldTurnsWithTheirCalls(t *testing.T) {
	j := openTest(t)
	ctx := t.Context()
	for i := range 30 {
		mustAppend(t, j, sampleTurn("t1", fmt.Sprintf("turn-%02d", i), testNow.Add(-time.Duration(i)*time.Hour)))
	}
	// Older than 20 h: turns 21..29, in batches of 4.
	got, err := j.Prune(ctx, testNow, store.Retention{Turns: 20 * time.Hour, Batch: 4})
	if err != nil || got.Turns != 9 {
		t.Fatalf("Prune = %+v, %v; want 9 turns", got, err)
	}
	for i := range 30 {
		id := fmt.Sprintf("turn-%02d", i)
		want := 1
		if i > 20 {
			want = 0
		}
		for _, table := range []string{"turns", "llm_calls", "tool_calls"} {
			if n := count(t, j, table, id); (n > 0) != (want > 0) {
				t.Errorf("%s: %d rows of %s, want kept=%v", table, n, id, want > 0)
			}
		}
	}
	if got, err := j.Prune(ctx, testNow, store.Retention{}); err != nil || got.Turns != 0 {
		t.Errorf("zero retention: %+v, %v", got, err)
	}
}

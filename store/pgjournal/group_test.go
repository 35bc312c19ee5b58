package pgjournal

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/arbiterhq/arbiter/store"
	"github.com/arbiterhq/arbiter/store/storetest"
)

// Appends that queue while a batch is on its way go in the next batch
// together: one round trip for all of them. A batch holding a turn id
// journaled before is retried a turn at a time, so only that turn fails.
func TestGroupAppend(t *testing.T) {
	cfg := testConfig(t)
	cfg.MaxConns = 1 // one connection: the statements stay prepared
	var writes atomic.Int64
	countWrites(cfg, &writes)
	j := openConfig(t, cfg, freshSchema(t))
	ctx := t.Context()
	mustAppend(t, j, sampleTurn("t1", "first", testNow))

	const n = 8
	for round, dup := range []bool{false, true} {
		ids := make([]string, n)
		for i := range ids {
			ids[i] = "r" + strconv.Itoa(round) + "-" + strconv.Itoa(i)
		}
		if dup {
			ids[3] = "first"
		}
		// Hold the sending role, as a batch on its way does.
		j.group.mu.Lock()
		j.group.sending = true
		j.group.mu.Unlock()
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { errs[i] = j.AppendTurn(ctx, sampleTurn("t1", ids[i], testNow)) })
		}
		waitQueued(t, j, n)
		before := writes.Load()
		j.group.mu.Lock()
		j.group.queue[0].done <- true // hand the role over, as the batch's end does
		j.group.mu.Unlock()
		wg.Wait()

		if trips := writes.Load() - before; !dup && trips != 1 {
			t.Errorf("%d queued appends took %d round trips, want 1", n, trips)
		}
		for i, id := range ids {
			if dup && i == 3 {
				if !errors.Is(errs[i], ErrDuplicateTurn) {
					t.Errorf("duplicate turn: %v, want ErrDuplicateTurn", errs[i])
				}
				continue
			}
			if errs[i] != nil {
				t.Errorf("append %s: %v", id, errs[i])
			}
			if _, err := j.GetTurn(ctx, "t1", id); err != nil {
				t.Errorf("turn %s: %v", id, err)
			}
		}
	}
}

// An append whose caller gives up while it is still queued is withdrawn:
// it reports the context's error and nothing of it is written.
func TestGroupAppendWithdrawn(t *testing.T) {
	j := openTest(t)
	j.group.mu.Lock()
	j.group.sending = true // a batch on its way
	j.group.mu.Unlock()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- j.AppendTurn(ctx, sampleTurn("t1", "gave-up", testNow)) }()
	waitQueued(t, j, 1)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("withdrawn append: %v, want context.Canceled", err)
	}
	j.group.mu.Lock()
	left, sending := len(j.group.queue), j.group.sending
	j.group.sending = false // the batch on its way ends
	j.group.mu.Unlock()
	if left != 0 || !sending {
		t.Errorf("after the withdrawal: %d queued, sending %v; want 0, true", left, sending)
	}
	if _, err := j.GetTurn(t.Context(), "t1", "gave-up"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("withdrawn turn: %v, want ErrNotFound", err)
	}
}

// waitQueued waits until n appends are queued.
func waitQueued(t *testing.T, j *Journal, n int) {
	t.Helper()
	storetest.WaitQueued(t, "appends", n, func() int {
		j.group.mu.Lock()
		defer j.group.mu.Unlock()
		return len(j.group.queue)
	})
}

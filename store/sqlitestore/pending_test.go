package sqlitestore

import (
	"errors"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/store"
	"github.com/arbiterhq/arbiter/store/storetest"
)

// A pending action is kept through the last instant of its grace after
// ExpiresAt (so the engine can say it expired) and not an instant longer,
// whether the store reads it from its cache or from the file.
func TestPendingKeptThroughItsGrace(t *testing.T) {
	for _, cacheBytes := range []int{0, -1} {
		ctx := t.Context()
		start := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
		clock := storetest.NewClock(start)
		s := openTest(t, Options{Now: clock.Now, PendingGrace: time.Hour, CacheBytes: cacheBytes})
		key := chat.ConversationKey{Tenant: "t", Chat: "c", User: "u"}
		lease, err := s.Lock(ctx, key.String())
		if err != nil {
			t.Fatal(err)
		}
		p := store.PendingAction{ID: "p1", Key: key, Tool: "create_task", Args: []byte(`{}`), IdempotencyKey: "pending:p1",
			CreatedAt: start, ExpiresAt: start.Add(time.Minute)}
		conv := store.Conversation{UpdatedAt: start}
		if err := s.Commit(ctx, store.Commit{Key: key, Fence: lease.Fence(), Conversation: &conv, PutPending: &p, Release: true}); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Minute + time.Hour)
		if got, err := s.GetPending(ctx, key); err != nil || got.ID != "p1" {
			t.Errorf("cache %d: at the end of its grace: %+v, %v; want p1", cacheBytes, got, err)
		}
		clock.Advance(time.Nanosecond)
		if _, err := s.GetPending(ctx, key); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("cache %d: past its grace: %v, want ErrNotFound", cacheBytes, err)
		}
	}
}

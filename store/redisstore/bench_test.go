package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/store"
	"github.com/arbiterhq/arbiter/store/storetest"
)

// countedStore is a store that counts its round trips, holding the
// benchmarks' conversation under key.
func countedStore(tb testing.TB, key chat.ConversationKey) (*Store, *roundTrips) {
	tb.Helper()
	s := openTest(tb, Options{})
	rt := &roundTrips{}
	s.rdb.AddHook(rt)
	conv := storetest.BenchConversation(time.Now())
	if err := s.Commit(context.Background(), store.Commit{Key: key, Conversation: &conv}); err != nil {
		tb.Fatal(err)
	}
	return s, rt
}

// TestTurnRoundTrips pins the cost of a turn's state work: three round
// trips — Lock (which brings the memory and the pending action along),
// the claim of the message id, and Commit (which releases the lock).
func TestTurnRoundTrips(t *testing.T) {
	key := chat.ConversationKey{Tenant: "t", Chat: "c", User: "u"}
	s, rt := countedStore(t, key)
	for i := range 3 {
		before := rt.n.Load()
		turnState(t, s, key, "m-"+strconv.Itoa(i), json.RawMessage(`"ok"`))
		if n := rt.n.Load() - before; n != 3 {
			t.Errorf("turn %d took %d round trips, want 3", i, n)
		}
	}
}

// turnState is the store's share of one turn as the engine does it: lock,
// load the memory and the pending action, claim the message id, commit the
// new memory with the inbox completion and the release, release.
func turnState(tb testing.TB, s *Store, key chat.ConversationKey, msgID string, reply json.RawMessage) {
	ctx := context.Background()
	lease, err := s.Lock(ctx, key.String())
	if err != nil {
		tb.Fatal(err)
	}
	c, err := s.LoadConversation(ctx, key)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := s.GetPending(ctx, key); !errors.Is(err, store.ErrNotFound) {
		tb.Fatal(err)
	}
	now := time.Now()
	if _, claimed, err := s.ClaimMessage(ctx, key, msgID, msgID, now); err != nil || !claimed {
		tb.Fatal(claimed, err)
	}
	c.Messages = append(c.Messages[1:], store.Message{Role: store.RoleUser, Text: "next " + msgID, At: now})
	c.UpdatedAt = now
	if err := s.Commit(ctx, store.Commit{Key: key, Fence: lease.Fence(), Conversation: &c, MessageID: msgID, Reply: reply, Release: true}); err != nil {
		tb.Fatal(err)
	}
	lease.Release()
}

// BenchmarkTurnState measures the store's share of one turn against the
// test server (see turnState) and reports the round trips it took.
func BenchmarkTurnState(b *testing.B) {
	key := chat.ConversationKey{Tenant: "tenant-1", Chat: "chat-1", User: "user-1"}
	s, rt := countedStore(b, key)
	reply := json.RawMessage(`{"turn_id":"t","say":"Done: the card is in Done now.","buttons":[],"pending":null,"executed":[],"duplicate":false}`)
	b.ReportAllocs()
	i := 0
	var before int64
	for b.Loop() {
		if i++; i == 1 {
			before = rt.n.Load()
		}
		turnState(b, s, key, "m-"+strconv.Itoa(i), reply)
	}
	if i > 0 {
		b.ReportMetric(float64(rt.n.Load()-before)/float64(i), "roundtrips/op")
	}
}

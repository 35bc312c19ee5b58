package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/store"
)

func chItem(id string) store.ChannelItem {
	return store.ChannelItem{Channel: "telegram", ID: id, OrderKey: "chat-1", Payload: []byte(`{"id":"` + id + `"}`)}
}

func acceptOrFatal(t *testing.T, s *Store, id string) bool {
	t.Helper()
	fresh, err := s.Accept(t.Context(), chItem(id))
	if err != nil {
		t.Fatalf("Accept(%s): %v", id, err)
	}
	return fresh
}

func pendingOf(t *testing.T, s *Store, n int) string {
	t.Helper()
	items, err := s.Pending(t.Context(), "telegram", n)
	if err != nil {
		t.Fatalf("Pending: %v", err)
	}
	ids := make([]string, len(items))
	for i, it := range items {
		ids[i] = it.ID
	}
	return strings.Join(ids, ",")
}

func TestChannelOptions(t *testing.T) {
	for _, tt := range []struct{ dedupe, retain, wantDedupe, wantRetain time.Duration }{
		{0, 0, 24 * time.Hour, 7 * 24 * time.Hour},
		{time.Hour, time.Hour, 24 * time.Hour, 24 * time.Hour},
		{48 * time.Hour, 30 * time.Hour, 48 * time.Hour, 48 * time.Hour},
		{0, 30 * 24 * time.Hour, 24 * time.Hour, 30 * 24 * time.Hour},
	} {
		o := Options{ChannelDedupe: tt.dedupe, ChannelRetention: tt.retain}.withDefaults()
		if o.ChannelDedupe != tt.wantDedupe || o.ChannelRetention != tt.wantRetain {
			t.Errorf("ChannelDedupe %v, ChannelRetention %v became %v, %v; want %v, %v",
				tt.dedupe, tt.retain, o.ChannelDedupe, o.ChannelRetention, tt.wantDedupe, tt.wantRetain)
		}
	}
}

// TestChannelSharedByProcesses: two stores on one server and prefix, as two
// processes would be, share one inbox.
func TestChannelSharedByProcesses(t *testing.T) {
	a := openTest(t, Options{})
	b := openTest(t, Options{Prefix: a.opts.Prefix})
	const n = 16
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		fresh int
		start = make(chan struct{})
	)
	for i := range n {
		s := a
		if i%2 == 1 {
			s = b
		}
		wg.Go(func() {
			<-start
			ok, err := s.Accept(t.Context(), chItem("1:1"))
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Errorf("Accept: %v", err)
			}
			if ok {
				fresh++
			}
		})
	}
	close(start)
	wg.Wait()
	if fresh != 1 {
		t.Fatalf("%d Accepts of one id from two processes: %d fresh, want 1", n, fresh)
	}
	acceptOrFatal(t, a, "1:2")
	if got := pendingOf(t, b, 10); got != "1:1,1:2" {
		t.Errorf("pending seen by the other process = %s, want 1:1,1:2", got)
	}
	if err := b.Done(t.Context(), "telegram", "1:1"); err != nil {
		t.Fatal(err)
	}
	if got := pendingOf(t, a, 10); got != "1:2" {
		t.Errorf("pending after the other process's Done = %s, want 1:2", got)
	}
	if acceptOrFatal(t, a, "1:1") {
		t.Error("an id the other process marked done was accepted again")
	}
}

// TestChannelKeysAndTTLs checks the keys an item leaves behind and their
// lifetimes on the server.
func TestChannelKeysAndTTLs(t *testing.T) {
	s := openTest(t, Options{ChannelDedupe: 30 * time.Hour, ChannelRetention: 50 * time.Hour})
	ctx := t.Context()
	k := s.channelKeys("telegram")
	acceptOrFatal(t, s, "1:1")
	near := func(key string, want time.Duration) {
		t.Helper()
		got, err := s.rdb.PTTL(ctx, key).Result()
		if err != nil || got > want || got < want-time.Minute {
			t.Errorf("TTL of %s = %v, %v; want about %v", key, got, err, want)
		}
	}
	near(k.seen("1:1"), 30*time.Hour)
	near(k.item("1:1"), 50*time.Hour)
	if ttl, err := s.rdb.PTTL(ctx, k.pending()).Result(); err != nil || ttl != -1 {
		t.Errorf("TTL of the pending set = %v, %v; want none", ttl, err)
	}
	// Done deletes the item and renews the marker.
	if err := s.rdb.PExpire(ctx, k.seen("1:1"), time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.Done(ctx, "telegram", "1:1"); err != nil {
		t.Fatal(err)
	}
	near(k.seen("1:1"), 30*time.Hour)
	if n, err := s.rdb.Exists(ctx, k.item("1:1"), k.pending()).Result(); err != nil || n != 0 {
		t.Errorf("%d of the item and the pending set left after Done (%v), want none", n, err)
	}
	// Done of a done id leaves the marker's lifetime alone.
	if err := s.rdb.PExpire(ctx, k.seen("1:1"), time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.Done(ctx, "telegram", "1:1"); err != nil {
		t.Fatal(err)
	}
	near(k.seen("1:1"), time.Hour)
}

// TestChannelExpiredKeys plays the server dropping keys when their time is
// up: a pending item whose marker expired is still a duplicate, an item
// that ran out its retention leaves Pending, and an id with neither is new.
func TestChannelExpiredKeys(t *testing.T) {
	s := openTest(t, Options{})
	ctx := t.Context()
	k := s.channelKeys("telegram")
	for i := range 20 {
		acceptOrFatal(t, s, fmt.Sprint(i))
	}
	if err := s.rdb.Del(ctx, k.seen("0")).Err(); err != nil {
		t.Fatal(err)
	}
	if acceptOrFatal(t, s, "0") {
		t.Error("a pending item whose marker expired was accepted again")
	}
	if n, err := s.rdb.Exists(ctx, k.seen("0")).Result(); err != nil || n != 1 {
		t.Errorf("marker of a redelivered pending item: exists=%d, %v; want it set again", n, err)
	}
	// Items 1 to 15 run out their retention.
	for i := 1; i <= 15; i++ {
		if err := s.rdb.Del(ctx, k.item(fmt.Sprint(i))).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if got := pendingOf(t, s, 3); got != "0,16,17" {
		t.Errorf("Pending(3) with expired items = %s, want 0,16,17", got)
	}
	if n, err := s.rdb.ZCard(ctx, k.pending()).Result(); err != nil || n != 5 {
		t.Errorf("pending set holds %d ids (%v), want the 5 live ones", n, err)
	}
	if acceptOrFatal(t, s, "1") {
		t.Error("an expired item whose marker lives was accepted again")
	}
	if err := s.rdb.Del(ctx, k.seen("1")).Err(); err != nil {
		t.Fatal(err)
	}
	if !acceptOrFatal(t, s, "1") {
		t.Error("an id without marker or item was not accepted")
	}
	if got := pendingOf(t, s, 10); got != "0,16,17,18,19,1" {
		t.Errorf("pending = %s, want 0,16,17,18,19,1", got)
	}
}

func TestChannelInvalid(t *testing.T) {
	s := openTest(t, Options{})
	for _, it := range []store.ChannelItem{{Channel: "telegram"}, {ID: "1"}} {
		if _, err := s.Accept(t.Context(), it); err == nil || errors.Is(err, store.ErrUnavailable) {
			t.Errorf("Accept(%+v) = %v, want a plain error", it, err)
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.Accept(ctx, chItem("1:1")); !errors.Is(err, context.Canceled) {
		t.Errorf("Accept with a canceled context: %v, want context.Canceled", err)
	}
}

package sqlitestore

import (
	"context"
	"errors"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/store"
	"github.com/arbiterhq/arbiter/store/storetest"
)

// Commits queued while the connection is busy share one transaction; a
// stale fence among them fails alone, and every other commit of its batch
// is stored with its journal record.
func TestGroupCommit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	ctx := t.Context()
	key := func(i int) chat.ConversationKey {
		return chat.ConversationKey{Tenant: "t", Chat: "c" + strconv.Itoa(i), User: "u"}
	}
	commit := func(i int, fence int64, text string) store.Commit {
		return store.Commit{Key: key(i), Fence: fence,
			Conversation: &store.Conversation{Messages: []store.Message{{Role: "user", Text: text}}},
			Turn:         &store.TurnRecord{TurnID: "turn-" + strconv.Itoa(i) + "-" + text, Tenant: "t", Chat: key(i).Chat, UserID: "u", Status: "ok", StartedAt: time.Now()}}
	}
	// Conversation 0 was committed under fence 5; its commit under fence 3
	// below is stale.
	if err := s.Commit(ctx, commit(0, 5, "first")); err != nil {
		t.Fatal(err)
	}

	const n = 8
	if err := s.acquireConn(ctx); err != nil { // hold the connection so the commits queue
		t.Fatal(err)
	}
	release := sync.OnceFunc(s.releaseConn) // also when the test fails first: Close waits for it
	defer release()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		fence := int64(1)
		if i == 0 {
			fence = 3
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.Commit(ctx, commit(i, fence, "second"))
		}()
	}
	waitQueued(t, s, n)
	release()
	wg.Wait()

	if s.group.maxLen != n {
		t.Errorf("longest batch = %d, want %d", s.group.maxLen, n)
	}
	// The first commit alone, then the batch, rolled back for the stale
	// fence and retried a commit at a time.
	if st, want := s.GroupStats(), (GroupStats{Writes: 1 + n, Transactions: 1 + 1 + n}); st != want {
		t.Errorf("stats = %+v, want %+v", st, want)
	}
	if !errors.Is(errs[0], store.ErrFenced) {
		t.Errorf("stale commit: %v, want ErrFenced", errs[0])
	}
	if _, err := s.GetTurn(ctx, "t", "turn-0-second"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("stale commit's turn: %v, want ErrNotFound", err)
	}
	for i := 1; i < n; i++ {
		if errs[i] != nil {
			t.Errorf("commit %d: %v", i, errs[i])
		}
		if _, err := s.GetTurn(ctx, "t", "turn-"+strconv.Itoa(i)+"-second"); err != nil {
			t.Errorf("turn of commit %d: %v", i, err)
		}
	}
	// Read from the file, not the cache.
	s.Close()
	if s, err = Open(path, Options{}); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		conv, err := s.LoadConversation(ctx, key(i))
		want := "second"
		if i == 0 {
			want = "first"
		}
		if err != nil || len(conv.Messages) != 1 || conv.Messages[0].Text != want {
			t.Errorf("conversation %d = %+v, %v; want %q", i, conv, err, want)
		}
	}
}

// Commits that become runnable together share a transaction even though
// the connection is free: each writer yields before taking it, so the
// others queue first. One processor makes the order of the goroutines
// the scheduler's alone; without the yield each commit takes its own.
func TestGroupCommitGathersRunnableWriters(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	s := openTest(t, Options{})
	ctx := t.Context()
	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			key := chat.ConversationKey{Tenant: "t", Chat: "c" + strconv.Itoa(i), User: "u"}
			errs[i] = s.Commit(ctx, store.Commit{Key: key,
				Conversation: &store.Conversation{Messages: []store.Message{{Role: "user", Text: "hi"}}}})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("commit %d: %v", i, err)
		}
	}
	// A collection or a preemption may split the batch once.
	if st := s.GroupStats(); st.Writes != n || st.Transactions > 2 {
		t.Errorf("stats = %+v, want %d writes in at most 2 transactions", st, n)
	}
}

// A commit whose caller gives up while it is still queued is withdrawn:
// it reports the context's error and writes nothing.
func TestGroupCommitWithdrawn(t *testing.T) {
	s := openTest(t, Options{})
	key := chat.ConversationKey{Tenant: "t", Chat: "c", User: "u"}
	if err := s.acquireConn(t.Context()); err != nil {
		t.Fatal(err)
	}
	release := sync.OnceFunc(s.releaseConn) // also when the test fails first: Close waits for it
	defer release()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- s.Commit(ctx, store.Commit{Key: key,
			Conversation: &store.Conversation{Messages: []store.Message{{Role: "user", Text: "hi"}}}})
	}()
	waitQueued(t, s, 1)
	cancel()
	err := <-done
	release()
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("withdrawn commit: %v, want context.Canceled", err)
	}
	if _, err := s.LoadConversation(t.Context(), key); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("withdrawn commit's memory: %v, want ErrNotFound", err)
	}
}

// waitQueued waits until n commits are queued.
func waitQueued(t *testing.T, s *Store, n int) {
	t.Helper()
	storetest.WaitQueued(t, "commits", n, func() int {
		s.group.mu.Lock()
		defer s.group.mu.Unlock()
		return len(s.group.queue)
	})
}

// A turn's reads of a conversation the cache knows do not wait for the
// connection (held by a commit in progress), and see what was committed;
// a conversation the cache does not know still waits, and a closed store
// answers no read.
func TestCachedReadsNeedNoConnection(t *testing.T) {
	s := openTest(t, Options{})
	ctx := t.Context()
	key := chat.ConversationKey{Tenant: "t", Chat: "c", User: "u"}
	pending := &store.PendingAction{ID: "a1", Tool: "create_task", Args: []byte(`{"title":"x"}`), ExpiresAt: time.Now().Add(time.Hour)}
	if err := s.Commit(ctx, store.Commit{Key: key, Fence: 1, PutPending: pending,
		Conversation: &store.Conversation{Messages: []store.Message{{Role: "user", Text: "hello"}}}}); err != nil {
		t.Fatal(err)
	}

	if err := s.acquireConn(ctx); err != nil { // a commit in progress
		t.Fatal(err)
	}
	release := sync.OnceFunc(s.releaseConn) // also when the test fails first: Close waits for it
	defer release()
	quick, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	conv, err := s.LoadConversation(quick, key)
	if err != nil || len(conv.Messages) != 1 || conv.Messages[0].Text != "hello" {
		t.Fatalf("LoadConversation while the connection is held = %+v, %v", conv, err)
	}
	p, err := s.GetPending(quick, key)
	if err != nil || p.ID != "a1" || string(p.Args) != `{"title":"x"}` {
		t.Fatalf("GetPending while the connection is held = %+v, %v", p, err)
	}
	p.Args[2] = 'X' // the caller's copy: the cached one stays
	unknown := chat.ConversationKey{Tenant: "t", Chat: "other", User: "u"}
	s.convs.mark(unknown, time.Now().Add(time.Hour).UnixNano()) // stored, not cached (we hold the connection)
	short, cancel2 := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel2()
	if _, err := s.LoadConversation(short, unknown); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("an uncached conversation read while the connection is held = %v, want the wait to time out", err)
	}
	release()
	if p, err := s.GetPending(ctx, key); err != nil || string(p.Args) != `{"title":"x"}` {
		t.Errorf("GetPending after a caller changed its copy = %+v, %v", p, err)
	}

	s.Close()
	if _, err := s.LoadConversation(ctx, key); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("LoadConversation after Close = %v, want ErrUnavailable", err)
	}
}

package sqlitestore

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/store"
	"github.com/arbiterhq/arbiter/store/storetest"
)

// An execution record whose transaction fails part way (here SQLite itself
// refuses the message claim written with it, through a trigger) leaves
// nothing behind: the record is not stored, and the store's connection is
// not left inside the failed transaction, so the next writes commit.
func TestFailedExecutionTransactionLeavesNothing(t *testing.T) {
	ctx := t.Context()
	s := openTest(t, Options{})
	if _, err := s.DB().ExecContext(ctx, `CREATE TRIGGER refuse_claim BEFORE INSERT ON inbox
		WHEN NEW.message_id = 'refused' BEGIN SELECT RAISE(ABORT, 'claim refused'); END`); err != nil {
		t.Fatal(err)
	}
	key := chat.ConversationKey{Tenant: "t", Chat: "c", User: "u"}
	rec := store.ExecutionRecord{Tenant: "t", IdempotencyKey: "k1", Tool: "pay", ArgsHash: "h",
		TurnID: "turn-1", Key: key, MessageID: "refused"}
	if _, _, err := s.BeginExecution(ctx, rec); err == nil {
		t.Fatal("BeginExecution succeeded although its claim was refused")
	}
	if got, err := s.GetExecution(ctx, "t", "k1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("record of the failed transaction: %+v, %v; want ErrNotFound", got, err)
	}

	// The store writes on: another record, and a turn's commit.
	rec.IdempotencyKey, rec.MessageID = "k2", "accepted"
	if _, fresh, err := s.BeginExecution(ctx, rec); err != nil || !fresh {
		t.Fatalf("BeginExecution after the failure: fresh=%v, %v", fresh, err)
	}
	conv := store.Conversation{UpdatedAt: time.Now()}
	if err := s.Commit(ctx, store.Commit{Key: key, Conversation: &conv}); err != nil {
		t.Fatalf("Commit after the failure: %v", err)
	}
	// Durable, not only visible to the store's own connection.
	var n int
	if err := s.DB().QueryRowContext(ctx, `SELECT count(*) FROM executions`).Scan(&n); err != nil || n != 1 {
		t.Errorf("executions in the file: %d, %v; want 1 (k2)", n, err)
	}
	if err := s.DB().QueryRowContext(ctx, `SELECT count(*) FROM conversations`).Scan(&n); err != nil || n != 1 {
		t.Errorf("conversations in the file: %d, %v; want 1", n, err)
	}
}

// A commit that only puts a pending action, or only drops it, updates the
// cache: a read served from the cache (which knew the conversation as
// empty, then as holding the action) sees the change.
func TestPendingOnlyCommitsReachTheCache(t *testing.T) {
	ctx := t.Context()
	s := openTest(t, Options{})
	// A first commit, elsewhere, runs the cleanup that empties the cache
	// (once a minute): the entry cached below stays.
	if err := s.Commit(ctx, store.Commit{Key: chat.ConversationKey{Tenant: "t", Chat: "other"}, DropPending: true}); err != nil {
		t.Fatal(err)
	}
	key := chat.ConversationKey{Tenant: "t", Chat: "c", User: "u"}
	if _, err := s.GetPending(ctx, key); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetPending of a new conversation: %v, want ErrNotFound", err)
	}
	now := time.Now()
	p := store.PendingAction{ID: "p1", Tool: "create_task", Args: []byte(`{"title":"x"}`), ArgsHash: "h",
		IdempotencyKey: "pending:p1", TurnID: "turn-1", CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	if err := s.Commit(ctx, store.Commit{Key: key, PutPending: &p}); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.cache.known(key); !ok {
		t.Error("after the commit the cache does not know the conversation")
	}
	if got, err := s.GetPending(ctx, key); err != nil || got.ID != "p1" || string(got.Args) != `{"title":"x"}` || got.Key != key {
		t.Errorf("GetPending after a commit that put only it: %+v, %v; want p1", got, err)
	}
	if err := s.Commit(ctx, store.Commit{Key: key, DropPending: true}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.GetPending(ctx, key); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetPending after a commit that dropped it: %+v, %v; want ErrNotFound", got, err)
	}
}

// A conversation the file holds nothing of is known without the store's
// connection: a chat's first turn reads it while another holds the
// connection (a commit in progress), instead of waiting for it.
func TestNewConversationReadWithoutTheConnection(t *testing.T) {
	s := openTest(t, Options{})
	s.sem <- struct{}{} // the connection, held as a commit holds it
	defer s.releaseConn()
	// A bound for the failure only: the read must not wait at all.
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	key := chat.ConversationKey{Tenant: "t", Chat: "new", User: "u"}
	if _, err := s.LoadConversation(ctx, key); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("LoadConversation of a new chat while the connection is held: %v, want ErrNotFound", err)
	}
	if _, err := s.GetPending(ctx, key); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetPending of a new chat while the connection is held: %v, want ErrNotFound", err)
	}
}

// The claim an execution record makes durable is the turn's own claim, as
// ClaimMessage made it (its turn and time), not one made up when the
// execution began: after a restart the redelivery finds the claim as it was.
func TestExecutionKeepsTheTurnsClaim(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "c.db")
	start := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	clock := storetest.NewClock(start)
	s, err := Open(path, Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	key := chat.ConversationKey{Tenant: "t", Chat: "c", User: "u"}
	if _, claimed, err := s.ClaimMessage(ctx, key, "m1", "turn-1", start); err != nil || !claimed {
		t.Fatalf("ClaimMessage: claimed=%v, %v", claimed, err)
	}
	clock.Advance(time.Hour) // the turn took its time before the side effect
	if _, _, err := s.BeginExecution(ctx, store.ExecutionRecord{Tenant: "t", IdempotencyKey: "k1", Tool: "pay",
		TurnID: "turn-1", Key: key, MessageID: "m1"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(path, Options{Now: clock.Now}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rec, claimed, err := s.ClaimMessage(ctx, key, "m1", "turn-2", clock.Now())
	if err != nil || claimed || rec.TurnID != "turn-1" || !rec.At.Equal(start) {
		t.Errorf("redelivery after reopen: %+v, claimed=%v, %v; want turn-1's claim of %v", rec, claimed, err, start)
	}
}

// Expired rows are deleted by a commit at most once a minute of the store
// clock: not sooner, and as soon as the minute is over.
func TestExpiredRowsDeletedOnceAMinute(t *testing.T) {
	ctx := t.Context()
	start := time.Date(2026, 7, 8, 9, 10, 11, 0, time.UTC)
	clock := storetest.NewClock(start)
	s := openTest(t, Options{Now: clock.Now, ConversationTTL: 10 * time.Second})
	rows := func() int {
		t.Helper()
		var n int
		if err := s.DB().QueryRowContext(ctx, `SELECT count(*) FROM conversations`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	commit := func(chatID string) {
		t.Helper()
		conv := store.Conversation{Messages: []store.Message{{Role: store.RoleUser, Text: "hi", At: clock.Now()}}}
		if err := s.Commit(ctx, store.Commit{Key: chat.ConversationKey{Tenant: "t", Chat: chatID, User: "u"}, Conversation: &conv}); err != nil {
			t.Fatal(err)
		}
	}
	commit("a") // the first cleanup runs now; "a" ends 10s later
	clock.Advance(30 * time.Second)
	commit("b")
	if n := rows(); n != 2 {
		t.Errorf("30s after the last cleanup: %d rows, want 2 (the expired one stays till the minute is over)", n)
	}
	clock.Advance(30 * time.Second)
	commit("c")
	if n := rows(); n != 1 {
		t.Errorf("a minute after the last cleanup: %d rows, want 1 (c; a and b have ended)", n)
	}
}

// A commit that cannot have the file (another connection holds its write
// lock past the busy timeout) fails as unavailable, for the caller to retry;
// one refused for a stale fence names the fence.
func TestCommitFailuresSayWhy(t *testing.T) {
	ctx := t.Context()
	s := openTest(t, Options{BusyTimeout: time.Millisecond})
	key := chat.ConversationKey{Tenant: "t", Chat: "c", User: "u"}
	conv := store.Conversation{UpdatedAt: time.Now()}
	tx, err := s.DB().BeginTx(ctx, nil) // immediate: it takes the write lock now
	if err != nil {
		t.Fatal(err)
	}
	err = s.Commit(ctx, store.Commit{Key: key, Conversation: &conv})
	_ = tx.Rollback()
	if !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("commit while another connection writes: %v, want ErrUnavailable", err)
	}

	old, err := s.Lock(ctx, key.String())
	if err != nil {
		t.Fatal(err)
	}
	old.Release()
	current, err := s.Lock(ctx, key.String())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, store.Commit{Key: key, Fence: current.Fence(), Conversation: &conv}); err != nil {
		t.Fatal(err)
	}
	current.Release()
	err = s.Commit(ctx, store.Commit{Key: key, Fence: old.Fence(), Conversation: &conv})
	if want := fmt.Sprintf("fence %d", old.Fence()); !errors.Is(err, store.ErrFenced) || !strings.Contains(fmt.Sprint(err), want) {
		t.Errorf("commit with a stale fence: %v, want ErrFenced naming %q", err, want)
	}
}

// One commit may drop the pending action, complete the message and journal
// the turn: all three are written, none cut short by the one before.
func TestCommitWritesEveryPart(t *testing.T) {
	ctx := t.Context()
	s := openTest(t, Options{})
	key := chat.ConversationKey{Tenant: "t", Chat: "c", User: "u"}
	now := time.Now()
	p := store.PendingAction{ID: "p1", Tool: "create_task", Args: []byte(`{}`), CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	if err := s.Commit(ctx, store.Commit{Key: key, PutPending: &p}); err != nil {
		t.Fatal(err)
	}
	if _, claimed, err := s.ClaimMessage(ctx, key, "m1", "turn-1", now); err != nil || !claimed {
		t.Fatalf("ClaimMessage: claimed=%v, %v", claimed, err)
	}
	reply := []byte(`{"say":"cancelled"}`)
	if err := s.Commit(ctx, store.Commit{Key: key, DropPending: true, MessageID: "m1", Reply: reply,
		Turn: &store.TurnRecord{TurnID: "turn-1", Tenant: "t", Chat: "c", UserID: "u", Status: "ok", StartedAt: now}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetPending(ctx, key); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("pending after the drop: %v, want ErrNotFound", err)
	}
	if rec, claimed, err := s.ClaimMessage(ctx, key, "m1", "turn-2", now); err != nil || claimed || !rec.Done || string(rec.Reply) != string(reply) {
		t.Errorf("the message after the commit: %+v, claimed=%v, %v; want done with the reply", rec, claimed, err)
	}
	if _, err := s.GetTurn(ctx, "t", "turn-1"); err != nil {
		t.Errorf("the turn after the commit: %v", err)
	}
}

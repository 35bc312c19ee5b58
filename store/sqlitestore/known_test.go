package sqlitestore

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/store"
)

// A conversation the store has never stored is answered from memory, not
// from the file: a row put behind the store's back (which nothing but a
// test may do) is not seen until the store opens the file again and
// indexes it.
func TestNewConversationNeedsNoRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	key := chat.ConversationKey{Tenant: "t", Chat: "c", User: "u"}
	mem := store.AppendConversation(nil, &store.Conversation{Messages: []store.Message{{Role: "user", Text: "hi"}}}, time.Time{})
	if _, err := s.DB().Exec(`INSERT INTO conversations (tenant, chat, user_id, updated_at, expires_at, fence, memory)
		VALUES ('t', 'c', 'u', 1, ?, 0, ?)`, time.Now().Add(time.Hour).UnixNano(), mem); err != nil {
		t.Fatal(err)
	}
	if _, err := s.LoadConversation(ctx, key); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a conversation the store never stored: %v, want ErrNotFound without a read", err)
	}
	s.Close()
	if s, err = Open(path, Options{}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if conv, err := s.LoadConversation(ctx, key); err != nil || len(conv.Messages) != 1 || conv.Messages[0].Text != "hi" {
		t.Errorf("after reopening: %+v, %v; want the stored memory", conv, err)
	}
	other := chat.ConversationKey{Tenant: "t", Chat: "other", User: "u"}
	if _, err := s.GetPending(ctx, other); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("pending of a new conversation: %v, want ErrNotFound", err)
	}
	if err := s.Commit(ctx, store.Commit{Key: other, Conversation: &store.Conversation{Messages: []store.Message{{Role: "user", Text: "x"}}}}); err != nil {
		t.Fatal(err)
	}
	s.cache.remove(s.cache.get(other)) // forget it in the cache: the index must send the read to the file
	if conv, err := s.LoadConversation(ctx, other); err != nil || len(conv.Messages) != 1 {
		t.Errorf("a conversation committed, then dropped from the cache: %+v, %v", conv, err)
	}
}

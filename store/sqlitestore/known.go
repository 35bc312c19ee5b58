package sqlitestore

import (
	"context"
	"fmt"
	"hash/maphash"
	"sync"

	"github.com/arbiterhq/arbiter/chat"
)

// conversations indexes, by hash, the conversations whose memory or pending
// action the file holds, with the latest time either is kept until: loaded
// at Open, kept up to date by Commit (the store is the only writer of those
// tables). A conversation it does not hold — every first message of a chat
// — is known to have neither without a query. A hash collision only costs
// the query, and a stored conversation is never missing, so nothing stored
// is overlooked. Changed only holding the store's connection; its own lock
// lets a turn's first read learn that a conversation is new without
// waiting for the connection (see Store.absentView).
type conversations struct {
	seed   maphash.Seed
	mu     sync.RWMutex
	stored map[uint64]int64 // hash -> the latest expires_at / delete_after under it
}

func (c *conversations) init() {
	c.seed = maphash.MakeSeed()
	c.stored = make(map[uint64]int64)
}

func (c *conversations) hash(key chat.ConversationKey) uint64 {
	var h maphash.Hash
	h.SetSeed(c.seed)
	// Each part ends with a byte no UTF-8 text contains, so parts cannot
	// run into each other.
	for _, part := range [...]string{key.Tenant, key.Chat, key.User} {
		h.WriteString(part)
		h.WriteByte(0xff)
	}
	return h.Sum64()
}

func (c *conversations) mark(key chat.ConversationKey, until int64) {
	h := c.hash(key)
	c.mu.Lock()
	c.stored[h] = max(c.stored[h], until)
	c.mu.Unlock()
}

// absent reports whether key has nothing stored that is still live at now.
func (c *conversations) absent(key chat.ConversationKey, now int64) bool {
	h := c.hash(key)
	c.mu.RLock()
	until, ok := c.stored[h]
	c.mu.RUnlock()
	return !ok || until < now
}

// sweep forgets conversations whose rows all expired before now.
func (c *conversations) sweep(now int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for h, until := range c.stored {
		if until < now {
			delete(c.stored, h)
		}
	}
}

// loadConversations indexes the live conversations in the file. Called by
// Open.
func (s *Store) loadConversations(ctx context.Context) error {
	now := s.now().UnixNano()
	for _, q := range []string{
		`SELECT tenant, chat, user_id, expires_at FROM conversations WHERE expires_at >= ?`,
		`SELECT tenant, chat, user_id, delete_after FROM pending WHERE delete_after >= ?`,
	} {
		rows, err := s.conn.QueryContext(ctx, q, now)
		if err != nil {
			return fmt.Errorf("load conversations: %w", err)
		}
		for rows.Next() {
			var key chat.ConversationKey
			var until int64
			if err := rows.Scan(&key.Tenant, &key.Chat, &key.User, &until); err != nil {
				rows.Close()
				return fmt.Errorf("load conversations: %w", err)
			}
			s.convs.mark(key, until)
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return fmt.Errorf("load conversations: %w", err)
		}
	}
	return nil
}

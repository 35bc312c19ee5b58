package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/maphash"
	"time"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/store"
)

// inbox is the in-memory side of message deduplication. It is guarded by
// the store's connection semaphore, which also serializes claims, so one id
// is claimed once.
//
// A claim reaches the database with its completion, inside the turn's
// Commit, or earlier with the first side effect its turn begins
// (BeginExecution of a record naming the message): that saves a write
// transaction on every turn that changes nothing outside. Within the
// process a pending claim is visible to every later ClaimMessage exactly as
// a stored one would be. After a crash a claim whose turn neither committed
// nor began a side effect is forgotten and a redelivery of its message is
// claimed afresh — nothing of the first attempt is left to repeat; one
// whose turn began a side effect comes back not done, and the engine
// finishes that execution rather than deciding the message again.
//
// stored indexes, by hash, the message ids the database holds, loaded at
// Open and kept up to date by Commit; a claim of an id it does not hold
// (every first delivery) needs no query. A hash collision only costs a
// query, and an id is never missing, so no stored record is overlooked.
type inbox struct {
	claims map[claimKey]claim
	seed   maphash.Seed
	stored map[uint64]int64 // hash -> the latest expires_at under it
}

type claimKey struct {
	key chat.ConversationKey
	msg string
}

type claim struct {
	turnID  string
	at      time.Time
	expires int64 // Unix nanoseconds on the store clock
}

func (in *inbox) init() {
	in.claims = make(map[claimKey]claim)
	in.seed = maphash.MakeSeed()
	in.stored = make(map[uint64]int64)
}

func (in *inbox) hash(key chat.ConversationKey, msg string) uint64 {
	var h maphash.Hash
	h.SetSeed(in.seed)
	// Each part ends with a byte no UTF-8 text contains, so parts cannot
	// run into each other.
	for _, part := range [...]string{key.Tenant, key.Chat, key.User, msg} {
		h.WriteString(part)
		h.WriteByte(0xff)
	}
	return h.Sum64()
}

func (in *inbox) markStored(key chat.ConversationKey, msg string, expires int64) {
	h := in.hash(key, msg)
	in.stored[h] = max(in.stored[h], expires)
}

// loadStored indexes the live message ids in the database. Called by Open.
func (s *Store) loadStored(ctx context.Context) error {
	rows, err := s.conn.QueryContext(ctx, `SELECT tenant, chat, user_id, message_id, expires_at FROM inbox WHERE expires_at >= ?`,
		s.now().UnixNano())
	if err != nil {
		return fmt.Errorf("load inbox: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var key chat.ConversationKey
		var msg string
		var expires int64
		if err := rows.Scan(&key.Tenant, &key.Chat, &key.User, &msg, &expires); err != nil {
			return fmt.Errorf("load inbox: %w", err)
		}
		s.inbox.markStored(key, msg, expires)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("load inbox: %w", err)
	}
	return nil
}

// ClaimMessage records messageID for key under turnID, or returns the
// record of an earlier claim (claimed=false), done with its reply once that
// turn committed. Records are kept for InboxTTL after the claim. Safe for
// concurrent use; concurrent claims of one id yield exactly one
// claimed=true.
func (s *Store) ClaimMessage(ctx context.Context, key chat.ConversationKey, messageID, turnID string, now time.Time) (store.InboxRecord, bool, error) {
	if err := s.acquireConn(ctx); err != nil {
		return store.InboxRecord{}, false, s.fail("claim message", key, err)
	}
	defer s.releaseConn()
	in := &s.inbox
	clock := s.now().UnixNano()
	ck := claimKey{key, messageID}
	if c, ok := in.claims[ck]; ok && c.expires >= clock {
		return store.InboxRecord{MessageID: messageID, TurnID: c.turnID, At: c.at}, false, nil
	}

	if expires, ok := in.stored[in.hash(key, messageID)]; ok && expires >= clock {
		// One struct for the scan targets: they escape together, in one
		// allocation.
		var row struct {
			turnID string
			done   bool
			at     int64
			reply  []byte
		}
		err := s.q.getInbox.QueryRowContext(noCancel, key.Tenant, key.Chat, key.User, messageID, clock).
			Scan(&row.turnID, &row.done, &row.at, &row.reply)
		if err == nil {
			return store.InboxRecord{MessageID: messageID, TurnID: row.turnID, Done: row.done,
				Reply: row.reply, At: fromUnixNano(row.at)}, false, nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return store.InboxRecord{}, false, s.fail("claim message", key, err)
		}
	}
	at := fromUnixNano(unixNano(now))
	in.claims[ck] = claim{turnID: turnID, at: at, expires: clock + int64(s.opts.InboxTTL)}
	return store.InboxRecord{MessageID: messageID, TurnID: turnID, At: at}, true, nil
}

// completeMessage writes the inbox record of c.MessageID, done with
// c.Reply, inside the commit transaction; kt, kc and ku are the parts of
// c.Key. Called holding the connection.
func (s *Store) completeMessage(c *store.Commit, now time.Time, kt, kc, ku any) error {
	cl, ok := s.inbox.claims[claimKey{c.Key, c.MessageID}]
	if !ok {
		// Completed without a claim in this process: record it from now.
		cl = claim{at: now, expires: now.Add(s.opts.InboxTTL).UnixNano()}
	}
	_, err := s.cq.exec(s.cq.inboxDone, kt, kc, ku, c.MessageID, cl.turnID,
		unixNano(cl.at), cl.expires, nullJSON(c.Reply))
	// Marked even if the transaction fails after all: an id too many
	// costs a query, an id missing would lose a record.
	s.inbox.markStored(c.Key, c.MessageID, cl.expires)
	return err
}

// committed drops a claim once its completion committed; later claims
// find the stored record. Called holding the connection.
func (in *inbox) committed(key chat.ConversationKey, messageID string) {
	delete(in.claims, claimKey{key, messageID})
}

// sweep drops claims whose turn never committed and indexed ids whose
// records expired, after InboxTTL. Called holding the connection.
func (in *inbox) sweep(now time.Time) {
	clock := now.UnixNano()
	for k, c := range in.claims {
		if c.expires < clock {
			delete(in.claims, k)
		}
	}
	for h, expires := range in.stored {
		if expires < clock {
			delete(in.stored, h)
		}
	}
}

package sqlitestore

import (
	"context"
	"fmt"

	"github.com/arbiterhq/arbiter/store"
)

// The channel inbox is the table channel_inbox: one row per (channel, id),
// numbered by acceptance (seq), not done until Done marks it. A row is
// deleted, by the cleanup that runs at most once a minute, only once it is
// done and ChannelDedupe passed both since its acceptance and since it was
// marked done; until then a redelivery of its id is a duplicate. Pending
// rows are never deleted: an item the channel acknowledged stays until it
// was processed.
//
// Accept, Done and the cleanup use the store's connection; Pending reads
// through the pool.

// channelName names an item in errors.
func channelName(channel, id string) string { return channel + "/" + id }

// Accept stores item unless an item with the same channel and id is
// remembered (see the channel inbox above), and reports whether it was new.
// A zero AcceptedAt is set to the store clock. It returns once the row is in
// the write-ahead log and the log is synced to disk: the insert runs with
// synchronous=FULL, so an accepted item survives a power loss too, at the
// cost of one fsync per fresh or duplicate item. Of concurrent Accepts of
// one id exactly one is fresh. Safe for concurrent use. An empty channel or
// id is refused with an error; a closed store or an unusable database
// yields an error wrapping store.ErrUnavailable.
func (s *Store) Accept(ctx context.Context, item store.ChannelItem) (bool, error) {
	name := channelName(item.Channel, item.ID)
	if item.Channel == "" || item.ID == "" {
		return false, fmt.Errorf("accept channel item %q: empty channel or id", name)
	}
	if err := s.acquireConn(ctx); err != nil {
		return false, s.fail("accept channel item", name, err)
	}
	defer s.releaseConn()
	now := s.now()
	// Before the insert, so that an id whose window passed is accepted
	// afresh as soon as the cleanup ran.
	s.maybeCleanup(now)
	at := item.AcceptedAt
	if at.IsZero() {
		at = now
	}
	fresh, err := s.acceptSynced(&item, unixNano(at), now.Add(s.opts.ChannelDedupe).UnixNano())
	if err != nil {
		return false, s.fail("accept channel item", name, err)
	}
	return fresh, nil
}

// acceptSynced inserts the item as one autocommit statement under
// synchronous=FULL, then restores the store's NORMAL. Called holding the
// connection.
func (s *Store) acceptSynced(item *store.ChannelItem, at, expires int64) (bool, error) {
	q := &s.q
	if _, err := q.syncFull.ExecContext(noCancel); err != nil {
		return false, err
	}
	// Failing to restore NORMAL would only make later commits slower.
	defer func() { _, _ = q.syncNormal.ExecContext(noCancel) }()
	res, err := q.channelAccept.ExecContext(noCancel, item.Channel, item.ID, item.OrderKey, at, expires,
		nullJSON(item.Payload))
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, err
	}
	return n == 1, nil
}

// Pending returns at most n items of channel not yet marked done, in the
// order they were accepted, with their payloads byte for byte (an empty
// payload comes back nil). n <= 0 returns none. It reads through the pool,
// without waiting for the store's connection. Safe for concurrent use; a
// closed store yields an error wrapping store.ErrUnavailable.
func (s *Store) Pending(ctx context.Context, channel string, n int) ([]store.ChannelItem, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("pending channel items %s: %w", channel, err)
	}
	if s.closed.Load() {
		return nil, s.fail("pending channel items", channel, store.ErrUnavailable)
	}
	if n <= 0 {
		return nil, nil
	}
	rows, err := s.pool.channelPending.QueryContext(ctx, channel, n)
	if err != nil {
		return nil, s.fail("pending channel items", channel, err)
	}
	defer rows.Close()
	var items []store.ChannelItem
	for rows.Next() {
		it := store.ChannelItem{Channel: channel}
		var at int64
		var payload []byte
		if err := rows.Scan(&it.ID, &it.OrderKey, &at, &payload); err != nil {
			return nil, s.fail("pending channel items", channel, err)
		}
		it.AcceptedAt, it.Payload = fromUnixNano(at), payload
		items = append(items, it)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail("pending channel items", channel, err)
	}
	return items, nil
}

// Done marks the item processed: it leaves Pending, and its id stays
// remembered for ChannelDedupe from now (or longer, from its acceptance).
// Marking an unknown or done item does nothing and returns nil. Safe for
// concurrent use; a closed store or an unusable database yields an error
// wrapping store.ErrUnavailable.
func (s *Store) Done(ctx context.Context, channel, id string) error {
	name := channelName(channel, id)
	if err := s.acquireConn(ctx); err != nil {
		return s.fail("mark channel item done", name, err)
	}
	defer s.releaseConn()
	now := s.now()
	if _, err := s.q.channelDone.ExecContext(noCancel, channel, id, now.Add(s.opts.ChannelDedupe).UnixNano()); err != nil {
		return s.fail("mark channel item done", name, err)
	}
	s.maybeCleanup(now)
	return nil
}

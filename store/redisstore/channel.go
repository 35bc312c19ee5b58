package redisstore

import (
	"context"
	"fmt"
	"time"

	"github.com/arbiterhq/arbiter/store"
)

// channelKeys are the Redis keys of one channel's inbox; they share the
// hash tag of "channel:<name>".
type channelKeys struct {
	base string // P{channel:<name>}
}

func (s *Store) channelKeys(channel string) channelKeys {
	return channelKeys{base: s.tag("channel:" + channel)}
}

func (k channelKeys) seq() string           { return k.base + ":ci:seq" }
func (k channelKeys) pending() string       { return k.base + ":ci:pending" }
func (k channelKeys) seen(id string) string { return k.base + ":ci:seen:" + id }
func (k channelKeys) item(id string) string { return k.base + ":ci:item:" + id }
func channelName(channel, id string) string { return channel + "/" + id }

// Accept stores item unless its id is remembered, and reports whether it
// was new; one script, so of concurrent Accepts of one id, from any number
// of processes, exactly one is fresh. An id is remembered for
// ChannelDedupe after its acceptance, for ChannelDedupe after Done, and
// while its item is pending. A zero AcceptedAt is set to Options.Now. The
// item is as durable as the server makes its writes when Accept returns:
// run Redis with appendonly yes and appendfsync always for an item to
// survive a crash of the server. An empty channel or id is refused with an
// error; an unreachable server yields an error wrapping
// store.ErrUnavailable. One round trip. Safe for concurrent use.
func (s *Store) Accept(ctx context.Context, item store.ChannelItem) (bool, error) {
	name := channelName(item.Channel, item.ID)
	if item.Channel == "" || item.ID == "" {
		return false, fmt.Errorf("accept channel item %q: empty channel or id", name)
	}
	if err := s.checkOpen(ctx); err != nil {
		return false, s.fail(ctx, "accept channel item", name, err)
	}
	at := item.AcceptedAt
	if at.IsZero() {
		at = s.now()
	}
	k := s.channelKeys(item.Channel)
	n, err := s.channelAcceptScript.Run(ctx, s.rdb,
		[]string{k.seen(item.ID), k.item(item.ID), k.pending(), k.seq()},
		item.ID, pxArg(s.opts.ChannelDedupe), item.OrderKey, at.UTC().Format(time.RFC3339Nano),
		[]byte(item.Payload), pxArg(s.opts.ChannelRetention)).Int64()
	if err != nil {
		return false, s.fail(ctx, "accept channel item", name, err)
	}
	return n == 1, nil
}

// maxPendingPasses bounds how often Pending reads again after finding ids
// whose items are gone (each pass drops the ones it found), so that it ends
// under any churn.
const maxPendingPasses = 64

// Pending returns at most n items of channel not yet marked done, in the
// order they were accepted, with their payloads byte for byte (an empty
// payload comes back nil). n <= 0 returns none. An item that was not
// marked done within ChannelRetention is gone, and its id is dropped here.
// Two round trips: the ids, then their items. Safe for concurrent use; an
// unreachable server yields an error wrapping store.ErrUnavailable.
func (s *Store) Pending(ctx context.Context, channel string, n int) ([]store.ChannelItem, error) {
	if err := s.checkOpen(ctx); err != nil {
		return nil, s.fail(ctx, "pending channel items", channel, err)
	}
	if n <= 0 {
		return nil, nil
	}
	k := s.channelKeys(channel)
	var items []store.ChannelItem
	for range maxPendingPasses {
		ids, err := s.rdb.ZRange(ctx, k.pending(), 0, int64(n-1)).Result()
		if err != nil {
			return nil, s.fail(ctx, "pending channel items", channel, err)
		}
		if len(ids) == 0 {
			return nil, nil
		}
		keys := make([]string, 1, 1+len(ids))
		keys[0] = k.pending()
		args := make([]any, len(ids))
		for i, id := range ids {
			keys = append(keys, k.item(id))
			args[i] = id
		}
		vals, err := s.channelPendingScript.Run(ctx, s.rdb, keys, args...).StringSlice()
		if err != nil {
			return nil, s.fail(ctx, "pending channel items", channel, err)
		}
		if len(vals)%4 != 0 {
			return nil, fmt.Errorf("pending channel items %s: malformed reply of %d values", channel, len(vals))
		}
		items = make([]store.ChannelItem, 0, len(vals)/4)
		for i := 0; i < len(vals); i += 4 {
			at, err := time.Parse(time.RFC3339Nano, vals[i+2])
			if err != nil {
				return nil, fmt.Errorf("pending channel items %s: item %s: malformed time: %w", channel, vals[i], err)
			}
			it := store.ChannelItem{Channel: channel, ID: vals[i], OrderKey: vals[i+1], AcceptedAt: at}
			if vals[i+3] != "" {
				it.Payload = []byte(vals[i+3])
			}
			items = append(items, it)
		}
		// Every id had its item, or the set holds no more: the page is
		// whole. Otherwise items that followed the gone ones may fit.
		if len(items) == len(ids) || len(ids) < n {
			break
		}
	}
	return items, nil
}

// Done marks the item processed: out of the pending set, its item
// deleted, its id remembered for ChannelDedupe from now. Marking an unknown
// or done item changes nothing and returns nil. One round trip. Safe for
// concurrent use; an unreachable server yields an error wrapping
// store.ErrUnavailable.
func (s *Store) Done(ctx context.Context, channel, id string) error {
	name := channelName(channel, id)
	if err := s.checkOpen(ctx); err != nil {
		return s.fail(ctx, "mark channel item done", name, err)
	}
	k := s.channelKeys(channel)
	err := s.channelDoneScript.Run(ctx, s.rdb, []string{k.pending(), k.item(id), k.seen(id)},
		id, pxArg(s.opts.ChannelDedupe)).Err()
	if err != nil {
		return s.fail(ctx, "mark channel item done", name, err)
	}
	return nil
}

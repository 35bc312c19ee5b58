// Package redisstore is the shared store backend: conversation memory,
// pending actions, the inbox, execution records and the conversation lock
// with fencing live in Redis (7.0 or later), so several arbiter processes
// can serve the same conversations.
//
// It implements store.State, store.Locker, store.ChannelInbox (see
// Accept) and store.Actions (see actions.go for their keys) and passes the
// store/storetest suite. It is not a store.Journal:
// turn records belong in a durable database (store/sqlitestore or a
// PostgreSQL backend), and a Commit that carries one (Commit.Turn) is
// refused with an error, writing nothing.
// A restarted, empty server keeps the lock safe (see Fences below), but
// the data is only as durable as the server: without persistence a restart
// forgets conversations, and with them the inbox (a redelivered message is
// processed again) and the execution records that keep tool side effects
// at most once. Run Redis with AOF persistence where that must survive a
// restart.
//
// A turn's state work takes two round trips, three with a message id:
// Lock, whose grant brings the conversation's memory and pending action
// along (LoadConversation and GetPending of the lock holder read them from
// the lease until it writes), ClaimMessage, and Commit (memory, pending
// action, inbox completion and, with Commit.Release, the release of the
// lock in one script). A turn longer than LockTTL/3 adds one renewal per
// LockTTL/3, off its path; a Lock that has to wait adds one round trip per
// poll (see Lock queue).
//
// # Keys
//
// Every key starts with Options.Prefix (P, default "arbiter:"; a prefix
// with a '{' would put every key in one cluster slot). The keys of
// one conversation share a hash tag, {T}, where T is
// ConversationKey.String() with '%', '{' and '}' percent-escaped, so that
// the scripts that touch several of them also run on Redis Cluster. A lock
// taken with Lock(ctx, name) uses the tag of name; the engine locks a
// conversation under ConversationKey.String(), which is what ties a lease
// to the conversation's data.
//
//	P{T}:mem       string  memory: "<expiry µs>\n<Conversation>" in the compact
//	                       form of store.AppendConversation (JSON before); expiry
//	                       is the latest of its parts' times (a part without
//	                       one: UpdatedAt+ConversationTTL) on Options.Now, and
//	                       the key's PX is that long after the commit, plus a
//	                       margin: one key, as long as its longest-lived part.
//	                       A read drops the parts whose time passed.
//	P{T}:pend      hash    the pending action: id, exp (ExpiresAt+PendingGrace
//	                       in µs on Options.Now), v (PendingAction JSON); Redis
//	                       drops it after the same span plus a margin.
//	P{T}:in:<msg>  string  inbox record of message id msg: a JSON line
//	                       {"turn_id","at"} written by the claim (SET NX), and
//	                       once the turn committed "\n<reply>" after it. Kept
//	                       InboxTTL (at least 24h) after the claim.
//	P{T}:lock      string  the lock: the holder's random token, PX LockTTL,
//	                       renewed by the holder every LockTTL/3.
//	P{T}:fence     string  the lock's fence counter: the newest fence granted.
//	                       Kept FenceTTL after the last grant.
//	P{T}:queue     zset    the Lock calls waiting for the lock: their tokens,
//	                       scored by arrival ticket (the highest ticket queued
//	                       plus one). Exists only while someone waits; PX
//	                       twice the staleness bound, refreshed by every poll.
//	P{T}:beat      hash    token -> the server time (ms) of that waiter's last
//	                       poll, its heartbeat. Same lifetime as P{T}:queue.
//	P{T}:wake      channel (pub/sub, not a key) a message naming the token
//	                       at the head of the queue when the lock is free for
//	                       it.
//	Pexec:<t>/<k>  string  execution record of tenant t ('%' and '/' escaped)
//	                       and idempotency key k: a JSON line (the record as
//	                       begun), and once finished "\n<finished at>\n<result>"
//	                       after it. Kept ExecutionTTL after BeginExecution.
//
// The channel inbox keeps the keys of channel c under the tag {C}, C being
// "channel:c" escaped as above, so one channel's keys share a cluster slot:
//
//	P{C}:ci:seq         string  the acceptance counter (INCR); never expires.
//	P{C}:ci:pending     zset    the ids of items not yet done, scored by
//	                            their acceptance number.
//	P{C}:ci:item:<id>   hash    a pending item: order, at (RFC 3339),
//	                            payload (the bytes as given). Deleted by
//	                            Done; PX ChannelRetention from acceptance.
//	P{C}:ci:seen:<id>   string  the dedupe marker: PX ChannelDedupe, set by
//	                            the acceptance and again by Done.
//
// Expiry decisions the engine relies on (a conversation's part past its
// time, a pending action past its grace) are taken on Options.Now against the
// expiry stored with the value; Redis expiry only cleans up, a margin later.
// Inbox and execution records, which must be kept at least a given time,
// simply expire on Redis's clock.
//
// # Scripts
//
// Every multi-step change is one Lua script, so it is atomic on the server;
// each script checks everything before its first write, so none can stop
// half way. They are loaded at Open and run by digest (EVALSHA, falling back
// to EVAL after a server restart):
//
//   - lock: one attempt of a Lock call (see Lock queue below). If P{T}:lock
//     is free and nobody is queued, or it is free and the token heads the
//     queue, SET it to the token with PX LockTTL, take the token out of the
//     queue, INCR the fence counter (starting it at the server's clock in
//     microseconds when it does not exist) and return the fence. Otherwise
//     queue the token (if it is not queued yet), set its heartbeat and return
//     the holder's remaining PTTL and the token's place in the queue. Stale
//     queue heads are dropped first. A retried call that finds its own token
//     holding the lock returns the current fence.
//   - extend: PEXPIRE P{T}:lock if it still holds the token, else report
//     the lease lost.
//   - release: DEL P{T}:lock if it still holds the token (compare-and-delete),
//     so a holder whose lease expired and was granted to another never
//     frees the newer holder's lock; take the token out of the queue (a Lock
//     call that gives up uses it too); and if the lock is then free, PUBLISH
//     the head of the queue on P{T}:wake.
//   - take: delete and return the pending action if its id matches and it is
//     within its grace; exactly one of concurrent takers gets it.
//   - complete: append the completion to an execution record (FinishExecution).
//   - commit: refuse the commit (ErrFenced) if its fence is older than the
//     newest fence of the conversation's lock, else write memory, put or drop
//     the pending action, and complete the inbox record.
//   - channel accept: unless the id's marker exists or its item is still
//     pending, INCR the channel's counter, set the marker, write the item
//     and ZADD its id under the new number.
//   - channel pending: read the items of the ids a ZRANGE returned, and
//     ZREM the ids whose items ran out their retention.
//   - channel done: ZREM the id, delete its item, set its marker again.
//
// ClaimMessage and BeginExecution are a single SET NX GET each.
//
// # Lock queue
//
// Lock is fair: callers of one key are granted in the order they first
// found it held, across every process sharing the server. A caller that
// finds the lock held (or free but with others queued) joins the key's
// queue in the same round trip, with a ticket above every ticket queued,
// and from then on only the queue's head may take the lock. A free key with
// nobody queued is granted at once, touching no queue key, so an
// uncontended Lock is still one round trip, and Release is one too.
//
// A queued caller retries the lock script (one round trip per poll); every
// poll renews its heartbeat on the server's clock (TIME). The head retries
// with a back-off from 5ms to 100ms, never sleeping past the holder's
// remaining TTL, and callers behind it poll every 250ms. A release that
// frees the lock publishes the head's token on P{T}:wake; a store holds one
// subscriber connection while any of its Lock calls waits (and a minute
// after, for the next), which hands the message to the waiting call, and
// that call retries at once.
// A hand-off therefore takes about three round trips (release, message,
// lock) rather than a poll interval. The lock script publishes the head
// too when it finds the lock free for a head that has not taken it yet.
// Wake-ups only speed things up: one that is lost (a subscriber connection
// being re-established, a channel the ACL user may not use) leaves the head
// to find the free lock by polling, within 100ms. On Redis Cluster, PUBLISH
// reaches the subscribers on every node.
//
// A caller that gives up (LockWait, ctx, Close) or whose attempt failed
// takes itself out of the queue, and Close waits for its Lock calls to do
// so. A waiter that stops polling without leaving (its process died or
// stalled) must not block the queue: a head whose heartbeat is older than
// 5s, twenty times the longest poll interval, is dropped by the next poll
// of anyone queued behind it, so a dead waiter delays the others by at most
// 5s plus a poll interval. A live waiter that was dropped after a stall
// longer than that is queued again at the end on its next poll. Since only
// waiters keep the queue keys alive, they expire 10s after the last poll
// of the last waiter, and an emptied queue is deleted at once. Heartbeats
// are compared on one server's clock only; after a failover to a server
// whose clock differs, waiters may be dropped early (they queue again) or
// late.
//
// # Fences
//
// A grant increments the conversation's fence counter, and Commit refuses a
// fence older than the counter, so a holder that stalled past its TTL while
// another took the lock cannot overwrite the newer turn. A counter is
// started from the server clock in microseconds, which is above every fence
// an earlier counter of the key handed out (as long as fewer than a million
// grants a second were made), so an expired counter or a restarted server
// never reissues an old fence. A commit whose fence is 0 passes only while
// the key has no counter (it was never locked, or not for FenceTTL).
//
// # Failure
//
// When Redis cannot be reached (connection refused, timeouts, a closed
// client, a server that is loading, read-only, out of memory or down) every
// method fails with an error wrapping store.ErrUnavailable; nothing is
// retried or buffered, so nothing is written later. As with any network
// store, a call whose reply was lost may have been applied. The client the
// store creates does no automatic retries, since a retried write whose first
// reply was lost could apply twice.
package redisstore

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/arbiterhq/arbiter/store"
)

// Interface guards. The store is deliberately no store.Journal.
var (
	_ store.State        = (*Store)(nil)
	_ store.Locker       = (*Store)(nil)
	_ store.ChannelInbox = (*Store)(nil)
)

// Defaults for zero Options fields.
const (
	DefaultPrefix           = "arbiter:"
	DefaultLockWait         = 30 * time.Second
	DefaultLockTTL          = 45 * time.Second
	DefaultConversationTTL  = 30 * time.Minute
	DefaultInboxTTL         = 24 * time.Hour
	DefaultPendingGrace     = 24 * time.Hour
	DefaultExecutionTTL     = 7 * 24 * time.Hour
	DefaultChannelDedupe    = 24 * time.Hour
	DefaultChannelRetention = 7 * 24 * time.Hour
	// MinFenceTTL is the least time a fence counter is kept after the last
	// grant of its key.
	MinFenceTTL = 7 * 24 * time.Hour
)

// expiryMargin is how much longer Redis keeps a value than its logical
// expiry on Options.Now, so that clocks a little apart never lose a value
// early.
const expiryMargin = time.Minute

// Options configure a Store. Zero values mean the documented defaults.
type Options struct {
	// URL locates the server, e.g. "redis://127.0.0.1:6379/0" (see
	// redis.ParseURL for the accepted forms). Ignored when Client is set.
	URL string
	// Prefix starts every key. Default "arbiter:".
	Prefix string
	// Now is the clock of expiry decisions on memory and pending actions
	// and of default timestamps. Default time.Now. Locks use real time:
	// their TTL runs on the Redis server.
	Now func() time.Time
	// LockWait bounds how long Lock waits for a held key. Default 30s.
	LockWait time.Duration
	// LockTTL is how long a lease lives without renewal; a held lease
	// renews itself every LockTTL/3. Default 45s.
	LockTTL time.Duration
	// ConversationTTL is how long a part of a conversation that states no
	// time of its own (store.Conversation.MessagesUntil, SlotsUntil) is
	// kept after its UpdatedAt.
	// Default 30m.
	ConversationTTL time.Duration
	// InboxTTL is how long a claimed message id is remembered. Default 24h;
	// smaller values are raised to 24h, since a redelivery within a day
	// must stay a no-op.
	InboxTTL time.Duration
	// PendingGrace is how long a pending action is kept past its ExpiresAt,
	// so the engine can still tell the user it expired. Default 24h.
	PendingGrace time.Duration
	// ExecutionTTL is how long an execution record is kept after
	// BeginExecution. Default 7 days.
	ExecutionTTL time.Duration
	// ChannelDedupe is how long the channel inbox remembers an item's id
	// after its acceptance, and again after Done, on the server's clock.
	// Default 24h; smaller values are raised to 24h, the least the
	// store.ChannelInbox contract allows.
	ChannelDedupe time.Duration
	// ChannelRetention is how long an accepted item waits to be marked
	// done before Redis drops it, so that items nobody processes do not
	// fill the server. Default 7 days; it is never shorter than
	// ChannelDedupe.
	ChannelRetention time.Duration
	// Client, when set, is used instead of a client made from URL; Close
	// leaves it open. Its retry settings are the caller's.
	Client redis.UniversalClient
}

func (o Options) withDefaults() Options {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.LockWait, DefaultLockWait)
	def(&o.LockTTL, DefaultLockTTL)
	def(&o.ConversationTTL, DefaultConversationTTL)
	def(&o.PendingGrace, DefaultPendingGrace)
	def(&o.ExecutionTTL, DefaultExecutionTTL)
	if o.InboxTTL < DefaultInboxTTL {
		o.InboxTTL = DefaultInboxTTL
	}
	def(&o.ChannelRetention, DefaultChannelRetention)
	if o.ChannelDedupe < DefaultChannelDedupe {
		o.ChannelDedupe = DefaultChannelDedupe
	}
	o.ChannelRetention = max(o.ChannelRetention, o.ChannelDedupe)
	return o
}

// FenceTTL is how long a fence counter is kept after the last grant of its
// key: MinFenceTTL or, if longer, the longest retention these options give
// the other records of a conversation. Parts of a conversation that state
// their own times may outlive it; a counter started again is still above
// every fence handed out before (see Fences), so that is safe.
func (o Options) FenceTTL() time.Duration {
	o = o.withDefaults()
	return max(MinFenceTTL, o.ConversationTTL, o.InboxTTL, o.PendingGrace, 2*o.LockTTL)
}

// Store is the Redis backend. All methods are safe for concurrent use.
type Store struct {
	opts      Options
	now       func() time.Time
	rdb       redis.UniversalClient
	ownClient bool
	fenceTTL  time.Duration

	// The scripts, per store so tests can swap one for a faulty variant.
	lockScript, extendScript, releaseScript   *redis.Script
	takeScript, completeScript, commitScript  *redis.Script
	channelAcceptScript, channelPendingScript *redis.Script
	channelDoneScript                         *redis.Script
	actionPutScript, actionUpdateScript       *redis.Script

	// queue is the timing of the lock queues; wake delivers their wake-up
	// messages (nil turns wake-ups off, leaving waiters to poll).
	queue queueTiming
	wake  *waker

	closed  atomic.Bool
	closing chan struct{}
	once    sync.Once
	// mu orders starting a lease's renewal or a Lock call against Close,
	// so that none starts once Close waits for them.
	mu      sync.Mutex
	keepers sync.WaitGroup // lease renewal goroutines
	lockers sync.WaitGroup // Lock calls
	// held maps a lock name to the lease this process holds on it, so a
	// turn's reads use what its grant found and its Commit can release it.
	held sync.Map
	// trips counts the requests sent on a client the store opened itself.
	trips roundTrips
}

// RoundTrips returns how many requests the store has sent to Redis — each
// command, script or pipeline one — when it opened its client from
// Options.URL; 0 for a client given in Options.Client.
func (s *Store) RoundTrips() int64 { return s.trips.n.Load() }

// roundTrips is a client hook counting requests.
type roundTrips struct{ n atomic.Int64 }

func (h *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmd)
	}
}

func (h *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmds)
	}
}

// Open connects to Redis, checks that it answers and loads the scripts. It
// fails with an error wrapping store.ErrUnavailable when the server cannot
// be reached; a malformed URL or a server that refuses the scripts (older
// than 7.0, or not permitted) is a plain error.
func Open(ctx context.Context, opts Options) (*Store, error) {
	opts = opts.withDefaults()
	s := &Store{
		opts:           opts,
		now:            opts.Now,
		rdb:            opts.Client,
		fenceTTL:       opts.FenceTTL(),
		lockScript:     redis.NewScript(lockSrc),
		extendScript:   redis.NewScript(extendSrc),
		releaseScript:  redis.NewScript(releaseSrc),
		takeScript:     redis.NewScript(takeSrc),
		completeScript: redis.NewScript(completeSrc),
		commitScript:   redis.NewScript(commitSrc),

		channelAcceptScript:  redis.NewScript(channelAcceptSrc),
		channelPendingScript: redis.NewScript(channelPendingSrc),
		channelDoneScript:    redis.NewScript(channelDoneSrc),
		actionPutScript:      redis.NewScript(actionPutSrc),
		actionUpdateScript:   redis.NewScript(actionUpdateSrc),
		queue:                defaultQueueTiming,
		closing:              make(chan struct{}),
	}
	where := "client"
	if s.rdb == nil {
		if opts.URL == "" {
			return nil, errors.New("open redis store: no URL and no Client")
		}
		where = redactURL(opts.URL)
		ro, err := redis.ParseURL(opts.URL)
		if err != nil {
			return nil, fmt.Errorf("open redis store %s: %w", where, err)
		}
		if !strings.Contains(opts.URL, "max_retries=") {
			ro.MaxRetries = -1
		}
		client := redis.NewClient(ro)
		client.AddHook(&s.trips)
		s.rdb, s.ownClient = client, true
	}
	s.wake = newWaker(s.rdb)
	if err := s.rdb.Ping(ctx).Err(); err != nil {
		s.closeClient()
		return nil, s.fail(ctx, "open redis store", where, err)
	}
	for _, sc := range []*redis.Script{s.lockScript, s.extendScript, s.releaseScript, s.takeScript, s.completeScript,
		s.commitScript, s.channelAcceptScript, s.channelPendingScript, s.channelDoneScript,
		s.actionPutScript, s.actionUpdateScript} {
		if err := sc.Load(ctx, s.rdb).Err(); err != nil {
			s.closeClient()
			return nil, s.fail(ctx, "open redis store: load script", where, err)
		}
	}
	return s, nil
}

// Close ends lease renewal (their Lost channels close, since nothing keeps
// them alive any more), wakes Lock waiters with ErrUnavailable and waits
// for them to leave their queues, closes the wake-up subscription and
// closes the client unless it was supplied in Options.Client. Locks still
// held expire after their TTL. Every later call fails with ErrUnavailable.
// Closing twice is harmless.
func (s *Store) Close() error {
	var err error
	s.once.Do(func() {
		s.mu.Lock()
		s.closed.Store(true)
		close(s.closing)
		s.mu.Unlock()
		s.keepers.Wait()
		s.lockers.Wait()
		if s.wake != nil {
			s.wake.close()
		}
		err = s.closeClient()
	})
	return err
}

func (s *Store) closeClient() error {
	if s.ownClient {
		return s.rdb.Close()
	}
	return nil
}

// redactURL hides a password in u for error messages.
func redactURL(u string) string {
	if p, err := url.Parse(u); err == nil {
		return p.Redacted()
	}
	return "(unparsable URL)"
}

// checkOpen returns ErrUnavailable once the store is closed, and ctx's
// error once it ended.
func (s *Store) checkOpen(ctx context.Context) error {
	if s.closed.Load() {
		return store.ErrUnavailable
	}
	return ctx.Err()
}

// fail wraps err with the operation and key. It adds store.ErrUnavailable
// when Redis could not serve the call, unless ctx ended, in which case the
// context's error is what the caller gets.
func (s *Store) fail(ctx context.Context, op string, key any, err error) error {
	switch {
	case errors.Is(err, store.ErrUnavailable):
		return fmt.Errorf("%s %v: %w", op, key, err)
	case ctx.Err() != nil && !errors.Is(err, ctx.Err()):
		return fmt.Errorf("%s %v: %w (%w)", op, key, ctx.Err(), err)
	case ctx.Err() != nil:
		return fmt.Errorf("%s %v: %w", op, key, err)
	case s.closed.Load() || unavailable(err):
		return fmt.Errorf("%s %v: %w: %w", op, key, store.ErrUnavailable, err)
	}
	return fmt.Errorf("%s %v: %w", op, key, err)
}

// unavailable reports whether err means the server could not serve the
// call: anything but an error reply, plus the replies of a server that is
// loading, read-only, out of memory, busy or without a quorum.
func unavailable(err error) bool {
	var re redis.Error
	if !errors.As(err, &re) {
		return true
	}
	msg := strings.TrimPrefix(re.Error(), "ERR ")
	for _, p := range []string{"LOADING", "READONLY", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN", "OOM", "BUSY", "NOREPLICAS", "MISCONF"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// tag returns the hash-tagged base of a key's Redis keys: P{name}, with
// '%', '{' and '}' escaped in name so the tag ends where it should and
// distinct names never share keys.
func (s *Store) tag(name string) string {
	var b strings.Builder
	b.Grow(len(s.opts.Prefix) + len(name) + 8)
	b.WriteString(s.opts.Prefix)
	b.WriteByte('{')
	for i := 0; i < len(name); i++ {
		switch c := name[i]; c {
		case '%':
			b.WriteString("%25")
		case '{':
			b.WriteString("%7B")
		case '}':
			b.WriteString("%7D")
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('}')
	return b.String()
}

// execKey is the key of the execution record of (tenant, idempotencyKey).
func (s *Store) execKey(tenant, idempotencyKey string) string {
	r := strings.NewReplacer("%", "%25", "/", "%2F")
	return s.opts.Prefix + "exec:" + r.Replace(tenant) + "/" + idempotencyKey
}

// pxArg renders d as whole milliseconds for PX, at least 1.
func pxArg(d time.Duration) int64 {
	return max(d.Milliseconds(), 1)
}

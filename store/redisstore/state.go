package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/store"
)

// LoadConversation returns the memory of key with the parts whose time has
// not passed on Options.Now (see store.Conversation), or ErrNotFound when
// there is none or every part ended.
// One round trip, none while this process holds the conversation's lock
// and has not written it since: the grant brought the memory along. Safe
// for concurrent use.
func (s *Store) LoadConversation(ctx context.Context, key chat.ConversationKey) (store.Conversation, error) {
	if err := s.checkOpen(ctx); err != nil {
		return store.Conversation{}, s.fail(ctx, "load conversation", key, err)
	}
	if l := s.heldLease(key.String()); l != nil {
		if snap, ok := l.snapshot(); ok {
			return s.decodeMemory(key, snap.memory, snap.hasMemory)
		}
	}
	v, err := s.rdb.Get(ctx, s.tag(key.String())+":mem").Result()
	switch {
	case errors.Is(err, redis.Nil):
		return s.decodeMemory(key, "", false)
	case err != nil:
		return store.Conversation{}, s.fail(ctx, "load conversation", key, err)
	}
	return s.decodeMemory(key, v, true)
}

// decodeMemory reads a P{T}:mem value ("<expiry µs>\n<memory>"): the
// compact form of store.AppendConversation, or JSON as written before it.
func (s *Store) decodeMemory(key chat.ConversationKey, v string, found bool) (store.Conversation, error) {
	if !found {
		return store.Conversation{}, fmt.Errorf("load conversation %s: %w", key, store.ErrNotFound)
	}
	exp, body, ok := strings.Cut(v, "\n")
	expires, err := strconv.ParseInt(exp, 10, 64)
	if !ok || err != nil {
		return store.Conversation{}, fmt.Errorf("load conversation %s: malformed memory record", key)
	}
	if expires < s.now().UnixMicro() {
		return store.Conversation{}, fmt.Errorf("load conversation %s: %w", key, store.ErrNotFound)
	}
	var c store.Conversation
	var def time.Time // none in a JSON record: its parts end with it
	if strings.HasPrefix(body, "{") {
		err = json.Unmarshal([]byte(body), &c)
	} else {
		c, def, err = store.DecodeConversation(body)
	}
	if err != nil {
		return store.Conversation{}, fmt.Errorf("load conversation %s: %w", key, err)
	}
	if !c.Prune(s.now(), def) {
		return store.Conversation{}, fmt.Errorf("load conversation %s: %w", key, store.ErrNotFound)
	}
	return c, nil
}

// GetPending returns the pending action of key, also after its ExpiresAt
// (for PendingGrace, on Options.Now), or ErrNotFound. One round trip, none
// while this process holds the conversation's lock and has not written it
// since. Safe for concurrent use.
func (s *Store) GetPending(ctx context.Context, key chat.ConversationKey) (store.PendingAction, error) {
	if err := s.checkOpen(ctx); err != nil {
		return store.PendingAction{}, s.fail(ctx, "get pending", key, err)
	}
	if l := s.heldLease(key.String()); l != nil {
		if snap, ok := l.snapshot(); ok {
			return s.decodePendingFields(key, snap.pendExp, snap.pending)
		}
	}
	vals, err := s.rdb.HMGet(ctx, s.tag(key.String())+":pend", "exp", "v").Result()
	if err != nil {
		return store.PendingAction{}, s.fail(ctx, "get pending", key, err)
	}
	exp, _ := vals[0].(string)
	body, _ := vals[1].(string)
	return s.decodePendingFields(key, exp, body)
}

// decodePendingFields reads the exp and v fields of P{T}:pend.
func (s *Store) decodePendingFields(key chat.ConversationKey, exp, body string) (store.PendingAction, error) {
	expires, err := strconv.ParseInt(exp, 10, 64)
	if body == "" || err != nil || expires < s.now().UnixMicro() {
		return store.PendingAction{}, fmt.Errorf("get pending %s: %w", key, store.ErrNotFound)
	}
	return decodePending(key, body)
}

// TakePending atomically removes and returns the pending action of key if
// its id is id and it is within its grace; otherwise ErrNotFound and
// nothing changes. Of concurrent takes exactly one succeeds. One round
// trip. Safe for concurrent use.
func (s *Store) TakePending(ctx context.Context, key chat.ConversationKey, id string) (store.PendingAction, error) {
	if err := s.checkOpen(ctx); err != nil {
		return store.PendingAction{}, s.fail(ctx, "take pending", key, err)
	}
	if id == "" {
		return store.PendingAction{}, fmt.Errorf("take pending %s: empty id: %w", key, store.ErrNotFound)
	}
	if l := s.heldLease(key.String()); l != nil {
		l.forget()
	}
	body, err := s.takeScript.Run(ctx, s.rdb, []string{s.tag(key.String()) + ":pend"}, id, s.now().UnixMicro()).Text()
	switch {
	case errors.Is(err, redis.Nil):
		return store.PendingAction{}, fmt.Errorf("take pending %s %s: %w", key, id, store.ErrNotFound)
	case err != nil:
		return store.PendingAction{}, s.fail(ctx, "take pending", key, err)
	}
	return decodePending(key, body)
}

func decodePending(key chat.ConversationKey, body string) (store.PendingAction, error) {
	var p store.PendingAction
	if err := json.Unmarshal([]byte(body), &p); err != nil {
		return store.PendingAction{}, fmt.Errorf("pending action of %s: %w", key, err)
	}
	p.Key = key
	if string(p.Args) == "null" {
		p.Args = nil // stored from a nil Args
	}
	return p, nil
}

// claimLine is the first line of an inbox record, written by the claim.
type claimLine struct {
	TurnID string    `json:"turn_id"`
	At     time.Time `json:"at"`
}

// ClaimMessage records messageID for key under turnID with SET NX (kept
// InboxTTL), or returns the record of an earlier claim (claimed=false),
// done with its reply once that turn committed. Of concurrent claims of one
// id exactly one is claimed=true. One round trip. Safe for concurrent use.
func (s *Store) ClaimMessage(ctx context.Context, key chat.ConversationKey, messageID, turnID string, now time.Time) (store.InboxRecord, bool, error) {
	if err := s.checkOpen(ctx); err != nil {
		return store.InboxRecord{}, false, s.fail(ctx, "claim message", key, err)
	}
	now = now.Round(0).UTC()
	line, err := json.Marshal(claimLine{TurnID: turnID, At: now})
	if err != nil {
		return store.InboxRecord{}, false, fmt.Errorf("claim message %s %s: %w", key, messageID, err)
	}
	old, err := s.rdb.SetArgs(ctx, s.tag(key.String())+":in:"+messageID, line,
		redis.SetArgs{Mode: "NX", Get: true, TTL: s.opts.InboxTTL}).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return store.InboxRecord{MessageID: messageID, TurnID: turnID, At: now}, true, nil
	case err != nil:
		return store.InboxRecord{}, false, s.fail(ctx, "claim message", key, err)
	}
	head, reply, done := strings.Cut(old, "\n")
	var cl claimLine
	if err := json.Unmarshal([]byte(head), &cl); err != nil {
		return store.InboxRecord{}, false, fmt.Errorf("claim message %s %s: malformed record: %w", key, messageID, err)
	}
	rec := store.InboxRecord{MessageID: messageID, TurnID: cl.TurnID, Done: done, At: cl.At}
	if reply != "" {
		rec.Reply = json.RawMessage(reply)
	}
	return rec, false, nil
}

// BeginExecution records rec as started with SET NX (kept ExecutionTTL)
// unless (tenant, idempotency key) exists, in which case it returns the
// stored record and fresh=false. StartedAt defaults to Options.Now. One
// round trip: a message claim is durable from ClaimMessage on, so
// rec.MessageID needs nothing more. Safe for concurrent use.
func (s *Store) BeginExecution(ctx context.Context, rec store.ExecutionRecord) (store.ExecutionRecord, bool, error) {
	name := rec.Tenant + "/" + rec.IdempotencyKey
	if err := s.checkOpen(ctx); err != nil {
		return store.ExecutionRecord{}, false, s.fail(ctx, "begin execution", name, err)
	}
	rec.State, rec.Result, rec.FinishedAt = store.ExecStarted, nil, time.Time{}
	if rec.StartedAt.IsZero() {
		rec.StartedAt = s.now()
	}
	rec.StartedAt = rec.StartedAt.Round(0).UTC()
	line, err := json.Marshal(rec)
	if err != nil {
		return store.ExecutionRecord{}, false, fmt.Errorf("begin execution %s: %w", name, err)
	}
	old, err := s.rdb.SetArgs(ctx, s.execKey(rec.Tenant, rec.IdempotencyKey), line,
		redis.SetArgs{Mode: "NX", Get: true, TTL: s.opts.ExecutionTTL}).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return rec, true, nil
	case err != nil:
		return store.ExecutionRecord{}, false, s.fail(ctx, "begin execution", name, err)
	}
	existing, err := decodeExecution(old)
	if err != nil {
		return store.ExecutionRecord{}, false, fmt.Errorf("begin execution %s: %w", name, err)
	}
	return existing, false, nil
}

// GetExecution returns the record of tenant's idempotency key, or
// ErrNotFound. One round trip. Safe for concurrent use.
func (s *Store) GetExecution(ctx context.Context, tenant, idempotencyKey string) (store.ExecutionRecord, error) {
	name := tenant + "/" + idempotencyKey
	if err := s.checkOpen(ctx); err != nil {
		return store.ExecutionRecord{}, s.fail(ctx, "get execution", name, err)
	}
	v, err := s.rdb.Get(ctx, s.execKey(tenant, idempotencyKey)).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return store.ExecutionRecord{}, fmt.Errorf("get execution %s: %w", name, store.ErrNotFound)
	case err != nil:
		return store.ExecutionRecord{}, s.fail(ctx, "get execution", name, err)
	}
	rec, err := decodeExecution(v)
	if err != nil {
		return store.ExecutionRecord{}, fmt.Errorf("get execution %s: %w", name, err)
	}
	return rec, nil
}

// decodeExecution parses an execution record: the record as begun, then,
// once finished, a line with the finish time and the result.
func decodeExecution(v string) (store.ExecutionRecord, error) {
	head, completion, done := strings.Cut(v, "\n")
	var rec store.ExecutionRecord
	if err := json.Unmarshal([]byte(head), &rec); err != nil {
		return rec, fmt.Errorf("malformed execution record: %w", err)
	}
	if done {
		at, result, _ := strings.Cut(completion, "\n")
		finished, err := time.Parse(time.RFC3339Nano, at)
		if err != nil {
			return rec, fmt.Errorf("malformed execution record: %w", err)
		}
		rec.State, rec.FinishedAt = store.ExecDone, finished
		if result != "" {
			rec.Result = json.RawMessage(result)
		}
	}
	return rec, nil
}

// FinishExecution marks the record done with its result (keeping its TTL),
// or returns ErrNotFound if no record was begun. One round trip. Safe for
// concurrent use.
func (s *Store) FinishExecution(ctx context.Context, tenant, idempotencyKey string, result json.RawMessage, at time.Time) error {
	name := tenant + "/" + idempotencyKey
	if err := s.checkOpen(ctx); err != nil {
		return s.fail(ctx, "finish execution", name, err)
	}
	completion := make([]byte, 0, len(time.RFC3339Nano)+1+len(result))
	completion = at.UTC().AppendFormat(completion, time.RFC3339Nano)
	completion = append(completion, '\n')
	completion = append(completion, result...)
	n, err := s.completeScript.Run(ctx, s.rdb, []string{s.execKey(tenant, idempotencyKey)}, completion).Int64()
	switch {
	case err != nil:
		return s.fail(ctx, "finish execution", name, err)
	case n == 0:
		return fmt.Errorf("finish execution %s: %w", name, store.ErrNotFound)
	}
	return nil
}

// ErrNotJournal is returned (wrapped) by Commit when the commit carries a
// turn record: this backend keeps no journal.
var ErrNotJournal = errors.New("redis store is not a journal; append the turn record to the journal backend")

// Commit applies a turn's changes in one script, atomically: memory (kept
// until the latest of its parts' times; a part without one ends
// ConversationTTL after its UpdatedAt, Options.Now when unset), the pending
// action (put or dropped; kept PendingGrace past its ExpiresAt) and the
// inbox completion. It fails with ErrFenced, writing nothing, when c.Fence
// is older than the newest grant of the lock c.Key.String() (a Fence of 0
// passes only while that key has no fence counter), with ErrNotJournal
// when c.Turn is set, and with ctx's error, writing nothing, when ctx has
// already ended. With c.Release, the same script releases this process's
// lease granted under c.Fence. One round trip. Safe for concurrent use.
func (s *Store) Commit(ctx context.Context, c store.Commit) error {
	if err := s.checkOpen(ctx); err != nil {
		return s.fail(ctx, "commit", c.Key, err)
	}
	if c.Turn != nil {
		return fmt.Errorf("commit %s: turn %s: %w", c.Key, c.Turn.TurnID, ErrNotJournal)
	}
	if p := c.PutPending; p != nil && p.Key != (chat.ConversationKey{}) && p.Key != c.Key {
		return fmt.Errorf("commit %s: pending action belongs to %s", c.Key, p.Key)
	}
	now := s.now()
	name := c.Key.String()
	tag := s.tag(name)
	keys := make([]string, 6, 7)
	keys[0], keys[1], keys[2] = tag+":fence", tag+":mem", tag+":pend"
	keys[3], keys[4], keys[5] = tag+":lock", tag+":queue", tag+":beat"
	args := make([]any, 13)
	args[0] = c.Fence
	args[1], args[2] = "", 0
	if conv := c.Conversation; conv != nil {
		updated := conv.UpdatedAt
		if updated.IsZero() {
			updated = now
		}
		def := updated.Add(s.opts.ConversationTTL)
		expires := conv.Expiry(def)
		mem := make([]byte, 0, 1024)
		mem = strconv.AppendInt(mem, expires.UnixMicro(), 10)
		mem = append(mem, '\n')
		args[1], args[2] = store.AppendConversation(mem, conv, def), pxArg(max(expires.Sub(now), 0)+expiryMargin)
	}
	args[3], args[4], args[5], args[6], args[7] = "", "", 0, "", 0
	switch {
	case c.PutPending != nil:
		p := *c.PutPending
		p.Key = c.Key
		base := p.ExpiresAt
		if base.IsZero() {
			base = now
		}
		expires := base.Add(s.opts.PendingGrace)
		body, err := json.Marshal(p)
		if err != nil {
			return fmt.Errorf("commit %s: encode pending action: %w", c.Key, err)
		}
		args[3], args[4], args[5], args[6] = "put", p.ID, expires.UnixMicro(), body
		args[7] = pxArg(max(expires.Sub(now), 0) + expiryMargin)
	case c.DropPending:
		args[3] = "drop"
	}
	args[8], args[9], args[10] = "", "", 0
	if c.MessageID != "" {
		keys = append(keys, tag+":in:"+c.MessageID)
		line, err := json.Marshal(claimLine{At: now.Round(0).UTC()})
		if err != nil {
			return fmt.Errorf("commit %s: %w", c.Key, err)
		}
		args[8], args[9], args[10] = []byte(c.Reply), line, pxArg(s.opts.InboxTTL)
	}
	args[11], args[12] = "", ""
	l := s.heldLease(name)
	if l != nil && l.fence == c.Fence {
		l.forget()
		if c.Release {
			args[11], args[12] = l.token, l.keys.channel
		}
	}
	n, err := s.commitScript.Run(ctx, s.rdb, keys, args...).Int64()
	switch {
	case err != nil:
		return s.fail(ctx, "commit", c.Key, err)
	case n == 0:
		return fmt.Errorf("commit %s: fence %d: %w", c.Key, c.Fence, store.ErrFenced)
	case n == 2:
		l.end(false) // released by the script: the holder's Release costs nothing
	}
	return nil
}

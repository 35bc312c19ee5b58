package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/arbiterhq/arbiter/store"
)

// Actions waiting for approval live under one hash tag per tenant, so the
// scripts that touch an action and the tenant's index run on a cluster:
//
//	P{<t>:actions}:a:<id>  hash  status, v (the Action JSON)
//	P{<t>:actions}:idx     zset  action ids scored by CreatedAt (µs)
//
// They are kept until deleted by an operator: an action is an audit record.

// actionPutSrc stores a new action and indexes it; 0 when the id exists.
//
//	KEYS[1] the action  KEYS[2] the index
//	ARGV[1] status      ARGV[2] JSON  ARGV[3] score  ARGV[4] id
const actionPutSrc = `#!lua
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'status', ARGV[1], 'v', ARGV[2])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[4])
return 1`

// actionUpdateSrc replaces the action if its status is ARGV[1]. Returns
// {1} on success, {0, JSON} when its status differs, {0} when absent.
//
//	KEYS[1] the action
//	ARGV[1] expected status  ARGV[2] new status  ARGV[3] new JSON
const actionUpdateSrc = `#!lua
local cur = redis.call('HGET', KEYS[1], 'status')
if not cur then return {0} end
if cur ~= ARGV[1] then return {0, redis.call('HGET', KEYS[1], 'v')} end
redis.call('HSET', KEYS[1], 'status', ARGV[2], 'v', ARGV[3])
return {1}`

var _ store.Actions = (*Store)(nil)

func (s *Store) actionKeys(tenant, id string) (action, index string) {
	base := s.tag(tenant + ":actions")
	return base + ":a:" + id, base + ":idx"
}

// PutAction stores a new action; an existing id is an error. One round
// trip.
func (s *Store) PutAction(ctx context.Context, a store.Action) error {
	if err := s.checkOpen(ctx); err != nil {
		return s.fail(ctx, "put action", a.ID, err)
	}
	body, err := json.Marshal(a)
	if err != nil {
		return fmt.Errorf("put action %s: %w", a.ID, err)
	}
	key, idx := s.actionKeys(a.Tenant, a.ID)
	n, err := s.actionPutScript.Run(ctx, s.rdb, []string{key, idx}, a.Status, body, a.CreatedAt.UnixMicro(), a.ID).Int()
	if err != nil {
		return s.fail(ctx, "put action", a.ID, err)
	}
	if n == 0 {
		return fmt.Errorf("put action %s/%s: the id exists", a.Tenant, a.ID)
	}
	return nil
}

// GetAction returns tenant's action id, or ErrNotFound. One round trip.
func (s *Store) GetAction(ctx context.Context, tenant, id string) (store.Action, error) {
	if err := s.checkOpen(ctx); err != nil {
		return store.Action{}, s.fail(ctx, "get action", id, err)
	}
	key, _ := s.actionKeys(tenant, id)
	body, err := s.rdb.HGet(ctx, key, "v").Result()
	switch {
	case errors.Is(err, redis.Nil):
		return store.Action{}, fmt.Errorf("get action %s/%s: %w", tenant, id, store.ErrNotFound)
	case err != nil:
		return store.Action{}, s.fail(ctx, "get action", id, err)
	}
	return decodeAction(body)
}

// ListActions returns tenant's actions with status (any when empty),
// newest first, at most limit, reading the index a page at a time.
func (s *Store) ListActions(ctx context.Context, tenant, status string, limit int) ([]store.Action, error) {
	if limit <= 0 {
		limit = 50
	}
	if err := s.checkOpen(ctx); err != nil {
		return nil, s.fail(ctx, "list actions", tenant, err)
	}
	_, idx := s.actionKeys(tenant, "")
	const page = 100
	var out []store.Action
	for start := int64(0); len(out) < limit; start += page {
		ids, err := s.rdb.ZRevRange(ctx, idx, start, start+page-1).Result()
		if err != nil {
			return nil, s.fail(ctx, "list actions", tenant, err)
		}
		if len(ids) == 0 {
			break
		}
		pipe := s.rdb.Pipeline()
		cmds := make([]*redis.SliceCmd, len(ids))
		for i, id := range ids {
			key, _ := s.actionKeys(tenant, id)
			cmds[i] = pipe.HMGet(ctx, key, "status", "v")
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, s.fail(ctx, "list actions", tenant, err)
		}
		for _, c := range cmds {
			vals := c.Val()
			st, _ := vals[0].(string)
			body, _ := vals[1].(string)
			if body == "" || (status != "" && st != status) {
				continue
			}
			a, err := decodeAction(body)
			if err != nil {
				return nil, err
			}
			if out = append(out, a); len(out) == limit {
				break
			}
		}
		if len(ids) < page {
			break
		}
	}
	return out, nil
}

// UpdateAction replaces the action if its stored status is still from.
// One round trip.
func (s *Store) UpdateAction(ctx context.Context, a store.Action, from string) (store.Action, error) {
	if err := s.checkOpen(ctx); err != nil {
		return store.Action{}, s.fail(ctx, "update action", a.ID, err)
	}
	body, err := json.Marshal(a)
	if err != nil {
		return store.Action{}, fmt.Errorf("update action %s: %w", a.ID, err)
	}
	key, _ := s.actionKeys(a.Tenant, a.ID)
	res, err := s.actionUpdateScript.Run(ctx, s.rdb, []string{key}, from, a.Status, body).Slice()
	if err != nil {
		return store.Action{}, s.fail(ctx, "update action", a.ID, err)
	}
	if ok, _ := res[0].(int64); ok == 1 {
		return a, nil
	}
	if len(res) < 2 {
		return store.Action{}, fmt.Errorf("update action %s/%s: %w", a.Tenant, a.ID, store.ErrNotFound)
	}
	body2, _ := res[1].(string)
	current, err := decodeAction(body2)
	if err != nil {
		return current, err
	}
	return current, fmt.Errorf("update action %s from %s: it is %s: %w", a.ID, from, current.Status, store.ErrConflict)
}

func decodeAction(body string) (store.Action, error) {
	var a store.Action
	if err := json.Unmarshal([]byte(body), &a); err != nil {
		return store.Action{}, fmt.Errorf("decode action: %w", err)
	}
	return a, nil
}

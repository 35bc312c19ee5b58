package redisstore

// The Lua scripts (see the package documentation for what each is for).
// The "#!lua" line makes them flagged scripts: Redis refuses to start one
// when it is out of memory instead of failing at its first write. Each
// checks everything before it writes, so a script either makes all of its
// changes or none. Numbers that reach Lua (fences, microseconds) stay below
// 2^53, where Lua's doubles are exact.

// lockSrc grants the lock to a token, first come, first served: a token
// is granted when the lock is free and nobody is queued, or when the lock
// is free and the token heads the queue. Otherwise the token is queued
// (with the next ticket, if it is not queued yet) and its heartbeat is set
// to the server's clock. Queue heads whose heartbeat is older than the
// staleness bound (at most 64 per call) are dropped first; a queued token
// that was dropped as stale is queued again at the end.
//
//	KEYS[1] P{T}:lock   KEYS[2] P{T}:fence   KEYS[3] P{T}:queue   KEYS[4] P{T}:beat
//	KEYS[5] P{T}:mem    KEYS[6] P{T}:pend
//	ARGV[1] token       ARGV[2] LockTTL ms    ARGV[3] FenceTTL ms
//	ARGV[4] staleness bound ms                ARGV[5] queue keys' PX ms
//	ARGV[6] wake-up channel ('' for none)
//
// Returns {1, fence, 0, memory, pending exp, pending JSON} when granted
// (also to a retried call whose token already holds the lock) — the
// conversation's state as the holder finds it, so a turn reads it without
// another round trip; absent values are nil — else {0, holder's PTTL ms or
// 0 when the lock is free, the token's place in the queue (0 for its
// head)}. When the lock is free but another token heads the queue, it
// publishes that token on the wake-up channel.
const lockSrc = `#!lua
local token = ARGV[1]
local holder = redis.call('GET', KEYS[1])
local function granted(fence)
  local p = redis.call('HMGET', KEYS[6], 'exp', 'v')
  return {1, fence, 0, redis.call('GET', KEYS[5]), p[1], p[2]}
end
if holder == token then
  return granted(tonumber(redis.call('GET', KEYS[2]) or '0'))
end

local function grant()
  redis.call('SET', KEYS[1], token, 'PX', ARGV[2])
  local fence
  if redis.call('EXISTS', KEYS[2]) == 1 then
    fence = redis.call('INCR', KEYS[2])
  else
    local t = redis.call('TIME')
    local start = t[1] .. string.format('%06d', tonumber(t[2]))
    redis.call('SET', KEYS[2], start)
    fence = tonumber(start)
  end
  redis.call('PEXPIRE', KEYS[2], ARGV[3])
  return fence
end

if not holder and redis.call('EXISTS', KEYS[3]) == 0 then
  return granted(grant())
end

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local bound = tonumber(ARGV[4])
-- The first live entry (the caller counts as live) and the stale ones
-- before it.
local head, dead, more = nil, {}, false
for i = 0, 63 do
  local h = redis.call('ZRANGE', KEYS[3], i, i)[1]
  if not h then
    break
  end
  local beat = tonumber(redis.call('HGET', KEYS[4], h))
  if h == token or (beat and now - beat <= bound) then
    head = h
    break
  end
  dead[#dead + 1] = h
  more = i == 63
end
local queued = redis.call('ZSCORE', KEYS[3], token)
local ticket
if not queued then
  local last = redis.call('ZRANGE', KEYS[3], -1, -1, 'WITHSCORES')
  ticket = (tonumber(last[2]) or 0) + 1
end

if #dead > 0 then
  redis.call('ZREM', KEYS[3], unpack(dead))
  redis.call('HDEL', KEYS[4], unpack(dead))
end
if not holder and (head == token or (not head and not more)) then
  if queued then
    redis.call('ZREM', KEYS[3], token)
    redis.call('HDEL', KEYS[4], token)
  end
  return granted(grant())
end
if not queued then
  redis.call('ZADD', KEYS[3], ticket, token)
end
redis.call('HSET', KEYS[4], token, now)
redis.call('PEXPIRE', KEYS[3], ARGV[5])
redis.call('PEXPIRE', KEYS[4], ARGV[5])
local place = redis.call('ZRANK', KEYS[3], token)
if holder then
  return {0, redis.call('PTTL', KEYS[1]), place}
end
if head and ARGV[6] ~= '' then
  redis.pcall('PUBLISH', ARGV[6], head)
end
return {0, 0, place}
`

// extendSrc renews the lock while the token holds it.
//
//	KEYS[1] P{T}:lock   ARGV[1] token   ARGV[2] LockTTL ms
//
// Returns 1 when renewed, 0 when the token no longer holds the lock.
const extendSrc = `#!lua
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
`

// releaseSrc deletes the lock only while the token holds it, and takes the
// token out of the queue. When the lock is free afterwards, it publishes
// the (new) head of the queue, if any, on the wake-up channel.
//
//	KEYS[1] P{T}:lock   KEYS[2] P{T}:queue   KEYS[3] P{T}:beat
//	ARGV[1] token       ARGV[2] wake-up channel ('' for none)
//
// Returns 1 when released, 0 when the token did not hold the lock.
const releaseSrc = `#!lua
` + releaseFunc + `
return release(KEYS[1], KEYS[2], KEYS[3], ARGV[1], ARGV[2])
`

// releaseFunc is the release, shared by releaseSrc and commitSrc.
const releaseFunc = `local function release(lock, queue, beat, token, channel)
  local holder = redis.call('GET', lock)
  local queued = redis.call('ZSCORE', queue, token)
  local heads = redis.call('ZRANGE', queue, 0, 1)
  local released = 0
  if holder == token then
    redis.call('DEL', lock)
    holder = false
    released = 1
  end
  if queued then
    redis.call('ZREM', queue, token)
    redis.call('HDEL', beat, token)
  end
  if not holder and channel ~= '' then
    local head = heads[1]
    if head == token then
      head = heads[2]
    end
    if head then
      redis.pcall('PUBLISH', channel, head)
    end
  end
  return released
end`

// takeSrc removes and returns the pending action if it has the given id
// and is within its grace.
//
//	KEYS[1] P{T}:pend   ARGV[1] id   ARGV[2] now µs
//
// Returns the action's JSON, or nil (changing nothing).
const takeSrc = `#!lua
local p = redis.call('HMGET', KEYS[1], 'id', 'exp', 'v')
if p[1] ~= ARGV[1] or not p[2] or tonumber(p[2]) < tonumber(ARGV[2]) then
  return false
end
redis.call('DEL', KEYS[1])
return p[3]
`

// completeSrc sets the completion of an execution record, keeping the
// record's first line (as begun) and its TTL.
//
//	KEYS[1] Pexec:<t>/<k>   ARGV[1] completion
//
// Returns 1, or 0 when there is no record.
const completeSrc = `#!lua
local rec = redis.call('GET', KEYS[1])
if not rec then
  return 0
end
local nl = string.find(rec, '\n', 1, true)
if nl then
  rec = string.sub(rec, 1, nl - 1)
end
redis.call('SET', KEYS[1], rec .. '\n' .. ARGV[1], 'KEEPTTL')
return 1
`

// commitSrc applies a turn's changes if its fence is not older than the
// newest grant of the conversation's lock.
//
//	KEYS[1] P{T}:fence   KEYS[2] P{T}:mem   KEYS[3] P{T}:pend
//	KEYS[4] P{T}:lock    KEYS[5] P{T}:queue KEYS[6] P{T}:beat
//	KEYS[7] P{T}:in:<msg> (only when a message is completed)
//	ARGV[1] fence
//	ARGV[2] memory value ('' keeps memory)      ARGV[3] its PX ms
//	ARGV[4] 'put', 'drop' or ''                 ARGV[5] pending id
//	ARGV[6] pending expiry µs                   ARGV[7] pending JSON
//	ARGV[8] pending PX ms
//	ARGV[9] reply        ARGV[10] claim line for an unclaimed message
//	ARGV[11] PX ms of a record created for an unclaimed message
//	ARGV[12] the lease's token to release with the commit ('' for none)
//	ARGV[13] wake-up channel ('' for none)
//
// Returns 1 when applied, 2 when applied and the lease released, 0 when
// fenced (nothing written, nothing released).
const commitSrc = `#!lua
` + releaseFunc + `
local newest = tonumber(redis.call('GET', KEYS[1]) or '0')
if tonumber(ARGV[1]) < newest then
  return 0
end
if ARGV[2] ~= '' then
  redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])
end
if ARGV[4] == 'put' then
  redis.call('DEL', KEYS[3])
  redis.call('HSET', KEYS[3], 'id', ARGV[5], 'exp', ARGV[6], 'v', ARGV[7])
  redis.call('PEXPIRE', KEYS[3], ARGV[8])
elseif ARGV[4] == 'drop' then
  redis.call('DEL', KEYS[3])
end
if KEYS[7] then
  local rec = redis.call('GET', KEYS[7])
  if rec then
    local nl = string.find(rec, '\n', 1, true)
    if nl then
      rec = string.sub(rec, 1, nl - 1)
    end
    redis.call('SET', KEYS[7], rec .. '\n' .. ARGV[9], 'KEEPTTL')
  else
    redis.call('SET', KEYS[7], ARGV[10] .. '\n' .. ARGV[9], 'PX', ARGV[11])
  end
end
if ARGV[12] ~= '' and release(KEYS[4], KEYS[5], KEYS[6], ARGV[12], ARGV[13]) == 1 then
  return 2
end
return 1
`

// channelAcceptSrc stores a channel item unless its id is remembered: its
// dedupe marker exists, or its item is still pending (a marker can expire
// before the item is processed, and then is set again).
//
//	KEYS[1] P{C}:ci:seen:<id>   KEYS[2] P{C}:ci:item:<id>
//	KEYS[3] P{C}:ci:pending     KEYS[4] P{C}:ci:seq
//	ARGV[1] id   ARGV[2] dedupe window ms   ARGV[3] order key
//	ARGV[4] accepted at (RFC 3339)   ARGV[5] payload   ARGV[6] retention ms
//
// Returns 1 when the item was stored, 0 for a duplicate (nothing of the
// stored item changes).
const channelAcceptSrc = `#!lua
local seen = redis.call('EXISTS', KEYS[1]) == 1
local open = redis.call('EXISTS', KEYS[2]) == 1
if seen then
  return 0
end
if open then
  redis.call('SET', KEYS[1], '1', 'PX', ARGV[2])
  return 0
end
local seq = redis.call('INCR', KEYS[4])
redis.call('SET', KEYS[1], '1', 'PX', ARGV[2])
redis.call('HSET', KEYS[2], 'order', ARGV[3], 'at', ARGV[4], 'payload', ARGV[5])
redis.call('PEXPIRE', KEYS[2], ARGV[6])
redis.call('ZADD', KEYS[3], seq, ARGV[1])
return 1
`

// channelPendingSrc reads the items of ids a ZRANGE of the pending set
// returned, and takes out of the set the ids whose item is gone (it ran
// out its retention; an item marked done in the meantime is out already).
//
//	KEYS[1] P{C}:ci:pending   KEYS[1+i] P{C}:ci:item:<ARGV[i]>
//	ARGV[i] the ids, in order
//
// Returns {id, order key, accepted at, payload} for every item found, one
// after another, in the order of ids.
const channelPendingSrc = `#!lua
local out, gone = {}, {}
for i, id in ipairs(ARGV) do
  local v = redis.call('HMGET', KEYS[i + 1], 'order', 'at', 'payload')
  if v[2] then
    out[#out + 1] = id
    out[#out + 1] = v[1] or ''
    out[#out + 1] = v[2]
    out[#out + 1] = v[3] or ''
  else
    gone[#gone + 1] = id
  end
end
for _, id in ipairs(gone) do
  redis.call('ZREM', KEYS[1], id)
end
return out
`

// channelDoneSrc marks a pending item done: out of the pending set, its
// item deleted, its dedupe marker set for another window. An id that is
// not pending changes nothing.
//
//	KEYS[1] P{C}:ci:pending   KEYS[2] P{C}:ci:item:<id>   KEYS[3] P{C}:ci:seen:<id>
//	ARGV[1] id   ARGV[2] dedupe window ms
//
// Returns 1 when the item was pending, else 0.
const channelDoneSrc = `#!lua
local open = redis.call('EXISTS', KEYS[2]) == 1
if not open and not redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  return 0
end
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('DEL', KEYS[2])
redis.call('SET', KEYS[3], '1', 'PX', ARGV[2])
return 1
`

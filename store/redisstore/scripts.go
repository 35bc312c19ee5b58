package redisstore

// The Lua scripts (see the package documentation for what each is for).
// The "#!lua" line makes them flagged scripts: Redis refuses to start one
// when it is out of memory instead of failing at its first write. Each
// checks everything before it writes, so a script either makes all of its
// changes or none. Numbers that reach Lua (fences, microseconds) stay below
// 2^53, where Lua's doubles are exact.

// lockSrc grants the lock to a token.
//
//	KEYS[1] P{T}:lock   KEYS[2] P{T}:fence
//	ARGV[1] token       ARGV[2] LockTTL ms    ARGV[3] FenceTTL ms
//
// Returns {1, fence} when granted (also to a retried call whose token
// already holds the lock), {0, holder's PTTL ms} otherwise.
const lockSrc = `#!lua
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then
  return {1, tonumber(redis.call('GET', KEYS[2]) or '0')}
end
if holder then
  return {0, redis.call('PTTL', KEYS[1])}
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
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
return {1, fence}
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

// releaseSrc deletes the lock only while the token holds it.
//
//	KEYS[1] P{T}:lock   ARGV[1] token
//
// Returns 1 when released, 0 when the token did not hold the lock.
const releaseSrc = `#!lua
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
`

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
//	KEYS[4] P{T}:in:<msg> (only when a message is completed)
//	ARGV[1] fence
//	ARGV[2] memory value ('' keeps memory)      ARGV[3] its PX ms
//	ARGV[4] 'put', 'drop' or ''                 ARGV[5] pending id
//	ARGV[6] pending expiry µs                   ARGV[7] pending JSON
//	ARGV[8] pending PX ms
//	ARGV[9] reply        ARGV[10] claim line for an unclaimed message
//	ARGV[11] PX ms of a record created for an unclaimed message
//
// Returns 1 when applied, 0 when fenced (nothing written).
const commitSrc = `#!lua
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
if KEYS[4] then
  local rec = redis.call('GET', KEYS[4])
  if rec then
    local nl = string.find(rec, '\n', 1, true)
    if nl then
      rec = string.sub(rec, 1, nl - 1)
    end
    redis.call('SET', KEYS[4], rec .. '\n' .. ARGV[9], 'KEEPTTL')
  else
    redis.call('SET', KEYS[4], ARGV[10] .. '\n' .. ARGV[9], 'PX', ARGV[11])
  end
end
return 1
`

"""The Lua scripts behind the Redis store's multi-step operations, each atomic on the server.

Times travel as decimal strings computed in Python and are stored as given: Lua's number
formatting keeps only 14 digits, which would drop the microseconds of an epoch time.
"""

from __future__ import annotations

# KEYS: slot | ARGV: slot JSON, ttl -> {stored JSON, 1 when created}
RESERVE = """
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'EX', ARGV[2]) then
  return {ARGV[1], 1}
end
return {redis.call('GET', KEYS[1]), 0}
"""

# KEYS: slot | ARGV: expected JSON, new JSON -> 1 swapped, 0 changed meanwhile, -1 missing
COMPARE_AND_SET = """
local current = redis.call('GET', KEYS[1])
if not current then return -1 end
if current ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'KEEPTTL')
return 1
"""

# KEYS: admission, cap, window, batches due
# ARGV: now, cap, threshold, batched (1/0), due of a new window, batch id of a new window,
#       batch key prefix, person, item clarification id, item JSON,
#       admission ttl, cap ttl, window ttl, batch ttl
# -> {decision JSON, 1 when replayed}
ADMIT = """
local adm, cap, win, due = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local now, cap_n, threshold = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local batched = ARGV[4] == '1'
local person, clar, item = ARGV[8], ARGV[9], ARGV[10]

local prior = redis.call('GET', adm)
if prior then return {prior, 1} end

local function decide(decision, batch_id, due_at)
  local doc = cjson.encode({decision = decision, batch_id = batch_id, due_at = due_at})
  redis.call('SET', adm, doc, 'EX', ARGV[11])
  return {doc, 0}
end

local function charge()
  if tonumber(redis.call('GET', cap) or '0') >= cap_n then return false end
  redis.call('INCR', cap)
  redis.call('EXPIRE', cap, ARGV[12])
  return true
end

if not batched then
  if charge() then return decide('direct') end
  return decide('capped')
end

-- start, due, direct count, charged (0/1), batch id
local w = redis.call('HMGET', win, 'start', 'due', 'direct', 'charged', 'batch')
local open = w[2] and tonumber(now) < tonumber(w[2])
if open and w[4] == '1' then
  -- a batch already claimed for sending (a replica with a late clock) takes no more items
  local bkey = ARGV[7] .. w[5]
  if redis.call('HEXISTS', bkey, 'due') == 0 or redis.call('HEXISTS', bkey, 'claimed') == 1 then
    open = false
  end
end
if not open then
  redis.call('DEL', win)
  redis.call('HSET', win, 'start', now, 'due', ARGV[5], 'direct', 0, 'charged', 0,
             'batch', ARGV[6])
  redis.call('EXPIRE', win, ARGV[13])
  w = {now, ARGV[5], '0', '0', ARGV[6]}
end

if tonumber(w[3]) < threshold then
  if not charge() then return decide('capped') end
  redis.call('HINCRBY', win, 'direct', 1)
  return decide('direct')
end

local bkey = ARGV[7] .. w[5]
if w[4] ~= '1' then
  -- the whole digest costs one unit, charged when its first item joins
  if not charge() then return decide('capped') end
  redis.call('HSET', win, 'charged', 1)
  redis.call('HSET', bkey, 'person', person, 'due', w[2], 'n', 0)
  redis.call('EXPIRE', bkey, ARGV[14])
  redis.call('ZADD', due, w[2], w[5])
end
if redis.call('HEXISTS', bkey, 'i:' .. clar) == 0 then
  local seq = redis.call('HINCRBY', bkey, 'n', 1)
  redis.call('HSET', bkey, 'i:' .. clar, seq .. '|' .. item)
end
return decide('digested', w[5], w[2])
"""

# KEYS: batch, batches due | ARGV: batch id, now, lease end -> batch hash (flat) or nil
CLAIM_BATCH = """
local score = redis.call('ZSCORE', KEYS[2], ARGV[1])
if not score or tonumber(score) > tonumber(ARGV[2]) then return false end
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('ZREM', KEYS[2], ARGV[1])
  return false
end
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
redis.call('HSET', KEYS[1], 'claimed', 1)
return redis.call('HGETALL', KEYS[1])
"""

# KEYS: entries, due | ARGV: entry id, entry JSON, now -> 1 added, 0 duplicate
OUTBOX_PUT = """
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 0 then return 0 end
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
return 1
"""

# KEYS: due, entries, attempts | ARGV: now, lease end, limit -> flat {id, JSON, attempts, ...}
OUTBOX_CLAIM = """
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[3])
local out = {}
for _, id in ipairs(ids) do
  local doc = redis.call('HGET', KEYS[2], id)
  if doc then
    local attempts = redis.call('HINCRBY', KEYS[3], id, 1)
    redis.call('ZADD', KEYS[1], ARGV[2], id)
    table.insert(out, id)
    table.insert(out, doc)
    table.insert(out, attempts)
  else
    redis.call('ZREM', KEYS[1], id)
  end
end
return out
"""


# KEYS: bucket | ARGV: rate per second, burst, now, ttl, block seconds (0: take one token)
# -> seconds to wait before the taken token may be used ("0" when now); a token bucket that lets
#    callers go into debt, so that concurrent callers across replicas queue up fairly
RATE_TAKE = """
local t = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local rate, burst, now = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local tokens = tonumber(t[1]) or burst
local at = tonumber(t[2]) or now
if now > at then
  tokens = math.min(burst, tokens + (now - at) * rate)
  at = now
end
local block = tonumber(ARGV[5])
if block > 0 then
  tokens = math.min(tokens, -block * rate)
else
  tokens = tokens - 1
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(at))
redis.call('EXPIRE', KEYS[1], ARGV[4])
if tokens >= 0 then return '0' end
return tostring(-tokens / rate)
"""

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

# KEYS: slot, cards of the clarification | ARGV: state the slot must be in, its worker, new slot
#   JSON, card field, card JSON, cards ttl -> 1 recorded, 0 the slot changed meanwhile, -1 missing
# A sent card's slot and its place among the clarification's cards, in one round trip.
RECORD_SENT = """
local current = redis.call('SET', KEYS[1], ARGV[3], 'XX', 'KEEPTTL', 'GET')
if not current then return -1 end
local slot = cjson.decode(current)
if slot.state ~= ARGV[1] or slot.worker_id ~= ARGV[2] then
  redis.call('SET', KEYS[1], current, 'XX', 'KEEPTTL')  -- not as reserved: put it back
  return 0
end
redis.call('HSET', KEYS[2], ARGV[4], ARGV[5])
redis.call('EXPIRE', KEYS[2], ARGV[6])
return 1
"""

# KEYS: admission, cap, window, batches due, delivery slot
# ARGV: now, cap, threshold, batched (1/0), due of a new window, batch id of a new window,
#       batch key prefix, person, item clarification id, item JSON,
#       admission ttl, cap ttl, window ttl, batch ttl, slot JSON to reserve ('' for none)
# -> {decision JSON, 1 when replayed[, slot JSON, 1 when the reservation was made]}
#    a fresh DIRECT decision reserves the slot as RESERVE does, in the same round trip
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
  if decision == 'direct' and ARGV[15] ~= '' then
    if redis.call('SET', KEYS[5], ARGV[15], 'NX', 'EX', ARGV[14]) then
      return {doc, 0, ARGV[15], 1}
    end
    return {doc, 0, redis.call('GET', KEYS[5]), 0}
  end
  return {doc, 0}
end

local function charge()
  -- counted first and given back when over: one command for the usual card, not three
  local used = redis.call('INCR', cap)
  if used == 1 then redis.call('EXPIRE', cap, ARGV[12]) end
  if used > cap_n then
    redis.call('DECR', cap)
    return false
  end
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
  if w[1] then redis.call('DEL', win) end
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

# KEYS: entries, due, order | ARGV: entry id, entry JSON, now, action time (µs), order ttl
# -> 'queued', 'duplicate' or 'stale'. Durable and ordered in one step, before the acknowledgement:
#    the order hash keeps the latest action time accepted ('seen') and the last entry settled
#    ('settled' and 'settled_id'; a form submission's time is whole seconds, so two different
#    submissions may share one).
OUTBOX_ACCEPT = """
local acted = tonumber(ARGV[4])
local o = redis.call('HMGET', KEYS[3], 'seen', 'settled', 'settled_id')
if o[1] and acted < tonumber(o[1]) then return 'stale' end
if o[3] == ARGV[1] and o[2] and acted <= tonumber(o[2]) then return 'duplicate' end
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 0 then return 'duplicate' end
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
if not o[1] or acted > tonumber(o[1]) then redis.call('HSET', KEYS[3], 'seen', ARGV[4]) end
redis.call('EXPIRE', KEYS[3], ARGV[5])
return 'queued'
"""

# An order key's lease is "<lease end> <entry id>": held while the end is after the caller's now
# (the caller's clock, like every due time here); Redis's own expiry only collects leftovers.
_HOLDER = """
local function holder(lease, now)
  local held = redis.call('GET', lease)
  if not held then return nil end
  local space = string.find(held, ' ', 1, true)
  if not space or tonumber(string.sub(held, 1, space - 1)) <= tonumber(now) then return nil end
  return string.sub(held, space + 1)
end
"""

# KEYS: due, entries, attempts, failures
# ARGV: now, lease end, leftover expiry (s), limit, how many due ids to look at, order prefix,
#       order lease prefix, only this entry id ('' for any), when to look again at a held key's
# -> flat {id, JSON, attempts, failures, stale (1/0), ...}
# One entry per order key, and none whose key is held: one person's answers to one clarification
# are forwarded one at a time, in order, whichever consumer or replica claims them.
OUTBOX_CLAIM = _HOLDER + """
local ids
if ARGV[8] ~= '' then
  local score = redis.call('ZSCORE', KEYS[1], ARGV[8])
  if not score or tonumber(score) > tonumber(ARGV[1]) then return {} end
  ids = {ARGV[8]}
else
  ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[5])
end
local out, taken, n = {}, {}, 0
for _, id in ipairs(ids) do
  if n >= tonumber(ARGV[4]) then break end
  local doc = redis.call('HGET', KEYS[2], id)
  if not doc then
    redis.call('ZREM', KEYS[1], id)
  else
    local ok, meta = pcall(cjson.decode, doc)
    if not ok or type(meta) ~= 'table' then meta = {} end
    local key = type(meta.key) == 'string' and meta.key or id
    local acted = tonumber(meta.acted) or 0
    local lease = ARGV[7] .. key
    if taken[key] or holder(lease, ARGV[1]) then
      redis.call('ZADD', KEYS[1], ARGV[9], id)
    else
      taken[key] = true
      n = n + 1
      redis.call('SET', lease, ARGV[2] .. ' ' .. id, 'EX', ARGV[3])
      redis.call('ZADD', KEYS[1], ARGV[2], id)
      local seen = tonumber(redis.call('HGET', ARGV[6] .. key, 'seen') or '0')
      table.insert(out, id)
      table.insert(out, doc)
      table.insert(out, redis.call('HINCRBY', KEYS[3], id, 1))
      table.insert(out, tonumber(redis.call('HGET', KEYS[4], id) or '0'))
      table.insert(out, acted < seen and 1 or 0)
    end
  end
end
return out
"""

# Frees an order key held by the entry ARGV[1] (KEYS[n] its lease).
_RELEASE = """
local function release(lease, id)
  local held = redis.call('GET', lease)
  if held and string.sub(held, (string.find(held, ' ', 1, true) or 0) + 1) == id then
    redis.call('DEL', lease)
  end
end
"""

# KEYS: due, failures, order lease | ARGV: entry id, when, failed (1/0)
OUTBOX_RETRY = _RELEASE + """
redis.call('ZADD', KEYS[1], 'XX', ARGV[2], ARGV[1])
if ARGV[3] == '1' and redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  redis.call('HINCRBY', KEYS[2], ARGV[1], 1)
end
release(KEYS[3], ARGV[1])
"""

# KEYS: entries, due, attempts, failures, order, order lease | ARGV: entry id, action time, ttl
OUTBOX_DONE = _RELEASE + """
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[1])
redis.call('HDEL', KEYS[4], ARGV[1])
local settled = redis.call('HGET', KEYS[5], 'settled')
if not settled or tonumber(ARGV[2]) >= tonumber(settled) then
  redis.call('HSET', KEYS[5], 'settled', ARGV[2], 'settled_id', ARGV[1])
  redis.call('EXPIRE', KEYS[5], ARGV[3])
end
release(KEYS[6], ARGV[1])
"""

# KEYS: entries, due, attempts, failures, parked, order lease
# ARGV: entry id, reason, parked at -> 1 parked, 0 gone already
OUTBOX_PARK = _RELEASE + """
release(KEYS[6], ARGV[1])
local doc = redis.call('HGET', KEYS[1], ARGV[1])
if not doc then return 0 end
redis.call('HSET', KEYS[5], ARGV[1], cjson.encode({
  entry = doc, reason = ARGV[2], parked_at = ARGV[3],
  attempts = redis.call('HGET', KEYS[3], ARGV[1]),
  failures = redis.call('HGET', KEYS[4], ARGV[1])}))
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[1])
redis.call('HDEL', KEYS[4], ARGV[1])
return 1
"""


# KEYS: bucket | ARGV: rate per second, burst, now, ttl, block seconds (0: take one token),
#   reserve (tokens the take must leave; 0: none)
# -> seconds to wait before the taken token may be used ("0" when now); a token bucket that lets
#    callers go into debt, so that concurrent callers across replicas queue up fairly. With a
#    reserve (bulk work) nothing is taken while fewer than reserve + 1 tokens are there: the
#    answer is how long until there will be, and the caller asks again then.
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
local reserve = tonumber(ARGV[6]) or 0
if block <= 0 and reserve > 0 and tokens - 1 < reserve then
  return tostring((reserve + 1 - tokens) / rate)
end
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


# KEYS: bucket | ARGV: rate per second, burst, now, ttl
# -> "0": admitted, one token taken; else seconds until there is a token (nothing taken): the
#    per-person abuse limit (bot.limits), which refuses rather than queues
LIMIT_ADMIT = """
local t = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local rate, burst, now = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local tokens = tonumber(t[1]) or burst
local at = tonumber(t[2]) or now
if now > at then
  tokens = math.min(burst, tokens + (now - at) * rate)
  at = now
end
if tokens < 1 then return tostring((1 - tokens) / rate) end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens - 1), 'at', tostring(at))
redis.call('EXPIRE', KEYS[1], ARGV[4])
return '0'
"""

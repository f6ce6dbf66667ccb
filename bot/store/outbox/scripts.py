"""The outbox's Lua scripts, each atomic on the server over the ``{outbox}`` hash tag's keys.

Times travel as decimal strings computed in Python and are stored as given: Lua's number
formatting keeps only 14 digits, which would drop the microseconds of an epoch time.
"""

from __future__ import annotations

# Every outbox script's keys share the {outbox} hash tag. The "keys" hash holds, per order key
# with entries waiting, "<latest action accepted> <entries waiting>"; the order hash (one per
# key, kept ORDER_TTL after its last entry settled) holds the latest action, the last entry
# settled ('seen', 'settled', 'settled_id') and one field 'd:<entry id>' per entry settled
# or parked ("<action time> <answer>[ p]", ``bot.store.stream.settled_mark``; '1' before
# answers were kept), so that a platform's retry or replay of any of them is a duplicate, never
# a second forward, and a late repeat of a forwarded answer is known as one. The "queue" hash
# holds, per order key with entries waiting, its entries in the order the person acted (a JSON
# list of [action time, entry id]): a claim takes only a key's first.
_KEYS = """
local function waiting(keys, key)
  local v = redis.call('HGET', keys, key)
  if not v then return nil, 0 end
  local space = string.find(v, ' ', 1, true)
  return string.sub(v, 1, space - 1), tonumber(string.sub(v, space + 1))
end
local function later(a, b)  -- the later of two action times kept as strings (nil: none)
  if not a then return b end
  if not b then return a end
  if tonumber(b) > tonumber(a) then return b end
  return a
end
local function q_get(queue, key)
  local raw = redis.call('HGET', queue, key)
  if not raw then return {} end
  local ok, list = pcall(cjson.decode, raw)
  if not ok or type(list) ~= 'table' then return {} end
  return list
end
local function q_put(queue, key, list)
  if #list == 0 then redis.call('HDEL', queue, key)
  else redis.call('HSET', queue, key, cjson.encode(list)) end
end
local function q_before(a_acted, a_id, b_acted, b_id)
  local a, b = tonumber(a_acted), tonumber(b_acted)
  return a < b or (a == b and a_id < b_id)
end
local function q_add(queue, key, acted, id)
  local list = q_get(queue, key)
  local pos = #list + 1
  for i, e in ipairs(list) do
    if q_before(acted, id, e[1], e[2]) then pos = i break end
  end
  table.insert(list, pos, {acted, id})
  q_put(queue, key, list)
end
local function q_remove(queue, key, id)
  local list, kept = q_get(queue, key), {}
  for _, e in ipairs(list) do
    if e[2] ~= id then table.insert(kept, e) end
  end
  q_put(queue, key, kept)
end
"""

# KEYS: entries, due, order, keys, queue | ARGV: entry id, entry JSON, now, action time (µs),
#   order key, most entries waiting -> 'queued', 'duplicate' or 'full'. Durable and ordered in
#   one step, before the acknowledgement; a full outbox takes nothing new (the caller refuses).
#   An action older than one accepted before is queued too, in its place in the person's order.
OUTBOX_ACCEPT = _KEYS + """
local acted = tonumber(ARGV[4])
if redis.call('HEXISTS', KEYS[3], 'd:' .. ARGV[1]) == 1 then return 'duplicate' end
local o = redis.call('HMGET', KEYS[3], 'seen', 'settled', 'settled_id')
local seen, n = waiting(KEYS[4], ARGV[5])
seen = later(o[1], seen)
if o[3] == ARGV[1] and o[2] and acted <= tonumber(o[2]) then return 'duplicate' end
if redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[6]) then
  if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then return 'duplicate' end
  return 'full'
end
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 0 then return 'duplicate' end
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
redis.call('HSET', KEYS[4], ARGV[5], later(seen, ARGV[4]) .. ' ' .. (n + 1))
q_add(KEYS[5], ARGV[5], ARGV[4], ARGV[1])
return 'queued'
"""

# An order key's lease is "<lease end> <entry id>" in the leases hash: held while the end is
# after the caller's now (the caller's clock, like every due time here).
_HOLDER = """
local function holder(leases, key, now)
  local held = redis.call('HGET', leases, key)
  if not held then return nil end
  local space = string.find(held, ' ', 1, true)
  if not space or tonumber(string.sub(held, 1, space - 1)) <= tonumber(now) then return nil end
  return string.sub(held, space + 1)
end
"""

# KEYS: due, entries, attempts, failures, keys, leases, queue
# ARGV: now, lease end, limit, how many due ids to look at, only this entry id ('' for any),
#       when to look again at a held key's entry
# -> flat {id, JSON, attempts, failures, superseded (1/0), ...}
# One entry per order key, none whose key is held, and only a key's first entry in the person's
# order: one person's answers to one clarification are forwarded one at a time, in the order
# they were given, whichever consumer or replica claims them. An entry behind its key's first
# waits until that one is due (a first entry in backoff holds the ones after it back).
# "superseded": a later action of the same key was accepted (it waits, or was forwarded).
OUTBOX_CLAIM = _HOLDER + _KEYS + """
local ids
if ARGV[5] ~= '' then
  local score = redis.call('ZSCORE', KEYS[1], ARGV[5])
  if not score or tonumber(score) > tonumber(ARGV[1]) then return {} end
  ids = {ARGV[5]}
else
  ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[4])
end
local out, taken, n = {}, {}, 0
for _, id in ipairs(ids) do
  if n >= tonumber(ARGV[3]) then break end
  local doc = redis.call('HGET', KEYS[2], id)
  if not doc then
    redis.call('ZREM', KEYS[1], id)
  else
    local ok, meta = pcall(cjson.decode, doc)
    if not ok or type(meta) ~= 'table' then meta = {} end
    local key = type(meta.key) == 'string' and meta.key or id
    local acted = tonumber(meta.acted) or 0
    -- the key's first entry in the person's order (an entry older than the queue: its own)
    local first, queued = nil, false
    for i, e in ipairs(q_get(KEYS[7], key)) do
      if e[2] == id then queued = true end
      if not first and redis.call('HEXISTS', KEYS[2], e[2]) == 1 then first = e[2] end
    end
    if queued and first ~= id then
      -- looked at again once the first may be done: soon while it is being forwarded, else
      -- when it falls due
      local at = tonumber(ARGV[6])
      if not holder(KEYS[6], key, ARGV[1]) then
        at = math.max(at, tonumber(redis.call('ZSCORE', KEYS[1], first) or ARGV[6]))
      end
      if ARGV[5] == '' then redis.call('ZADD', KEYS[1], at, id) end
    elseif taken[key] or holder(KEYS[6], key, ARGV[1]) then
      redis.call('ZADD', KEYS[1], ARGV[6], id)
    else
      taken[key] = true
      n = n + 1
      redis.call('HSET', KEYS[6], key, ARGV[2] .. ' ' .. id)
      redis.call('ZADD', KEYS[1], ARGV[2], id)
      local seen = waiting(KEYS[5], key)
      table.insert(out, id)
      table.insert(out, doc)
      table.insert(out, redis.call('HINCRBY', KEYS[3], id, 1))
      table.insert(out, tonumber(redis.call('HGET', KEYS[4], id) or '0'))
      table.insert(out, acted < tonumber(seen or '0') and 1 or 0)
    end
  end
end
return out
"""

# Frees an order key held by the entry ``id``.
_RELEASE = """
local function release(leases, key, id)
  local held = redis.call('HGET', leases, key)
  if held and string.sub(held, (string.find(held, ' ', 1, true) or 0) + 1) == id then
    redis.call('HDEL', leases, key)
  end
end
"""

# One entry of ``key`` waits no more: count it off and take it out of the key's queue; with none
# left, its latest action moves to the order hash (which then lasts ``ttl``). The entry's id
# stays in the order hash with ``mark`` (its action time and answer, and whether it was
# parked), so that a replay of it is a duplicate.
_SETTLE = _KEYS + """
local function gone(keys, order, queue, key, id, ttl, now, due, entries, mark)
  q_remove(queue, key, id)
  if now and now ~= '' then  -- the key's next entry in the person's order is due at once
    for _, e in ipairs(q_get(queue, key)) do
      if redis.call('HEXISTS', entries, e[2]) == 1 then
        local at = redis.call('ZSCORE', due, e[2])
        if at and tonumber(at) > tonumber(now) then redis.call('ZADD', due, 'XX', now, e[2]) end
        break
      end
    end
  end
  redis.call('HSET', order, 'd:' .. id, mark)
  redis.call('EXPIRE', order, ttl)
  local seen, n = waiting(keys, key)
  if not seen then return end
  if n > 1 then
    redis.call('HSET', keys, key, seen .. ' ' .. (n - 1))
    return
  end
  redis.call('HDEL', keys, key)
  redis.call('HSET', order, 'seen', later(redis.call('HGET', order, 'seen'), seen))
end
"""

# KEYS: due, failures, leases | ARGV: entry id, when, failed (1/0), order key
OUTBOX_RETRY = _RELEASE + """
redis.call('ZADD', KEYS[1], 'XX', ARGV[2], ARGV[1])
if ARGV[3] == '1' and redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  redis.call('HINCRBY', KEYS[2], ARGV[1], 1)
end
release(KEYS[3], ARGV[4], ARGV[1])
"""

# KEYS: entries, due, attempts, failures, order, keys, leases, queue
# ARGV: entry id, action time, order ttl, order key, now ('' : none), settled mark
OUTBOX_DONE = _RELEASE + _SETTLE + """
release(KEYS[7], ARGV[4], ARGV[1])
local held = redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[1])
redis.call('HDEL', KEYS[4], ARGV[1])
local settled = redis.call('HGET', KEYS[5], 'settled')
if not settled or tonumber(ARGV[2]) >= tonumber(settled) then
  redis.call('HSET', KEYS[5], 'settled', ARGV[2], 'settled_id', ARGV[1])
  redis.call('EXPIRE', KEYS[5], ARGV[3])
end
if held == 1 then
  gone(KEYS[6], KEYS[5], KEYS[8], ARGV[4], ARGV[1], ARGV[3], ARGV[5], KEYS[2], KEYS[1], ARGV[6])
end
"""

# KEYS: entries, due, attempts, failures, parked, order, keys, leases, queue
# ARGV: entry id, reason, parked at, order key, order ttl, settled mark -> 1 parked, 0 gone
#   already
OUTBOX_PARK = _RELEASE + _SETTLE + """
release(KEYS[8], ARGV[4], ARGV[1])
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
gone(KEYS[7], KEYS[6], KEYS[9], ARGV[4], ARGV[1], ARGV[5], ARGV[3], KEYS[2], KEYS[1], ARGV[6])
return 1
"""

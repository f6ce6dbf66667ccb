"""Moving a Redis written by an earlier release into the key layout of ``bot.store.keys``.

The first releases wrote one server only, with keys untagged: ``<prefix>:slot:<token>``,
``<prefix>:adm:<token>``, ``<prefix>:cap:<day>:<person>``, ``<prefix>:win:<person>``,
``<prefix>:batch:<batch id>``, ``<prefix>:outbox:<name>``, ``<prefix>:order:<key>`` and
``<prefix>:order-lease:<key>``. The release after them tagged the per-person keys for Redis
Cluster (``<prefix>:slot:{p:<person>}:<token>``, ``adm:{p:..}:<token>``, ``cap:{p:..}:<day>``,
``win:{p:..}``). Today one person's slots, admissions, cap counters and window are fields of one
hash (``Keys.person``). The store runs this once per process before its first command on a
single server: answers waiting in the old outbox move into the new one (none is lost),
reservations, admissions, caps, windows and batches of either earlier layout keep their meaning
(the person's hash lives at least as long as the longest TTL moved into it), the old order
leases are dropped (their entries are claimed again). Each step is atomic and idempotent, so
processes starting together may all run it. Workers of an earlier release must be stopped before
the first new one starts (docs/operations.md, "Upgrading"): what they write after the move is
not seen.
The outbox's move is one script that names the old keys it reads: it runs on a single server,
never on a cluster.
"""

from __future__ import annotations

import time

import redis.asyncio as aioredis

from bot.store import codec
from bot.store import keys as k

# KEYS: old entries, attempts, due, failures, parked, then the new ones, then the new keys hash
# ARGV: the old order prefix -> entries moved
_MOVE_OUTBOX = """
local moved = 0
for i = 1, 5 do
  local old, new = KEYS[i], KEYS[i + 5]
  if redis.call('TYPE', old).ok == 'zset' then
    local all = redis.call('ZRANGE', old, 0, -1, 'WITHSCORES')
    for j = 1, #all, 2 do redis.call('ZADD', new, 'NX', all[j + 1], all[j]) end
  else
    local all = redis.call('HGETALL', old)
    for j = 1, #all, 2 do
      if redis.call('HSETNX', new, all[j], all[j + 1]) == 1 and i == 1 then
        moved = moved + 1
        local ok, meta = pcall(cjson.decode, all[j + 1])
        local key = (ok and type(meta) == 'table' and type(meta.key) == 'string') and meta.key
                    or all[j]
        local seen = redis.call('HGET', ARGV[1] .. key, 'seen') or '0'
        local v = redis.call('HGET', KEYS[11], key)
        local n = v and tonumber(string.sub(v, string.find(v, ' ', 1, true) + 1)) or 0
        redis.call('HSET', KEYS[11], key, seen .. ' ' .. (n + 1))
      end
    end
  end
  redis.call('DEL', old)
end
return moved
"""

# KEYS: an old batch hash, the person's new digest hash
# ARGV: the batch's window start (ms), the digest ttl
_MOVE_BATCH = """
local all = redis.call('HGETALL', KEYS[1])
for j = 1, #all, 2 do
  if all[j] ~= 'person' then redis.call('HSET', KEYS[2], ARGV[1] .. ':' .. all[j], all[j + 1]) end
end
if #all > 0 then redis.call('EXPIRE', KEYS[2], ARGV[2]) end
redis.call('DEL', KEYS[1])
"""


# the tail every move into a person's hash ends with: the old key goes, the hash lives at least
# as long as ARGV[1] seconds
_HASH_TTL = """
redis.call('DEL', KEYS[1])
if redis.call('TTL', KEYS[2]) < tonumber(ARGV[1]) then redis.call('EXPIRE', KEYS[2], ARGV[1]) end
return 1
"""

# KEYS: an old slot or admission key, the person's hash | ARGV: hash ttl, field, the time to
# stamp an admission with ('' for a slot: its reservation time says when it expires)
_MOVE_FIELD = """
local v = redis.call('GET', KEYS[1])
if not v then return 0 end
if ARGV[3] ~= '' then
  local ok, doc = pcall(cjson.decode, v)
  if ok and type(doc) == 'table' then
    doc.at = ARGV[3]
    v = cjson.encode(doc)
  end
end
redis.call('HSETNX', KEYS[2], ARGV[2], v)
""" + _HASH_TTL

# KEYS: an old cap counter, the person's hash | ARGV: hash ttl, its day: the latest two days kept
_MOVE_CAP = """
local v = redis.call('GET', KEYS[1])
if not v then return 0 end
local function day_of(c) return c and string.sub(c, 1, (string.find(c, ' ', 1, true) or 1) - 1) end
local new, c, c0 = ARGV[2] .. ' ' .. v, redis.call('HGET', KEYS[2], 'c'), nil
if not c then
  redis.call('HSET', KEYS[2], 'c', new)
elseif day_of(c) < ARGV[2] then
  redis.call('HSET', KEYS[2], 'c', new, 'c0', c)
elseif day_of(c) > ARGV[2] then
  c0 = redis.call('HGET', KEYS[2], 'c0')
  if not c0 or day_of(c0) < ARGV[2] then redis.call('HSET', KEYS[2], 'c0', new) end
end
""" + _HASH_TTL

# KEYS: an old window hash, the person's hash | ARGV: hash ttl, the batch's start in ms
_MOVE_WINDOW = """
local w = redis.call('HMGET', KEYS[1], 'start', 'due', 'direct', 'charged', 'batch')
if not w[1] then return 0 end
if not redis.call('HGET', KEYS[2], 'ws') then
  redis.call('HSET', KEYS[2], 'ws', w[1], 'wd', w[2], 'wn', w[3] or '0', 'wc', w[4] or '0',
             'wb', w[5] or '', 'wm', ARGV[2])
end
""" + _HASH_TTL

LAYOUT = "person-hash-1"  # the value of ``<prefix>:layout`` once the per-person keys were moved


async def migrate(redis: aioredis.Redis, keys: k.Keys, ttls: k.Ttls) -> int:
    """Move the old layout's keys under ``keys.prefix``; returns how many keys moved.

    The old outbox (a few fixed keys, no TTL) is looked at on every start, so answers that a
    process of the earlier release accepted during a rolling upgrade move at the next start. The
    per-person keys (found by SCAN, all with TTLs) are looked for until one run has finished:
    ``<prefix>:layout`` then says so and later starts skip the scan."""
    p = keys.prefix
    moved = int(await redis.eval(
        _MOVE_OUTBOX, 11, *(f"{p}:outbox:{n}" for n in
                            ("entries", "attempts", "due", "failures", "parked")),
        keys.outbox_entries, keys.outbox_attempts, keys.outbox_due, keys.outbox_failures,
        keys.outbox_parked, keys.outbox_keys, f"{p}:order:"))
    if await redis.get(f"{p}:layout") == LAYOUT:
        return moved
    moved += await _move_per_person(redis, keys, ttls)
    await redis.set(f"{p}:layout", LAYOUT)
    return moved


def _after_tag(rest: str) -> str:
    """A slot's or admission's token, after the ``{p:<person>}:`` tag of the tagged layout."""
    if rest.startswith("{p:") and "}:" in rest:
        return rest[rest.index("}:") + 2:]
    return rest


async def _move_per_person(redis: aioredis.Redis, keys: k.Keys, ttls: k.Ttls) -> int:
    p, moved = keys.prefix, 0
    async for name in redis.scan_iter(match=f"{p}:order:*", count=500):
        moved += int(await redis.renamenx(name, keys.order(name[len(f"{p}:order:"):])))
    async for name in redis.scan_iter(match=f"{p}:order-lease:*", count=500):
        await redis.delete(name)
    hash_ttl = ttls.person()
    for kind, field in (("slot", k.slot_field), ("adm", k.admission_field)):
        async for name in redis.scan_iter(match=f"{p}:{kind}:*", count=500):
            token = _after_tag(name[len(f"{p}:{kind}:"):])
            parts = token.rsplit("|", 3)
            if len(parts) != 4:
                continue
            stamp = ""
            if kind == "adm":  # stamped so that it is dropped when the old key would have expired
                left = await redis.ttl(name)
                stamp = codec.num(time.time() - ttls.slot + max(0, left))
            moved += int(await redis.eval(_MOVE_FIELD, 2, name, keys.person(parts[1]),
                                          hash_ttl, field(token), stamp))
    async for name in redis.scan_iter(match=f"{p}:cap:*", count=500):
        rest = name[len(f"{p}:cap:"):]
        if rest.startswith("{p:") and "}:" in rest:  # tagged: {p:<person>}:<day>
            person, _, day = rest[3:].rpartition("}:")
        else:  # untagged: <day>:<person>
            day, _, person = rest.partition(":")
        if person and day:
            moved += int(await redis.eval(_MOVE_CAP, 2, name, keys.person(person), hash_ttl, day))
    async for name in redis.scan_iter(match=f"{p}:win:*", count=500):
        rest = name[len(f"{p}:win:"):]
        person = rest[3:-1] if rest.startswith("{p:") and rest.endswith("}") else rest
        batch = await redis.hget(name, "batch")
        start = k.batch_parts(str(batch))[1] if batch else ""
        moved += int(await redis.eval(_MOVE_WINDOW, 2, name, keys.person(person), hash_ttl,
                                      start))
    async for name in redis.scan_iter(match=f"{p}:batch:*", count=500):
        person, start = k.batch_parts(name[len(f"{p}:batch:"):])
        await redis.eval(_MOVE_BATCH, 2, name, keys.digest(person), start, ttls.slot)
        moved += 1
    return moved

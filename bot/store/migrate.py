"""Moving a Redis written by an earlier release into the key layout of ``bot.store.keys``.

Earlier releases wrote one server only, with keys untagged: ``<prefix>:slot:<token>``,
``<prefix>:adm:<token>``, ``<prefix>:cap:<day>:<person>``, ``<prefix>:win:<person>``,
``<prefix>:batch:<batch id>``, ``<prefix>:outbox:<name>``, ``<prefix>:order:<key>`` and
``<prefix>:order-lease:<key>``. The store runs this once per process before its first command
on a single server (a cluster never held the old layout): answers waiting in the old outbox
move into the new one (none is lost), reservations, admissions, caps, windows and batches keep
their meaning and their TTLs, the old order leases are dropped (their entries are claimed
again). Each step is atomic and idempotent, so processes starting together may all run it.
The outbox's move is one script that names the old keys it reads: it runs on a single server,
never on a cluster.
"""

from __future__ import annotations

import redis.asyncio as aioredis

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


LAYOUT = "tagged-1"  # the value of ``<prefix>:layout`` once the per-person keys were moved


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


async def _move_per_person(redis: aioredis.Redis, keys: k.Keys, ttls: k.Ttls) -> int:
    p, moved = keys.prefix, 0
    async for name in redis.scan_iter(match=f"{p}:order:*", count=500):
        moved += int(await redis.renamenx(name, keys.order(name[len(f"{p}:order:"):])))
    async for name in redis.scan_iter(match=f"{p}:order-lease:*", count=500):
        await redis.delete(name)
    for kind, rename in (("slot", keys.slot), ("adm", keys.admission)):
        async for name in redis.scan_iter(match=f"{p}:{kind}:*", count=500):
            token = name[len(f"{p}:{kind}:"):]
            parts = token.rsplit("|", 3)
            if not token.startswith("{p:") and len(parts) == 4:
                moved += int(await redis.renamenx(name, rename(parts[1], token)))
    async for name in redis.scan_iter(match=f"{p}:cap:*", count=500):
        day, _, person = name[len(f"{p}:cap:"):].partition(":")
        if not day.startswith("{p:") and person:
            moved += int(await redis.renamenx(name, keys.cap(day, person)))
    async for name in redis.scan_iter(match=f"{p}:win:*", count=500):
        person = name[len(f"{p}:win:"):]
        if not person.startswith("{p:"):
            batch = await redis.hget(name, "batch")
            if batch:
                await redis.hset(name, "ms", k.batch_parts(str(batch))[1])
            moved += int(await redis.renamenx(name, keys.window(person)))
    async for name in redis.scan_iter(match=f"{p}:batch:*", count=500):
        person, start = k.batch_parts(name[len(f"{p}:batch:"):])
        await redis.eval(_MOVE_BATCH, 2, name, keys.digest(person), start, ttls.slot)
        moved += 1
    return moved

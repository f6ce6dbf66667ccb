"""``Outbox`` on Redis (``RedisStore`` inherits it): every step one script over the
``{outbox}`` slot's keys (``bot.store.outbox.scripts``)."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING

from bot.metrics import REGISTRY
from bot.store import codec
from bot.store.errors import OutboxFull
from bot.store.errors import translated as _translated
from bot.store.group import GroupCommit
from bot.store.keys import Keys, Ttls
from bot.store.outbox import scripts
from bot.store.records import Acceptance, OutboxEntry
from bot.store.stream import repeat_of, settled_mark

if TYPE_CHECKING:  # redis-py's asyncio client, named for types only (bot.store.redis loads it)
    import redis.asyncio as aioredis
    from redis.asyncio.cluster import RedisCluster

# A claim looks at this many due entries per wanted one (some keys may be held by other claims);
# an entry whose key is held is looked at again this much later, behind the other due entries.
_CLAIM_LOOKAHEAD = 4
_HELD_KEY_RECHECK_SECONDS = 0.2


def _unreplicated(answers: int) -> None:
    REGISTRY.inc("clarify_outbox_unreplicated_total", answers)


class RedisOutbox:
    """``Outbox`` for ``RedisStore`` (which provides ``_redis``, ``_keys`` and ``_ttls``)."""

    _redis: aioredis.Redis | RedisCluster
    _keys: Keys
    _ttls: Ttls

    def _outbox_scripts(self, *, outbox_max: int, replicas: int, replica_wait_ms: int) -> None:
        """With ``replicas``, an acceptance waits (WAIT, in its own pipeline) until that many
        replicas hold it, or ``replica_wait_ms``: a master lost after the acknowledgement then
        loses no answer; one not replicated in time is still taken, and counted."""
        redis = self._redis
        self._outbox_max = outbox_max
        self._outbox_accept = GroupCommit(
            redis, redis.register_script(scripts.OUTBOX_ACCEPT),
            wait=(replicas, replica_wait_ms) if replicas else None, on_short=_unreplicated)
        self._outbox_claim = redis.register_script(scripts.OUTBOX_CLAIM)
        self._outbox_retry = redis.register_script(scripts.OUTBOX_RETRY)
        self._outbox_done = redis.register_script(scripts.OUTBOX_DONE)
        self._outbox_park = redis.register_script(scripts.OUTBOX_PARK)

    # ------------------------------------------------ answer outbox (durable)
    @_translated
    async def outbox_accept(self, entry_id: str, payload: str, *, order_key: str, acted_at: int,
                            now: datetime, answer: str = "") -> Acceptance:
        doc = codec.outbox_json(payload, created_at=now, order_key=order_key, acted_at=acted_at,
                                answer=answer)
        names = [self._keys.outbox_entries, self._keys.outbox_due, self._keys.order(order_key),
                 self._keys.outbox_keys, self._keys.outbox_queue]
        verdict = await self._outbox_accept(keys=names, args=[
            entry_id, doc, codec.num(codec.epoch(now)), acted_at, order_key, self._outbox_max])
        if verdict == "full":
            raise OutboxFull()
        return Acceptance(verdict)

    @_translated
    async def outbox_claim(self, *, now: datetime, lease_seconds: int, limit: int,
                           entry_id: str | None = None) -> list[OutboxEntry]:
        at = codec.epoch(now)
        names = [self._keys.outbox_due, self._keys.outbox_entries, self._keys.outbox_attempts,
                 self._keys.outbox_failures, self._keys.outbox_keys, self._keys.outbox_leases,
                 self._keys.outbox_queue]
        flat = await self._outbox_claim(keys=names, args=[
            codec.num(at), codec.num(at + lease_seconds), limit, limit * _CLAIM_LOOKAHEAD + 16,
            entry_id or "", codec.num(at + _HELD_KEY_RECHECK_SECONDS)])
        rows = zip(flat[::5], flat[1::5], flat[2::5], flat[3::5], flat[4::5], strict=True)
        claimed = [codec.outbox_from(entry_id, raw, attempts=int(attempts), failures=int(failures),
                                     superseded=bool(superseded))
                   for entry_id, raw, attempts, failures, superseded in rows]
        # only an entry with a later action of its key can repeat one (``repeat_of``)
        return [await self._repeats(entry) if entry.superseded else entry for entry in claimed]

    async def _repeats(self, entry: OutboxEntry) -> OutboxEntry:
        """The entry, naming the settled one it repeats (``bot.store.stream.repeat_of``): read
        after the claim, which holds the key, so no entry of it settles meanwhile."""
        if not entry.answer:
            return entry
        async with self._redis.pipeline(transaction=False) as pipe:
            pipe.hgetall(self._keys.order(entry.order_key))
            pipe.hget(self._keys.outbox_queue, entry.order_key)
            order, queue = await pipe.execute()
        settled = {name[2:]: mark for name, mark in order.items() if name.startswith("d:")}
        return replace(entry, repeats=repeat_of(entry.acted_at, entry.answer, settled,
                                                codec.queued_times(queue)))

    @_translated
    async def outbox_retry(self, entry: OutboxEntry, *, at: datetime, failed: bool) -> None:
        names = [self._keys.outbox_due, self._keys.outbox_failures, self._keys.outbox_leases]
        await self._outbox_retry(keys=names, args=[entry.entry_id, codec.num(codec.epoch(at)),
                                                   int(failed), entry.order_key])

    @_translated
    async def outbox_done(self, entry: OutboxEntry, *, now: datetime | None = None) -> None:
        names = [self._keys.outbox_entries, self._keys.outbox_due, self._keys.outbox_attempts,
                 self._keys.outbox_failures, self._keys.order(entry.order_key),
                 self._keys.outbox_keys, self._keys.outbox_leases, self._keys.outbox_queue]
        await self._outbox_done(keys=names, args=[
            entry.entry_id, entry.acted_at, self._ttls.order, entry.order_key,
            codec.num(codec.epoch(now)) if now is not None else "",
            settled_mark(entry.acted_at, entry.answer)])

    @_translated
    async def outbox_park(self, entry: OutboxEntry, *, reason: str, now: datetime) -> None:
        names = [self._keys.outbox_entries, self._keys.outbox_due, self._keys.outbox_attempts,
                 self._keys.outbox_failures, self._keys.outbox_parked,
                 self._keys.order(entry.order_key), self._keys.outbox_keys,
                 self._keys.outbox_leases, self._keys.outbox_queue]
        await self._outbox_park(keys=names, args=[
            entry.entry_id, reason, codec.num(codec.epoch(now)), entry.order_key,
            self._ttls.order, settled_mark(entry.acted_at, entry.answer, parked=True)])

    @_translated
    async def outbox_size(self) -> int:
        return await self._redis.hlen(self._keys.outbox_entries)

    @_translated
    async def outbox_parked(self) -> int:
        return await self._redis.hlen(self._keys.outbox_parked)

    async def outbox_overdue(self, *, now: datetime) -> float:
        first = await self._redis.zrange(self._keys.outbox_due, 0, 0, withscores=True)
        if not first:
            return 0.0
        return max(0.0, codec.epoch(now) - float(first[0][1]))

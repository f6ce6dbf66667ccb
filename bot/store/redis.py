"""The Redis store: state shared between replicas, every multi-step operation one Lua script.

Values are JSON; times are epoch seconds inside Redis and aware UTC datetimes outside. Nothing
here logs, so no span text, answer payload or token can reach a log line from the store.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from types import TracebackType
from typing import Any, Self, cast

import redis.asyncio as aioredis
from redis.commands.core import AsyncScript
from redis.exceptions import NoScriptError

from bot.store import codec, scripts
from bot.store import keys as k
from bot.store.base import (
    Acceptance,
    Admission,
    CardRecord,
    Decision,
    DeliveryKey,
    DeliverySlot,
    DigestBatch,
    DigestItem,
    OutboxEntry,
    SlotState,
)
from bot.store.errors import SlotContended, SlotNotFound
from bot.store.errors import translated as _translated
from bot.store.notices import RedisNotices

_CAS_TRIES = 5


def _seconds(ttl: timedelta | int) -> int:
    return int(ttl.total_seconds()) if isinstance(ttl, timedelta) else int(ttl)



_RATE_TTL = 3600
# A claim looks at this many due entries per wanted one (some keys may be held by other claims);
# an entry whose key is held is looked at again this much later, behind the other due entries.
_CLAIM_LOOKAHEAD = 4
_HELD_KEY_RECHECK_SECONDS = 0.2
_LEFTOVER_SECONDS = 3600  # Redis drops a dead holder's lease this long after it ended


class _GroupCommit:
    """Concurrent calls of one script, sent together: every call made in one turn of the event
    loop goes to Redis in one pipeline. Under a burst of clicks each acknowledgement then waits
    for one round trip shared with the others, instead of a pooled connection and a round trip
    of its own (which on a busy host costs more than the script itself)."""

    def __init__(self, redis: aioredis.Redis, script: AsyncScript) -> None:
        self._redis = redis
        self._script = script
        self._waiting: list[tuple[Sequence[str], Sequence[str | int], asyncio.Future[Any]]] = []
        self._sending: set[asyncio.Task[None]] = set()

    async def __call__(self, *, keys: Sequence[str], args: Sequence[str | int]) -> Any:
        loop = asyncio.get_running_loop()
        done: asyncio.Future[Any] = loop.create_future()
        self._waiting.append((keys, args, done))
        if len(self._waiting) == 1:
            loop.call_soon(self._send_waiting)
        return await done

    def _send_waiting(self) -> None:
        batch, self._waiting = self._waiting, []
        task = asyncio.ensure_future(self._send(batch))
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)

    async def _send(self, batch: list[tuple[Sequence[str], Sequence[str | int],
                                            asyncio.Future[Any]]]) -> None:
        try:
            if len(batch) == 1:  # alone: a plain call is cheaper than a pipeline of one
                keys, args, _ = batch[0]
                results = [await self._script(keys=keys, args=args)]
            else:
                results = await self._pipeline(batch)
            if any(isinstance(r, NoScriptError) for r in results):  # Redis forgot it: restarted
                await self._redis.script_load(self._script.script)
                results = await self._pipeline(batch)
        except Exception as exc:  # every caller gets it; none is left waiting
            results = [exc] * len(batch)
        for (_, _, done), result in zip(batch, results, strict=True):
            if done.done():
                continue  # the caller went away
            if isinstance(result, BaseException):
                done.set_exception(result)
            else:
                done.set_result(result)

    async def _pipeline(self, batch: list[tuple[Sequence[str], Sequence[str | int],
                                                asyncio.Future[Any]]]) -> list[Any]:
        async with self._redis.pipeline(transaction=False) as pipe:
            for keys, args, _ in batch:
                pipe.evalsha(self._script.sha, len(keys), *keys, *args)
            return cast(list[Any], await pipe.execute(raise_on_error=False))


class RedisStore(RedisNotices):
    """The production store. It closes the client on ``aclose`` only when it made the client."""

    def __init__(self, redis: aioredis.Redis, *, prefix: str = k.DEFAULT_PREFIX,
                 slot_ttl: timedelta | int = k.SLOT_TTL_SECONDS,
                 owns_client: bool = False) -> None:
        if not redis.get_connection_kwargs().get("decode_responses"):
            raise ValueError("the store needs a Redis client with decode_responses=True")
        self._redis = redis
        self._keys = k.Keys(prefix)
        self._slot_ttl = _seconds(slot_ttl)
        self._owns_client = owns_client
        self._closed = False
        self._reserve = redis.register_script(scripts.RESERVE)
        self._cas = redis.register_script(scripts.COMPARE_AND_SET)
        # a card's two scripts, sent with those of other jobs in the same turn (group commit)
        self._record_sent = _GroupCommit(redis, redis.register_script(scripts.RECORD_SENT))
        self._admit = _GroupCommit(redis, redis.register_script(scripts.ADMIT))
        self._claim_batch = redis.register_script(scripts.CLAIM_BATCH)
        self._outbox_accept = _GroupCommit(redis, redis.register_script(scripts.OUTBOX_ACCEPT))
        self._outbox_claim = redis.register_script(scripts.OUTBOX_CLAIM)
        self._outbox_retry = redis.register_script(scripts.OUTBOX_RETRY)
        self._outbox_done = redis.register_script(scripts.OUTBOX_DONE)
        self._outbox_park = redis.register_script(scripts.OUTBOX_PARK)
        self._rate_take = redis.register_script(scripts.RATE_TAKE)
        self._limit_admit = _GroupCommit(redis, redis.register_script(scripts.LIMIT_ADMIT))
        self._notice_scripts()

    @classmethod
    def from_url(cls, url: str, *, password: str | None = None, prefix: str = k.DEFAULT_PREFIX,
                 slot_ttl: timedelta | int = k.SLOT_TTL_SECONDS,
                 max_connections: int = 50) -> RedisStore:
        """A store with its own client; a burst past max_connections waits for a free one."""
        pool = aioredis.BlockingConnectionPool.from_url(
            url, password=password, decode_responses=True, max_connections=max_connections)
        client = aioredis.Redis.from_pool(pool)
        return cls(client, prefix=prefix, slot_ttl=slot_ttl, owns_client=True)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._owns_client and not self._closed:
            await self._redis.aclose()
        self._closed = True

    # ------------------------------------------------ idempotent delivery
    @_translated
    async def reserve(self, key: DeliveryKey, *, worker_id: str, now: datetime
                      ) -> tuple[DeliverySlot, bool]:
        fresh = DeliverySlot(key=key, state=SlotState.RESERVED, worker_id=worker_id,
                             reserved_at=now)
        raw, created = await self._reserve(keys=[self._keys.slot(key.token())],
                                           args=[codec.slot_json(fresh), self._slot_ttl])
        return codec.slot_from(key, raw), bool(created)

    async def mark_sent(self, key: DeliveryKey, *, message_ref: str) -> DeliverySlot:
        return await self._update(key, state=SlotState.SENT, message_ref=message_ref)

    @_translated
    async def record_sent(self, slot: DeliverySlot, card: CardRecord) -> DeliverySlot:
        """One script when the slot is as reserved; else the two steps, compare-and-set."""
        key = slot.key
        new = DeliverySlot(key=key, state=SlotState.SENT, worker_id=slot.worker_id,
                           reserved_at=slot.reserved_at, message_ref=card.message_ref,
                           batch_id=slot.batch_id)
        done = await self._record_sent(
            keys=[self._keys.slot(key.token()), self._keys.cards(key.clarification_id)],
            args=[slot.state.value, slot.worker_id, codec.slot_json(new), key.token(),
                  codec.card_json(card), k.CARDS_TTL_SECONDS])
        if done == 1:
            return new
        sent = await self.mark_sent(key, message_ref=card.message_ref)
        await self.add_card(card)
        return sent

    @_translated
    async def mark_digested(self, key: DeliveryKey, *, batch_id: str, worker_id: str,
                            now: datetime) -> DeliverySlot:
        """A digested card is not sent on its own, so it may have no reservation: make one."""
        fresh = DeliverySlot(key=key, state=SlotState.DIGESTED, worker_id=worker_id,
                             reserved_at=now, batch_id=batch_id)
        _, created = await self._reserve(keys=[self._keys.slot(key.token())],
                                         args=[codec.slot_json(fresh), self._slot_ttl])
        if created:
            return fresh
        return await self._update(key, state=SlotState.DIGESTED, batch_id=batch_id)

    @_translated
    async def _update(self, key: DeliveryKey, *, state: SlotState, message_ref: str | None = None,
                      batch_id: str | None = None) -> DeliverySlot:
        """Compare-and-set, so a concurrent update is re-read, never overwritten blindly."""
        name = self._keys.slot(key.token())
        for _ in range(_CAS_TRIES):
            raw = await self._redis.get(name)
            if raw is None:
                raise SlotNotFound()
            slot = codec.slot_from(key, raw)
            new = DeliverySlot(key=key, state=state, worker_id=slot.worker_id,
                               reserved_at=slot.reserved_at,
                               message_ref=message_ref or slot.message_ref,
                               batch_id=batch_id or slot.batch_id)
            swapped = await self._cas(keys=[name], args=[raw, codec.slot_json(new)])
            if swapped == 1:
                return new
            if swapped == -1:
                raise SlotNotFound()
        raise SlotContended()

    @_translated
    async def release(self, key: DeliveryKey) -> None:
        await self._redis.delete(self._keys.slot(key.token()))

    @_translated
    async def slot(self, key: DeliveryKey) -> DeliverySlot | None:
        raw = await self._redis.get(self._keys.slot(key.token()))
        return None if raw is None else codec.slot_from(key, raw)

    # ------------------------------------------------ cards to update
    @_translated
    async def add_card(self, card: CardRecord) -> None:
        name = self._keys.cards(card.delivery.clarification_id)
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.hset(name, card.delivery.token(), codec.card_json(card))
            pipe.expire(name, k.CARDS_TTL_SECONDS)
            await pipe.execute()

    @_translated
    async def cards(self, clarification_id: str) -> list[CardRecord]:
        raw = await self._redis.hgetall(self._keys.cards(clarification_id))
        return sorted((codec.card_from(doc) for doc in raw.values()), key=codec.card_order)

    # ------------------------------------------------ caps and digest batching
    @_translated
    async def admit(
        self, key: DeliveryKey, *, item: DigestItem, day: str, now: datetime, cap: int,
        threshold: int, window_seconds: int, batched: bool, reserve_for: str | None = None,
    ) -> Admission:
        start = codec.epoch(now)
        names = [self._keys.admission(key.token()), self._keys.cap(day, key.person_id),
                 self._keys.window(key.person_id), self._keys.batches_due,
                 self._keys.slot(key.token())]
        fresh = "" if reserve_for is None else codec.slot_json(DeliverySlot(
            key=key, state=SlotState.RESERVED, worker_id=reserve_for, reserved_at=now))
        args: list[str | int] = [
            codec.num(start), cap, threshold, int(batched), codec.num(start + window_seconds),
            k.batch_id(key.person_id, start), self._keys.batch_prefix, key.person_id,
            item.clarification_id, codec.item_json(item),
            self._slot_ttl, k.CAP_TTL_SECONDS, k.window_ttl(window_seconds), self._slot_ttl,
            fresh,
        ]
        raw, replayed, *held = await self._admit(keys=names, args=args)
        doc: dict[str, Any] = json.loads(raw)
        due = doc.get("due_at")
        admission = Admission(decision=Decision(doc["decision"]), batch_id=doc.get("batch_id"),
                              due_at=None if due is None else codec.when(due),
                              replayed=bool(replayed))
        if held:
            slot_raw, created = held
            return replace(admission, reserved=codec.slot_from(key, slot_raw),
                           created=bool(created))
        return admission

    @_translated
    async def due_batches(self, *, now: datetime, limit: int = 100) -> list[str]:
        until = codec.num(codec.epoch(now))
        ids = await self._redis.zrangebyscore(self._keys.batches_due, "-inf", until,
                                              start=0, num=limit)
        return cast(list[str], ids)

    @_translated
    async def claim_batch(self, batch_id: str, *, now: datetime, lease_seconds: int
                          ) -> DigestBatch | None:
        at = codec.epoch(now)
        flat = await self._claim_batch(
            keys=[self._keys.batch(batch_id), self._keys.batches_due],
            args=[batch_id, codec.num(at), codec.num(at + lease_seconds)],
        )
        if not flat:
            return None
        return codec.batch_from(batch_id, dict(zip(flat[::2], flat[1::2], strict=True)))

    @_translated
    async def finish_batch(self, batch_id: str) -> None:
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.delete(self._keys.batch(batch_id))
            pipe.zrem(self._keys.batches_due, batch_id)
            await pipe.execute()

    # ------------------------------------------------ once-only markers
    @_translated
    async def mark_once(self, namespace: str, key: str, *, ttl_seconds: int) -> bool:
        done = await self._redis.set(self._keys.once(namespace, key), 1, nx=True, ex=ttl_seconds)
        return bool(done)

    @_translated
    async def kv_put(self, namespace: str, key: str, value: str, *, ttl_seconds: int) -> None:
        await self._redis.set(self._keys.latest(namespace, key), value, ex=ttl_seconds)

    @_translated
    async def kv_get(self, namespace: str, key: str) -> str | None:
        value = await self._redis.get(self._keys.latest(namespace, key))
        return value if isinstance(value, str) else None

    @_translated
    async def swap_latest(self, namespace: str, key: str, value: str, *, ttl_seconds: int
                          ) -> str | None:
        previous = await self._redis.set(self._keys.latest(namespace, key), value,
                                         ex=ttl_seconds, get=True)
        return previous if isinstance(previous, str) else None

    # ------------------------------------------------ Teams conversation references
    @_translated
    async def conversation_put(self, tenant_id: str, aad_object_id: str, reference_json: str,
                               *, now: datetime) -> None:
        expires = now + timedelta(seconds=k.CONVERSATION_TTL_SECONDS)
        await self._redis.set(self._keys.conversation(tenant_id, aad_object_id), reference_json,
                              exat=int(expires.timestamp()))

    @_translated
    async def conversation_get(self, tenant_id: str, aad_object_id: str) -> str | None:
        value = await self._redis.get(self._keys.conversation(tenant_id, aad_object_id))
        return value if isinstance(value, str) else None

    @_translated
    async def conversation_delete(self, tenant_id: str, aad_object_id: str) -> None:
        await self._redis.delete(self._keys.conversation(tenant_id, aad_object_id))

    @_translated
    async def rate_take(self, bucket: str, *, rate_per_second: float, burst: int,
                        now: datetime, reserve: int = 0) -> float:
        wait = await self._rate_take(keys=[self._keys.rate(bucket)], args=[
            rate_per_second, burst, codec.num(codec.epoch(now)), _RATE_TTL, 0, reserve])
        return float(wait)

    @_translated
    async def rate_block(self, bucket: str, *, seconds: float, rate_per_second: float,
                         burst: int, now: datetime) -> None:
        await self._rate_take(keys=[self._keys.rate(bucket)], args=[
            rate_per_second, burst, codec.num(codec.epoch(now)), _RATE_TTL, seconds, 0])

    @_translated
    async def limit_admit(self, bucket: str, *, per_second: float, burst: int, ttl_seconds: int,
                          now: datetime) -> float:
        """One callback's token from an abuse-limit bucket (``bot.limits``): 0 when taken,
        else seconds until there is one (nothing taken); sent with the others of this turn."""
        wait = await self._limit_admit(keys=[self._keys.limit(bucket)], args=[
            codec.num(per_second), burst, codec.num(codec.epoch(now)), ttl_seconds])
        return float(wait)

    # ------------------------------------------------ answer outbox (durable)
    @_translated
    async def outbox_accept(self, entry_id: str, payload: str, *, order_key: str, acted_at: int,
                            now: datetime) -> Acceptance:
        doc = codec.outbox_json(payload, created_at=now, order_key=order_key, acted_at=acted_at)
        names = [self._keys.outbox_entries, self._keys.outbox_due, self._keys.order(order_key)]
        verdict = await self._outbox_accept(keys=names, args=[
            entry_id, doc, codec.num(codec.epoch(now)), acted_at, k.ORDER_TTL_SECONDS])
        return Acceptance(verdict)

    @_translated
    async def outbox_claim(self, *, now: datetime, lease_seconds: int, limit: int,
                           entry_id: str | None = None) -> list[OutboxEntry]:
        at = codec.epoch(now)
        names = [self._keys.outbox_due, self._keys.outbox_entries, self._keys.outbox_attempts,
                 self._keys.outbox_failures]
        flat = await self._outbox_claim(keys=names, args=[
            codec.num(at), codec.num(at + lease_seconds), lease_seconds + _LEFTOVER_SECONDS, limit,
            limit * _CLAIM_LOOKAHEAD + 16, self._keys.order_prefix, self._keys.order_lease_prefix,
            entry_id or "", codec.num(at + _HELD_KEY_RECHECK_SECONDS)])
        rows = zip(flat[::5], flat[1::5], flat[2::5], flat[3::5], flat[4::5], strict=True)
        return [codec.outbox_from(entry_id, raw, attempts=int(attempts), failures=int(failures),
                                  stale=bool(stale))
                for entry_id, raw, attempts, failures, stale in rows]

    @_translated
    async def outbox_retry(self, entry: OutboxEntry, *, at: datetime, failed: bool) -> None:
        names = [self._keys.outbox_due, self._keys.outbox_failures,
                 self._keys.order_lease(entry.order_key)]
        await self._outbox_retry(keys=names, args=[entry.entry_id, codec.num(codec.epoch(at)),
                                                   int(failed)])

    @_translated
    async def outbox_done(self, entry: OutboxEntry) -> None:
        names = [self._keys.outbox_entries, self._keys.outbox_due, self._keys.outbox_attempts,
                 self._keys.outbox_failures, self._keys.order(entry.order_key),
                 self._keys.order_lease(entry.order_key)]
        await self._outbox_done(keys=names, args=[entry.entry_id, entry.acted_at,
                                                  k.ORDER_TTL_SECONDS])

    @_translated
    async def outbox_park(self, entry: OutboxEntry, *, reason: str, now: datetime) -> None:
        names = [self._keys.outbox_entries, self._keys.outbox_due, self._keys.outbox_attempts,
                 self._keys.outbox_failures, self._keys.outbox_parked,
                 self._keys.order_lease(entry.order_key)]
        await self._outbox_park(keys=names, args=[entry.entry_id, reason,
                                                  codec.num(codec.epoch(now))])

    @_translated
    async def erase_person(self, person_id: str, *, chat_users: Sequence[str]) -> dict[str, int]:
        """Delete what the store holds for one person (``bot.store.erasure``): counts by kind."""
        from bot.store.erasure import erase_person

        return await erase_person(self._redis, self._keys, person_id=person_id,
                                  chat_users=chat_users)

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

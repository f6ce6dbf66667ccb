"""The Redis store: state shared between replicas, every multi-step operation one Lua script.

Values are JSON; times are epoch seconds inside Redis and aware UTC datetimes outside. Nothing
here logs, so no span text, answer payload or token can reach a log line from the store.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import replace
from datetime import datetime, timedelta
from types import TracebackType
from typing import Any, Self, cast

import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster

from bot.metrics import REGISTRY
from bot.store import codec, scripts
from bot.store import keys as k
from bot.store.base import (
    Admission,
    CardRecord,
    Decision,
    DeliveryKey,
    DeliverySlot,
    DigestBatch,
    DigestItem,
    SlotState,
)
from bot.store.connect import client_for, parse_redis_url
from bot.store.errors import SlotContended, SlotNotFound
from bot.store.errors import translated as _translated
from bot.store.generation import RedisGenerations
from bot.store.group import GroupCommit
from bot.store.notices import RedisNotices
from bot.store.redis_outbox import RedisOutbox

Client = aioredis.Redis | RedisCluster

_CAS_TRIES = 5


def _seconds(ttl: timedelta | int) -> int:
    return int(ttl.total_seconds()) if isinstance(ttl, timedelta) else int(ttl)


# set while a call holds one of its store's turns: a call inside it takes no second turn
_IN_TURN: ContextVar[bool] = ContextVar("clarify_store_in_turn", default=False)


_RATE_TTL = 3600


def _unreplicated(answers: int) -> None:
    REGISTRY.inc("clarify_outbox_unreplicated_total", answers)


class RedisStore(RedisOutbox, RedisNotices, RedisGenerations):
    """The production store. It closes the client on ``aclose`` only when it made the client."""

    def __init__(self, redis: Client, *, prefix: str = k.DEFAULT_PREFIX,
                 slot_ttl: timedelta | int | None = None, ttls: k.Ttls | None = None,
                 outbox_max: int = k.OUTBOX_MAX_ENTRIES, owns_client: bool = False,
                 migrate: bool = False, max_concurrency: int | None = None,
                 outbox_replicas: int = 0, outbox_replica_wait_ms: int = 250) -> None:
        if not redis.get_connection_kwargs().get("decode_responses"):
            raise ValueError("the store needs a Redis client with decode_responses=True")
        self._redis = redis
        self._keys = k.Keys(prefix)
        self._ttls = ttls or k.Ttls()
        if slot_ttl is not None:
            self._ttls = replace(self._ttls, slot=_seconds(slot_ttl))
        self._slot_ttl = self._ttls.slot
        self._outbox_max = outbox_max
        self._owns_client = owns_client
        self._closed = False
        # before the first command, once: a cluster client learns the cluster's layout (many
        # first commands at once would each start that, and break each other's connections);
        # with ``migrate``, a single server's keys of an earlier release move (bot.store.migrate)
        self._migrate = migrate and not isinstance(redis, RedisCluster)
        cluster = isinstance(redis, RedisCluster)
        self._starting = asyncio.Lock() if cluster or self._migrate else None
        # a cluster's or Sentinel's client fails a call past its connection limit instead of
        # waiting for a free connection (one server's blocking pool waits): wait here instead
        self._gate = asyncio.Semaphore(max_concurrency) if max_concurrency else None
        self._reserve = redis.register_script(scripts.RESERVE)
        self._cas = redis.register_script(scripts.COMPARE_AND_SET)
        self._replace_field = redis.register_script(scripts.REPLACE_FIELD)
        # a card's admission, sent with those of other jobs in the same turn (group commit)
        self._admit = GroupCommit(redis, redis.register_script(scripts.ADMIT))
        self._claim_due = redis.register_script(scripts.CLAIM_DUE)
        self._take_batch = redis.register_script(scripts.TAKE_BATCH)
        self._drop_batch = redis.register_script(scripts.DROP_BATCH)
        # with outbox_replicas, an acceptance waits (WAIT, in its own pipeline) until that many
        # replicas hold it, or outbox_replica_wait_ms: a master lost after the acknowledgement
        # then loses no answer; one not replicated in time is still taken, and counted
        self._outbox_accept = GroupCommit(
            redis, redis.register_script(scripts.OUTBOX_ACCEPT),
            wait=(outbox_replicas, outbox_replica_wait_ms) if outbox_replicas else None,
            on_short=_unreplicated)
        self._outbox_claim = redis.register_script(scripts.OUTBOX_CLAIM)
        self._outbox_retry = redis.register_script(scripts.OUTBOX_RETRY)
        self._outbox_done = redis.register_script(scripts.OUTBOX_DONE)
        self._outbox_park = redis.register_script(scripts.OUTBOX_PARK)
        self._rate_take = redis.register_script(scripts.RATE_TAKE)
        self._limit_admit = GroupCommit(redis, redis.register_script(scripts.LIMIT_ADMIT))
        self._notice_scripts()
        self._generation_scripts()

    @classmethod
    def from_url(cls, url: str, *, password: str | None = None,
                 sentinel_password: str | None = None, prefix: str = k.DEFAULT_PREFIX,
                 slot_ttl: timedelta | int | None = None, ttls: k.Ttls | None = None,
                 outbox_max: int = k.OUTBOX_MAX_ENTRIES, max_connections: int = 50,
                 migrate: bool = False, outbox_replicas: int = 0,
                 outbox_replica_wait_ms: int = 250) -> RedisStore:
        """A store with its own client for a server, a cluster or Sentinel's master
        (``bot.store.connect``); a burst past max_connections waits for a free one.
        ``password`` is the data nodes' (REDIS_PASSWORD), ``sentinel_password`` the sentinels'
        own (REDIS_SENTINEL_PASSWORD; Sentinel only)."""
        target = parse_redis_url(url)
        client = client_for(target, password=password, max_connections=max_connections,
                            sentinel_password=sentinel_password)
        gate = None if target.mode == "standalone" else max_connections
        return cls(client, prefix=prefix, slot_ttl=slot_ttl, ttls=ttls, outbox_max=outbox_max,
                   owns_client=True, migrate=migrate, max_concurrency=gate,
                   outbox_replicas=outbox_replicas, outbox_replica_wait_ms=outbox_replica_wait_ms)

    @asynccontextmanager
    async def _turn(self) -> AsyncIterator[None]:
        """Around every call (``bot.store.errors.translated``): the client started first, then
        one of ``max_concurrency`` turns held (a call inside a call takes no second one)."""
        if self._starting is not None:
            await self._started()
        if self._gate is None or _IN_TURN.get():
            yield
            return
        async with self._gate:
            token = _IN_TURN.set(True)
            try:
                yield
            finally:
                _IN_TURN.reset(token)

    async def _started(self) -> None:
        assert self._starting is not None
        async with self._starting:
            if self._starting is None:
                return
            if isinstance(self._redis, RedisCluster):
                await self._redis.initialize()
            elif self._migrate:
                from bot.store.migrate import migrate

                await migrate(self._redis, self._keys, self._ttls)
            self._starting = None

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
    async def _reserve_slot(self, fresh: DeliverySlot) -> tuple[str, bool]:
        """The slot as stored (JSON) and whether this call stored ``fresh`` (``RESERVE``: the
        person hash's TTL, the slots' TTL and the renewal period go with it, ``scripts._TOUCH``)."""
        key = fresh.key
        raw, created = await self._reserve(
            keys=[self._keys.person(key.person_id)],
            args=[k.slot_field(key.token()), codec.slot_json(fresh),
                  codec.num(codec.epoch(fresh.reserved_at)), self._ttls.person(),
                  self._slot_ttl, k.PERSON_REFRESH_SECONDS])
        return raw, bool(created)

    @_translated
    async def reserve(self, key: DeliveryKey, *, worker_id: str, now: datetime
                      ) -> tuple[DeliverySlot, bool]:
        fresh = DeliverySlot(key=key, state=SlotState.RESERVED, worker_id=worker_id,
                             reserved_at=now)
        raw, created = await self._reserve_slot(fresh)
        if created:
            return fresh, True
        return await self._as_recorded(codec.slot_from(key, raw)), False

    async def _as_recorded(self, slot: DeliverySlot) -> DeliverySlot:
        """A reserved slot whose card is remembered was sent: a card's send is recorded by
        remembering the card alone (``record_sent``), so the slot is read with its card."""
        if slot.state is not SlotState.RESERVED:
            return slot
        raw = await self._redis.hget(self._keys.cards(slot.key.clarification_id),
                                     slot.key.token())
        if raw is None:
            return slot
        return replace(slot, state=SlotState.SENT, message_ref=codec.card_from(raw).message_ref)

    async def mark_sent(self, key: DeliveryKey, *, message_ref: str) -> DeliverySlot:
        return await self._update(key, state=SlotState.SENT, message_ref=message_ref)

    @_translated
    async def record_sent(self, slot: DeliverySlot, card: CardRecord) -> DeliverySlot:
        """Remembering the card is the record: the slot as reserved reads as SENT from then on
        (``_as_recorded``), so the person's hash is not written again for the send."""
        await self.add_card(card)
        return DeliverySlot(key=slot.key, state=SlotState.SENT, worker_id=slot.worker_id,
                            reserved_at=slot.reserved_at, message_ref=card.message_ref,
                            batch_id=slot.batch_id)

    @_translated
    async def mark_digested(self, key: DeliveryKey, *, batch_id: str, worker_id: str,
                            now: datetime) -> DeliverySlot:
        """A digested card is not sent on its own, so it may have no reservation: make one."""
        fresh = DeliverySlot(key=key, state=SlotState.DIGESTED, worker_id=worker_id,
                             reserved_at=now, batch_id=batch_id)
        _, created = await self._reserve_slot(fresh)
        if created:
            return fresh
        return await self._update(key, state=SlotState.DIGESTED, batch_id=batch_id)

    @_translated
    async def _update(self, key: DeliveryKey, *, state: SlotState, message_ref: str | None = None,
                      batch_id: str | None = None) -> DeliverySlot:
        """Compare-and-set, so a concurrent update is re-read, never overwritten blindly."""
        name, field = self._keys.person(key.person_id), k.slot_field(key.token())
        for _ in range(_CAS_TRIES):
            raw = await self._redis.hget(name, field)
            if raw is None:
                raise SlotNotFound()
            slot = codec.slot_from(key, raw)
            new = DeliverySlot(key=key, state=state, worker_id=slot.worker_id,
                               reserved_at=slot.reserved_at,
                               message_ref=message_ref or slot.message_ref,
                               batch_id=batch_id or slot.batch_id)
            swapped = await self._cas(keys=[name], args=[field, raw, codec.slot_json(new)])
            if swapped == 1:
                return new
            if swapped == -1:
                raise SlotNotFound()
        raise SlotContended()

    @_translated
    async def release(self, key: DeliveryKey) -> None:
        await self._redis.hdel(self._keys.person(key.person_id), k.slot_field(key.token()))

    @_translated
    async def slot(self, key: DeliveryKey) -> DeliverySlot | None:
        raw = await self._redis.hget(self._keys.person(key.person_id), k.slot_field(key.token()))
        return None if raw is None else await self._as_recorded(codec.slot_from(key, raw))

    # ------------------------------------------------ cards to update
    @_translated
    async def add_card(self, card: CardRecord) -> None:
        name = self._keys.cards(card.delivery.clarification_id)
        async with self._redis.pipeline(transaction=False) as pipe:  # one key: both run
            pipe.hset(name, card.delivery.token(), codec.card_json(card))
            pipe.expire(name, self._ttls.cards)
            await pipe.execute()

    @_translated
    async def cards(self, clarification_id: str) -> list[CardRecord]:
        raw = await self._redis.hgetall(self._keys.cards(clarification_id))
        return sorted((codec.card_from(doc) for doc in raw.values()), key=codec.card_order)

    @_translated
    async def replace_card(self, card: CardRecord) -> bool:
        """One script on the card's hash: written only where its field is (never recreating a
        hash that expired or a field an erasure deleted)."""
        name = self._keys.cards(card.delivery.clarification_id)
        return bool(await self._replace_field(keys=[name],
                                              args=[card.delivery.token(), codec.card_json(card)]))

    # ------------------------------------------------ caps and digest batching
    @_translated
    async def admit(
        self, key: DeliveryKey, *, item: DigestItem, day: str, now: datetime, cap: int,
        threshold: int, window_seconds: int, batched: bool, reserve_for: str | None = None,
    ) -> Admission:
        start = codec.epoch(now)
        person, ttl = key.person_id, self._ttls
        names = [self._keys.person(person), self._keys.digest(person)]
        fresh = "" if reserve_for is None else codec.slot_json(DeliverySlot(
            key=key, state=SlotState.RESERVED, worker_id=reserve_for, reserved_at=now))
        batch = k.batch_id(person, start)
        args: list[str | int] = [
            codec.num(start), cap, threshold, int(batched), codec.num(start + window_seconds),
            batch, k.batch_parts(batch)[1], item.clarification_id, codec.item_json(item), day,
            key.token(), ttl.person(window_seconds), ttl.slot, k.PERSON_REFRESH_SECONDS,
            ttl.slot, fresh,
        ]
        raw, replayed, opened, *held = await self._admit(keys=names, args=args)
        doc: dict[str, Any] = json.loads(raw)
        due = doc.get("due_at")
        admission = Admission(decision=Decision(doc["decision"]), batch_id=doc.get("batch_id"),
                              due_at=None if due is None else codec.when(due),
                              replayed=bool(replayed))
        if admission.batch_id is not None and (opened or replayed):
            # the due set is no person's key: added after the script, again on a replay (a
            # crash between the two), never moved (a claim's lease end stays)
            await self._redis.zadd(self._keys.batches_due, {admission.batch_id: str(due)},
                                   nx=True)
        if held:
            slot_raw, created = held
            slot = codec.slot_from(key, slot_raw)
            return replace(admission, reserved=slot if created else await self._as_recorded(slot),
                           created=bool(created))
        return admission

    @_translated
    async def due_batches(self, *, now: datetime, limit: int = 100) -> list[str]:
        until = codec.num(codec.epoch(now))
        ids = await self._redis.zrangebyscore(self._keys.batches_due, "-inf", until,
                                              start=0, num=limit)
        return cast(list[str], ids)

    @_translated
    async def delay_batch(self, batch_id: str, *, until: datetime) -> None:
        await self._redis.zadd(self._keys.batches_due, {batch_id: codec.epoch(until)}, xx=True)

    @_translated
    async def claim_batch(self, batch_id: str, *, now: datetime, lease_seconds: int
                          ) -> DigestBatch | None:
        """Held in the due set first (one claim wins), then closed to new items and read in the
        person's slot: an item admitted before that is in the batch, none after."""
        at = codec.epoch(now)
        won = await self._claim_due(keys=[self._keys.batches_due],
                                    args=[batch_id, codec.num(at), codec.num(at + lease_seconds)])
        if not won:
            return None
        person, start = k.batch_parts(batch_id)
        flat = await self._take_batch(keys=[self._keys.digest(person)], args=[start])
        if not flat:  # sent and forgotten, or expired: nothing to claim
            await self._redis.zrem(self._keys.batches_due, batch_id)
            return None
        fields = dict(zip(flat[::2], flat[1::2], strict=True))
        return codec.batch_from(batch_id, {**fields, "person": person})

    @_translated
    async def finish_batch(self, batch_id: str) -> None:
        person, start = k.batch_parts(batch_id)
        await self._drop_batch(keys=[self._keys.digest(person)], args=[start])
        await self._redis.zrem(self._keys.batches_due, batch_id)

    # ------------------------------------------------ reminders
    @_translated
    async def reminder_add(self, member: str, *, due: datetime) -> None:
        await self._redis.zadd(self._keys.reminders_due, {member: codec.epoch(due)}, nx=True)

    @_translated
    async def reminders_due(self, *, now: datetime, limit: int = 100) -> list[str]:
        found = await self._redis.zrangebyscore(
            self._keys.reminders_due, "-inf", codec.num(codec.epoch(now)), start=0, num=limit)
        return [str(member) for member in found]

    @_translated
    async def reminder_claim(self, member: str, *, now: datetime, lease_seconds: int) -> bool:
        at = codec.epoch(now)
        won = await self._claim_due(keys=[self._keys.reminders_due],
                                    args=[member, codec.num(at), codec.num(at + lease_seconds)])
        return bool(won)

    @_translated
    async def reminder_later(self, member: str, *, due: datetime) -> None:
        await self._redis.zadd(self._keys.reminders_due, {member: codec.epoch(due)}, xx=True)

    @_translated
    async def reminder_done(self, member: str) -> None:
        await self._redis.zrem(self._keys.reminders_due, member)

    # ------------------------------------------------ once-only markers
    @_translated
    async def mark_once(self, namespace: str, key: str, *, ttl_seconds: int) -> bool:
        done = await self._redis.set(self._keys.once(namespace, key), 1, nx=True, ex=ttl_seconds)
        return bool(done)

    @_translated
    async def kv_put(self, namespace: str, key: str, value: str, *, ttl_seconds: int) -> None:
        await self._redis.set(self._keys.latest(namespace, key), value, ex=ttl_seconds)

    @_translated
    async def hold_put(self, job_id: str, value: str, *, at: datetime) -> None:
        # remembered in this process too: what it gives back to a store that lost its data
        # (bot.process.storewatch)
        self._remembered_holds[job_id] = value
        await self._redis.hset(self._keys.holds, job_id, value)  # type: ignore[misc]
        await self._redis.zadd(self._keys.holds_due, {job_id: at.timestamp()})

    @_translated
    async def holds_due(self, *, now: datetime, limit: int = 100) -> list[tuple[str, str]]:
        found_ids = await self._redis.zrangebyscore(self._keys.holds_due, "-inf",
                                                    now.timestamp(), start=0, num=limit)
        ids = [i for i in found_ids if isinstance(i, str)]
        if not ids:
            return []
        values = await self._redis.hmget(self._keys.holds, ids)  # type: ignore[misc]
        found = [(i, v) for i, v in zip(ids, values, strict=True) if isinstance(v, str)]
        gone = [i for i, v in zip(ids, values, strict=True) if not isinstance(v, str)]
        if gone:
            await self._redis.zrem(self._keys.holds_due, *gone)
        return found

    @_translated
    async def hold_claim(self, job_id: str, *, now: datetime, lease_seconds: int) -> bool:
        at = codec.epoch(now)
        won = await self._claim_due(keys=[self._keys.holds_due],
                                    args=[job_id, codec.num(at), codec.num(at + lease_seconds)])
        return bool(won)

    @_translated
    async def hold_text(self, job_id: str) -> str | None:
        value = await self._redis.hget(self._keys.holds, job_id)  # type: ignore[misc]
        if isinstance(value, str):
            self._remembered_holds[job_id] = value
        return value if isinstance(value, str) else None

    @_translated
    async def hold_drop(self, job_id: str) -> None:
        self._remembered_holds.pop(job_id, None)
        await self._redis.hdel(self._keys.holds, job_id)  # type: ignore[misc]
        await self._redis.zrem(self._keys.holds_due, job_id)

    @_translated
    async def kv_delete(self, namespace: str, key: str) -> bool:
        return bool(await self._redis.delete(self._keys.latest(namespace, key)))

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
        expires = now + timedelta(seconds=self._ttls.conversation)
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

    # ------------------------------------------------ the generation (bot.store.generation)
    generation_read = _translated(RedisGenerations.generation_read)
    generation_start = _translated(RedisGenerations.generation_start)
    generation_check = _translated(RedisGenerations.generation_check)
    generation_reset = _translated(RedisGenerations.generation_reset)
    census = _translated(RedisGenerations.census)
    holds_present = _translated(RedisGenerations.holds_present)

    @_translated
    async def erase_person(self, person_id: str, *, chat_users: Sequence[str]) -> dict[str, int]:
        """Delete what the store holds for one person (``bot.store.erasure``): counts by kind."""
        from bot.store.erasure import erase_person

        return await erase_person(self._redis, self._keys, person_id=person_id,
                                  chat_users=chat_users)

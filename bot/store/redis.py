"""The Redis store: state shared between replicas, every multi-step operation one Lua script.

Values are JSON; times are epoch seconds inside Redis and aware UTC datetimes outside. Nothing
here logs, so no span text, answer payload or token can reach a log line from the store.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import replace
from datetime import timedelta
from types import TracebackType
from typing import Self

import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster

from bot.store import keys as k
from bot.store.admissions import RedisAdmissions
from bot.store.connect import client_for, parse_redis_url
from bot.store.conversations import RedisConversations
from bot.store.directory import RedisDirectories
from bot.store.due import RedisDueSet
from bot.store.errors import translated as _translated
from bot.store.generation import RedisGenerations
from bot.store.holds import RedisHolds
from bot.store.kv import RedisKeyValues
from bot.store.ledger import RedisLedger
from bot.store.notices import RedisNotices
from bot.store.outbox.redis import RedisOutbox
from bot.store.rates import RedisRates
from bot.store.reminders import Reminders
from bot.store.unreported import Unreported

Client = aioredis.Redis | RedisCluster


def _seconds(ttl: timedelta | int) -> int:
    return int(ttl.total_seconds()) if isinstance(ttl, timedelta) else int(ttl)


# set while a call holds one of its store's turns: a call inside it takes no second turn
_IN_TURN: ContextVar[bool] = ContextVar("clarify_store_in_turn", default=False)


class RedisStore(RedisLedger, RedisAdmissions, RedisHolds, Reminders, Unreported, RedisNotices,
                 RedisKeyValues, RedisConversations, RedisDirectories, RedisRates, RedisOutbox,
                 RedisGenerations):
    """The production store: every concern's Redis implementation over one client (``Store``
    names the concerns). It closes the client on ``aclose`` only when it made the client."""

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
        self._ledger_scripts()
        self._admission_scripts()
        self._hold_scripts()
        self._reminders_due = RedisDueSet(redis, self._keys.reminders_due)
        self._unreported_due = RedisDueSet(redis, self._keys.unreported_due)
        self._rate_scripts()
        self._outbox_scripts(outbox_max=outbox_max, replicas=outbox_replicas,
                             replica_wait_ms=outbox_replica_wait_ms)
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

"""Fixtures for the store's contract suite, one module per concern (``test_store_ledger``,
``_admissions``, ``_holds``, ``_reminders``, ``_notices``, ``_kv``, ``_conversations``,
``_rates``, ``_outbox``; ``test_store_concerns`` checks each implementation against its
protocol): every test runs against memory, a real Redis and a real Redis Cluster.

The Redis side uses database 15, flushed before each test, and a key prefix unique to the test.
The cluster (``redis_cluster`` in tests/conftest.py) is started once per session; each test
keeps to its own key prefix there.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from uuid import uuid4

import pytest
import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster

from bot.clock import ManualClock
from bot.store.base import Admission, DeliveryKey, DigestItem, Store
from bot.store.connect import client_for, parse_redis_url
from bot.store.memory import MemoryStore
from bot.store.redis import RedisStore
from tests.redis_url import TEST_REDIS
from tests.support.redis_cluster import LocalCluster

REDIS_URL = f"{TEST_REDIS}/15"
KINDS = ["memory", "redis", "cluster"]
Client = aioredis.Redis | RedisCluster
T0 = datetime(2026, 7, 6, 9, 0, tzinfo=UTC)
DAY = "2026-07-06"
WINDOW = 1800  # the default digest window: 30 minutes


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def delivery(clarification_id: str, person_id: str = "p1", *, attempt: int = 0,
             kind: str = "question") -> DeliveryKey:
    return DeliveryKey(clarification_id, person_id, attempt, kind)


async def admit(store: Store, clarification_id: str, *, person_id: str = "p1",
                now: datetime = T0, day: str = DAY, cap: int = 5, threshold: int = 3,
                window: int = WINDOW, batched: bool = True, attempt: int = 0) -> Admission:
    """Admit one question card with the spec's defaults unless a test says otherwise."""
    key = delivery(clarification_id, person_id, attempt=attempt)
    item = DigestItem(clarification_id, person_id, attempt, job_id=f"job-{clarification_id}")
    return await store.admit(key, item=item, day=day, now=now, cap=cap, threshold=threshold,
                             window_seconds=window, batched=batched)


@dataclass
class Backend:
    """Opens stores over one shared state: new Redis clients on one prefix, or the one memory."""

    kind: str
    prefix: str
    clock: ManualClock
    url: str = REDIS_URL
    clients: list[Client] = field(default_factory=list)
    memory: MemoryStore | None = None

    def client(self) -> Client:
        """A new client."""
        made = client_for(parse_redis_url(self.url), password=None, max_connections=50)
        self.clients.append(made)
        return made

    def open(self) -> Store:
        if self.kind == "memory":
            if self.memory is None:
                self.memory = MemoryStore(clock=self.clock)
            return self.memory
        return RedisStore(self.client(), prefix=self.prefix)

    async def aclose(self) -> None:
        for client in self.clients:
            await client.aclose()


def _url(kind: str, request: pytest.FixtureRequest) -> str:
    if kind == "cluster":
        cluster: LocalCluster = request.getfixturevalue("redis_cluster")
        return cluster.url
    return REDIS_URL


@pytest.fixture(params=["redis", "cluster"])
def redis_url(request: pytest.FixtureRequest) -> str:
    """The URL of a real Redis: the standalone server's database 15, or the local cluster."""
    return _url(request.param, request)


@pytest.fixture
async def redis_db(redis_url: str) -> AsyncIterator[Client]:
    """A client on that Redis, flushed before the test (real Redis: no fakes, no skipping)."""
    client = client_for(parse_redis_url(redis_url), password=None, max_connections=50)
    await client.flushdb()
    yield client
    await client.aclose()


@pytest.fixture(params=KINDS)
async def backend(request: pytest.FixtureRequest) -> AsyncIterator[Backend]:
    made = Backend(kind=request.param, prefix=f"t{uuid4().hex[:10]}", clock=ManualClock(T0))
    if made.kind == "redis":
        await made.client().flushdb()
    elif made.kind == "cluster":  # the test's own prefix keeps it apart: no flush across nodes
        made.url = _url(made.kind, request)
    yield made
    await made.aclose()


@pytest.fixture
def store(backend: Backend) -> Store:
    return backend.open()

"""Failover under the store: a Redis Cluster master handing over to its replica, a Sentinel
promoting the replica. Real servers on 127.0.0.1; the store keeps its state and keeps working."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
import redis

from bot.store import keys as k
from bot.store.base import Acceptance, Decision
from bot.store.redis import RedisStore
from tests.support.redis_cluster import LocalCluster, LocalSentinel, free_ports, have_redis_server

from .conftest import T0, admit, at

pytestmark = pytest.mark.skipif(not have_redis_server(), reason="needs redis-server")
PORTS = os.environ.get("CLARIFY_TEST_CLUSTER_PORTS", "20201-20299")
PREFIX = "tfail"


def _ports(count: int) -> list[int]:
    low, _, high = PORTS.partition("-")
    return free_ports(count, low=int(low), high=int(high or low))


async def _state_before(store: RedisStore) -> None:
    assert await store.outbox_accept("a1", "{}", order_key="k1", acted_at=1, now=T0) \
        is Acceptance.QUEUED
    assert (await admit(store, "c1", batched=False, cap=2)).decision is Decision.DIRECT


async def _state_after(store: RedisStore) -> None:
    """What was written before is there, and new writes land."""
    assert (await admit(store, "c1", batched=False, cap=2)).replayed
    assert (await admit(store, "c2", batched=False, cap=2)).decision is Decision.DIRECT
    assert (await admit(store, "c3", batched=False, cap=2)).decision is Decision.CAPPED
    assert await store.outbox_accept("a2", "{}", order_key="k2", acted_at=2, now=T0) \
        is Acceptance.QUEUED
    claimed = await store.outbox_claim(now=at(1), lease_seconds=30, limit=5)
    assert sorted(e.entry_id for e in claimed) == ["a1", "a2"]


async def test_the_store_keeps_working_through_a_sentinel_failover(tmp_path: Path) -> None:
    """SENTINEL FAILOVER promotes the replica; the store, opened with a redis+sentinel:// URL,
    finds the new master and nothing written before is lost."""
    master, replica, sentinel = _ports(3)
    with LocalSentinel(master_port=master, replica_port=replica, sentinel_port=sentinel,
                       workdir=tmp_path) as servers:
        async with RedisStore.from_url(servers.url, prefix=PREFIX) as store:
            await _state_before(store)
            redis.Redis(port=master).wait(1, 5000)  # the replica has it all
            assert await asyncio.to_thread(servers.failover) == replica
            await _state_after(store)


async def test_the_store_keeps_working_through_a_cluster_failover(tmp_path: Path) -> None:
    """A graceful CLUSTER FAILOVER of the masters holding the outbox and the person's keys:
    the store, opened with a redis+cluster:// URL, follows the slots to the new masters."""
    ports = _ports(6)
    with LocalCluster(ports[:3], replica_ports=ports[3:], workdir=tmp_path) as cluster:
        async with RedisStore.from_url(cluster.url, prefix=PREFIX) as store:
            await _state_before(store)
            keys = k.Keys(PREFIX)
            moved = {cluster.master_of(keys.outbox_entries), cluster.master_of(keys.person("p1"))}
            for master in moved:
                await asyncio.to_thread(cluster.failover, cluster.replica_of(master))
            assert not moved & set(cluster.masters())
            await _state_after(store)

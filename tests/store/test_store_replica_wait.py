"""``store.outbox_replicas``: an answer's acceptance waits (WAIT, on the acceptance's own
connection) until a replica holds it, so a master lost after the acknowledgement loses no
answer; one no replica confirmed in time is still taken, and counted. Real servers: a master
and its replica, the replica stopped (SIGSTOP) to hold its acknowledgements back."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from bot.metrics import REGISTRY
from bot.store.base import Acceptance
from bot.store.redis import RedisStore
from tests.support.redis_cluster import _Servers, _wait, free_ports, have_redis_server

from .conftest import T0

# slow: a redis-server master and replica of their own
pytestmark = [
    pytest.mark.skipif(not have_redis_server(), reason="needs redis-server"),
    pytest.mark.slow,
]
PORTS = os.environ.get("CLARIFY_TEST_CLUSTER_PORTS", "20201-20299")


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[tuple[int, int, _Servers]]:
    low, _, high = PORTS.partition("-")
    master, replica = free_ports(2, low=int(low), high=int(high or low))
    servers = _Servers(tmp_path)
    servers.spawn(master)
    servers.spawn(replica, "--replicaof", "127.0.0.1", str(master))
    _wait(lambda: redis.Redis(port=replica).info("replication")["master_link_status"] == "up",
          timeout=30, what="replica in sync")
    try:
        yield master, replica, servers
    finally:
        proc = servers.procs[replica]
        if proc.poll() is None:
            proc.send_signal(signal.SIGCONT)
        for port in (master, replica):
            servers.kill(port)


def _unreplicated() -> float:
    return REGISTRY.value("clarify_outbox_unreplicated_total")


async def test_an_acceptance_waits_for_its_replica_and_is_counted_when_none_confirms(
        pair: tuple[int, int, _Servers]) -> None:
    master, replica, servers = pair
    async with RedisStore.from_url(f"redis://127.0.0.1:{master}/0", prefix="twait",
                                   outbox_replicas=1, outbox_replica_wait_ms=300) as store:
        before = _unreplicated()
        got = await store.outbox_accept("a1", "{}", order_key="k1", acted_at=1, now=T0)
        assert got is Acceptance.QUEUED and _unreplicated() == before
        # the replica acknowledged it before the call returned: it holds the entry now
        assert redis.Redis(port=replica, decode_responses=True).hexists(
            "twait:{outbox}:entries", "a1")

        servers.procs[replica].send_signal(signal.SIGSTOP)  # connected, but acknowledges nothing
        try:
            many = await asyncio.gather(*(
                store.outbox_accept(f"b{n}", "{}", order_key=f"k{n}", acted_at=1, now=T0)
                for n in range(2, 7)))
        finally:
            servers.procs[replica].send_signal(signal.SIGCONT)
        assert set(many) == {Acceptance.QUEUED}  # taken all the same: they are on the master
        assert _unreplicated() == before + 5
        assert await store.outbox_size() == 6

        got = await store.outbox_accept("c1", "{}", order_key="kc", acted_at=1, now=T0)
        assert got is Acceptance.QUEUED and _unreplicated() == before + 5


async def test_without_outbox_replicas_nothing_waits_or_is_counted(
        pair: tuple[int, int, _Servers]) -> None:
    master, replica, servers = pair
    async with RedisStore.from_url(f"redis://127.0.0.1:{master}/0", prefix="tnowait") as store:
        before = _unreplicated()
        servers.procs[replica].send_signal(signal.SIGSTOP)
        try:
            got = await store.outbox_accept("a1", "{}", order_key="k1", acted_at=1, now=T0)
        finally:
            servers.procs[replica].send_signal(signal.SIGCONT)
        assert got is Acceptance.QUEUED and _unreplicated() == before

"""Failover under the store: a Redis Cluster master handing over to its replica, a Sentinel
promoting the replica. Real servers on 127.0.0.1; the store keeps its state and keeps working."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.store import keys as k
from bot.store.base import Acceptance, Decision
from bot.store.errors import StoreUnavailable
from bot.store.redis import RedisStore
from tests.support.redis_cluster import LocalCluster, LocalSentinel, free_ports, have_redis_server

from .conftest import T0, admit, at

# slow: redis-server, sentinels and a cluster of their own
pytestmark = [
    pytest.mark.skipif(not have_redis_server(), reason="needs redis-server"),
    pytest.mark.slow,
]
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
            servers.client(master).wait(1, 5000)  # the replica has it all
            assert await asyncio.to_thread(servers.failover) == replica
            await _state_after(store)


NODES_PASSWORD = "nodes-Zq1-pass"  # REDIS_PASSWORD: the master's and the replica's
SENTINEL_PASSWORD = "sentinel-Zq2-pass"  # REDIS_SENTINEL_PASSWORD: the sentinel's requirepass


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalSentinel]:
    """A Sentinel set-up whose data nodes and sentinel each require their own password."""
    master, replica, sentinel = _ports(3)
    with LocalSentinel(master_port=master, replica_port=replica, sentinel_port=sentinel,
                       workdir=tmp_path_factory.mktemp("guarded"), password=NODES_PASSWORD,
                       sentinel_password=SENTINEL_PASSWORD) as servers:
        yield servers


async def test_sentinels_with_their_own_password_lead_to_the_master_through_a_failover(
        guarded: LocalSentinel) -> None:
    """Given both passwords, the store finds the master through the password-protected
    sentinel, works, and follows it to the promoted replica."""
    async with RedisStore.from_url(guarded.url, prefix="tguard", password=NODES_PASSWORD,
                                   sentinel_password=SENTINEL_PASSWORD) as store:
        await _state_before(store)
        master = guarded.master()
        guarded.client(master).wait(1, 5000)
        assert await asyncio.to_thread(guarded.failover) != master
        await _state_after(store)


def _told(error: BaseException) -> str:
    """Everything the error and the errors under it say (what a log with a traceback shows)."""
    said = []
    seen: BaseException | None = error
    while seen is not None:
        said += [str(seen), repr(seen)]
        seen = seen.__cause__ or seen.__context__
    return "\n".join(said)


@pytest.mark.parametrize("given", [None, "wrong-Zq3-pass"])
async def test_a_missing_or_wrong_sentinel_password_is_store_unavailable_naming_no_password(
        guarded: LocalSentinel, given: str | None, caplog: pytest.LogCaptureFixture) -> None:
    """Sentinels that require a password refuse a client without it or with another one: every
    call fails as "store unavailable", and no error under it nor any log names a password."""
    async with RedisStore.from_url(guarded.url, prefix="tguard", password=NODES_PASSWORD,
                                   sentinel_password=given) as store:
        with pytest.raises(StoreUnavailable) as caught:
            await admit(store, "c1")
        with pytest.raises(StoreUnavailable):
            await store.outbox_accept("a1", "{}", order_key="k1", acted_at=1, now=T0)
    told = _told(caught.value) + caplog.text
    assert str(caught.value) == "store unavailable"
    assert "AuthenticationError" in told  # the sentinel's refusal, under it
    for secret in (NODES_PASSWORD, SENTINEL_PASSWORD, given or NODES_PASSWORD):
        assert secret not in told


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


async def test_the_store_reaches_sentinel_and_its_master_over_tls(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """rediss+sentinel://: the sentinel and the data nodes listen for TLS only (a CA of the
    test's own, trusted through SSL_CERT_FILE); the store finds the master, works and follows
    it through a failover."""
    master, replica, sentinel = _ports(3)
    with LocalSentinel(master_port=master, replica_port=replica, sentinel_port=sentinel,
                       workdir=tmp_path, tls=True, password=NODES_PASSWORD,
                       sentinel_password=SENTINEL_PASSWORD) as servers:
        assert servers.url.startswith("rediss+sentinel://")
        monkeypatch.setenv("SSL_CERT_FILE", str(servers.ca_file))
        plain = servers.url.replace("rediss+", "redis+", 1)
        async with RedisStore.from_url(plain, prefix=PREFIX, password=NODES_PASSWORD,
                                       sentinel_password=SENTINEL_PASSWORD) as store:
            with pytest.raises(StoreUnavailable):  # only TLS is spoken there
                await admit(store, "c0")
        async with RedisStore.from_url(servers.url, prefix=PREFIX, password=NODES_PASSWORD,
                                       sentinel_password=SENTINEL_PASSWORD) as store:
            await _state_before(store)
            servers.client(master).wait(1, 5000)
            assert await asyncio.to_thread(servers.failover) == replica
            await _state_after(store)

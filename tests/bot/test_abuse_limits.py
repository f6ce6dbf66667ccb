"""The abuse limits' decisions (``bot.abuse_limits``) on an injected clock, the per-person bucket
shared by replicas through Redis, and the assembled service's body limit on health and metrics."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from unittest.mock import patch
from uuid import uuid4

import aiohttp
import redis.asyncio as aioredis
from prometheus_client.parser import text_string_to_metric_families

from bot.abuse_limits import OFF, Bucket, Limit, Limits, LocalBuckets
from bot.clock import ManualClock
from bot.metrics import REGISTRY
from bot.settings import load_settings
from bot.store.redis import RedisStore
from clarify_bot.app import open_service
from tests.bot.test_service import SECRETS, config_text
from tests.redis_url import TEST_REDIS
from tests.support.processes import free_port


async def test_a_bucket_refuses_past_its_burst_and_refills_at_its_rate() -> None:
    """Three at once, then one every two seconds; a refusal takes nothing and says how long."""
    clock = ManualClock()
    buckets, bucket = LocalBuckets(clock), Bucket(0.5, 3)
    assert [await buckets.admit("k", bucket, clock.now()) for _ in range(4)] == [0, 0, 0, 2.0]
    clock.advance(1)
    assert await buckets.admit("k", bucket, clock.now()) == 1.0
    clock.advance(1)
    assert await buckets.admit("k", bucket, clock.now()) == 0
    assert await buckets.admit("other", bucket, clock.now()) == 0


def test_local_buckets_keep_a_bounded_number_of_keys() -> None:
    """A flood of new keys drops the least recently used bucket (which only refills it)."""
    clock = ManualClock()
    buckets, bucket = LocalBuckets(clock, max_keys=2), Bucket(1, 1)
    buckets.charge("a", bucket)
    buckets.charge("b", bucket)
    buckets.charge("c", bucket)
    # a was dropped (full again); b and c are kept, spent
    assert (buckets.wait("a", bucket), buckets.wait("b", bucket)) == (0.0, 1.0)
    assert len(buckets._buckets) == 2


async def test_a_refusal_says_whole_seconds_and_is_counted() -> None:
    clock = ManualClock()
    limits = Limits(clock=clock, per_ip=Bucket(0.3, 1), per_user=Bucket(0, 1), max_tasks=3)
    before = REGISTRY.value("clarify_requests_refused_total", limit="ip", platform="teams")
    assert limits.ip_refused("teams", "192.0.2.1") is None
    limits.ip_failed("192.0.2.1")
    refused = limits.ip_refused("teams", "192.0.2.1")
    assert refused is not None and (refused.limit, refused.retry_after) == (Limit.IP, 4)
    assert limits.ip_refused("teams", "192.0.2.2") is None
    assert await limits.user_refused("teams", "anyone") is None  # off
    assert limits.busy("teams", 2) is None and limits.busy("teams", 3) is not None
    assert REGISTRY.value("clarify_requests_refused_total", limit="ip", platform="teams") \
        - before == 1


@contextlib.asynccontextmanager
async def replica(prefix: str) -> AsyncIterator[RedisStore]:
    client = aioredis.from_url(TEST_REDIS, decode_responses=True)
    try:
        yield RedisStore(client, prefix=prefix)
    finally:
        await client.aclose()


async def test_replicas_share_a_persons_bucket_in_redis() -> None:
    """Two web replicas on one Redis: a person's five callbacks are five, whichever replica
    took them; the key is hash-tagged and expires once the bucket would be full again."""
    clock, prefix = ManualClock(), f"t{uuid4().hex[:10]}"
    bucket = Bucket(0.1, 5)
    async with replica(prefix) as one, replica(prefix) as two:
        def limits(store: RedisStore) -> Limits:
            async def shared(key: str, b: Bucket, now: object) -> float:
                return await store.limit_admit(key, per_second=b.per_second, burst=b.burst,
                                               ttl_seconds=b.ttl_seconds, now=clock.now())

            return Limits(clock=clock, per_ip=Bucket(0, 1), per_user=bucket, max_tasks=0,
                          users=shared)

        a, b = limits(one), limits(two)
        verdicts = [await (a if n % 2 else b).user_refused("slack", "E0|U0SARAH")
                    for n in range(6)]
        assert verdicts[:5] == [None] * 5
        assert verdicts[5] is not None and verdicts[5].retry_after == 10
        assert await a.user_refused("slack", "E0|U0AHMED") is None
        client = aioredis.from_url(TEST_REDIS, decode_responses=True)
        try:
            keys = [str(k) for k in await client.keys(f"{prefix}:limit:*")]
            assert len(keys) == 2 and all(k.count("{") == 1 and k.endswith("}") for k in keys)
            assert "U0SARAH" not in "".join(keys)  # ids are hashed: no person named in a key
            assert 0 < await client.ttl(keys[0]) <= bucket.ttl_seconds == 51
            await client.delete(*keys)
        finally:
            await client.aclose()
        clock.advance(10)
        assert await b.user_refused("slack", "E0|U0SARAH") is None


async def test_health_and_metrics_bodies_are_bounded_and_refusals_are_metrics(
        tmp_path: Path, core_url: str) -> None:
    """The assembled service: a body on /healthz or /metrics over 1 KiB is a 413, declared or
    chunked; a small one is read and ignored; the refusal families are listed from the first
    scrape at zero for every limit and platform, and the limits come from the settings."""
    port = free_port()
    config = tmp_path / "c.toml"
    config.write_text(config_text(core=core_url, port=port, slack_api="http://127.0.0.1:9/api/",
                                  limits={"user_burst": 7, "trusted_proxy_hops": 1}))
    settings = load_settings(config, environ=SECRETS)

    async def chunks(data: bytes, size: int) -> AsyncIterator[bytes]:
        for start in range(0, len(data), size):
            yield data[start:start + size]

    before = REGISTRY.value("clarify_requests_refused_total", limit="body", platform="none")
    async with open_service(settings) as service:
        adapter = service.hosted[0].adapter  # type: ignore[attr-defined]
        assert (adapter.limits.per_user.burst, adapter.limits.proxy_hops) == (7, 1)
        runner = aiohttp.web.AppRunner(service.web_app, access_log=None)
        await runner.setup()
        await aiohttp.web.TCPSite(runner, "127.0.0.1", port).start()
        base = f"http://127.0.0.1:{port}"
        try:
            async with aiohttp.ClientSession() as http:
                declared = await http.get(f"{base}/healthz", data=b"x" * 2048)
                chunked = await http.get(f"{base}/metrics", data=chunks(b"x" * 4096, 500))
                posted = await http.post(f"{base}/healthz", data=chunks(b"x" * 4096, 500))
                small = await http.get(f"{base}/healthz", data=chunks(b"x" * 300, 100))
                scraped = await http.get(f"{base}/metrics")
                text = await scraped.text()
        finally:
            await runner.cleanup()
    assert [r.status for r in (declared, chunked, posted, small)] == [413, 413, 413, 200]
    assert await declared.json() == {"ok": False, "error": "too_large"}
    assert REGISTRY.value("clarify_requests_refused_total", limit="body", platform="none") \
        - before == 3
    families = {f.name: f for f in text_string_to_metric_families(text)}
    listed = {(s.labels["limit"], s.labels["platform"])
              for s in families["clarify_requests_refused"].samples}
    assert listed == {(k.value, p) for k in Limit for p in ("slack", "teams", "none")}
    tasks = {s.labels["platform"] for s in families["clarify_outstanding_tasks"].samples}
    assert tasks == {"slack", "teams"}


async def test_a_store_that_cannot_answer_lets_the_callback_through() -> None:
    """The shared bucket failing, or not answering within its time, skips the limit (the answer
    that follows needs the store and says so itself)."""
    from bot.store.errors import StoreUnavailable

    async def failing(key: str, bucket: Bucket, now: object) -> float:
        raise StoreUnavailable()

    async def stalled(key: str, bucket: Bucket, now: object) -> float:
        await asyncio.Event().wait()  # never answers: wait_for's deadline ends it
        return 0.0

    for users, seconds in ((failing, 0.5), (stalled, 0)):
        limits = Limits(clock=ManualClock(), per_ip=OFF, per_user=Bucket(1, 1), max_tasks=0,
                        users=users)
        with patch("bot.abuse_limits.USER_BUCKET_SECONDS", seconds):
            assert await limits.user_refused("slack", "E0|U0SARAH") is None

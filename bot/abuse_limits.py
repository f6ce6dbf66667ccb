"""Abuse limits on the callback endpoints, decided here and knowing no platform (the adapters
call them with the key they read or verified): docs/reliability.md, "Abuse limits".

- **Per IP, before verification**: a token bucket per client address, charged only by requests
  the edge refuses before or at verification (a bad signature or token, a malformed or oversized
  body). Slack and Microsoft send every callback from a handful of addresses, so a bucket charged
  by every request would have to be set so high it stopped nothing; charged by refusals, a
  platform's own traffic never spends it, and an address sending junk is refused (429) before
  its body is read or any signature checked. Per process: a flood of junk must cost no store
  call.
- **Per user, after verification**: a token bucket per verified person (Slack user, Teams AAD
  object id), charged by every callback they make. Shared by every web replica when the store
  is Redis (one script call; ``bot.store.redis.RedisStore.limit_admit``), per process otherwise.
- **Outstanding tasks**: work an adapter runs after acknowledging (``bot.aio.Tasks``) is capped;
  at the cap a new callback that could start some is refused (503) before anything is recorded.

A refusal is ``Throttled``: which limit, and whole seconds to wait (``Retry-After``); every one
is counted in ``clarify_requests_refused_total`` by limit and platform. Nothing here logs an
address, an id or a value.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

import structlog

from bot.clock import Clock
from bot.metrics import PLATFORMS, REGISTRY
from bot.store.errors import StoreError

log = structlog.get_logger("clarify.limits")
USER_BUCKET_SECONDS = 0.5  # a shared bucket slower than this is skipped (Slack allows 3 s)
BUSY_RETRY_SECONDS = 5  # what a refusal at the task cap asks the platform to wait
LOCAL_KEYS = 100_000  # per-process buckets kept at most (least recently used dropped: full)
REFUSED = "clarify_requests_refused_total"


class Limit(StrEnum):
    IP = "ip"
    USER = "user"
    BODY = "body"
    TASKS = "tasks"


REGISTRY.preset(REFUSED, limit=Limit, platform=(*PLATFORMS, "none"))


@dataclass(frozen=True, slots=True)
class Bucket:
    """A token bucket's shape: ``per_second`` refill (0: the limit is off) up to ``burst``."""

    per_second: float
    burst: int

    @property
    def off(self) -> bool:
        return self.per_second <= 0

    @property
    def ttl_seconds(self) -> int:
        """How long until an untouched bucket is full again (then it need not be kept)."""
        return math.ceil(self.burst / self.per_second) + 1


OFF = Bucket(0, 1)


@dataclass(frozen=True, slots=True)
class Throttled:
    limit: Limit
    retry_after: int  # whole seconds, at least 1


# a shared bucket: key, shape, now -> 0 when a token was taken, else seconds until one is there
Admit = Callable[[str, Bucket, datetime], Awaitable[float]]


class LocalBuckets:
    """Token buckets in this process, at most ``max_keys`` (the least recently used is dropped,
    which only ever refills it)."""

    def __init__(self, clock: Clock, *, max_keys: int = LOCAL_KEYS) -> None:
        self._clock = clock
        self._max_keys = max_keys
        self._buckets: dict[str, tuple[float, float]] = {}  # key -> (tokens, at), insertion LRU

    def wait(self, key: str, bucket: Bucket) -> float:
        """Seconds until the bucket has a token (0: it has one now); takes nothing."""
        tokens = self._tokens(key, bucket)[0]
        return 0.0 if tokens >= 1 else (1 - tokens) / bucket.per_second

    def charge(self, key: str, bucket: Bucket) -> None:
        """Take a token (down to none)."""
        tokens, now = self._tokens(key, bucket)
        self._keep(key, (max(tokens - 1, 0.0), now))

    async def admit(self, key: str, bucket: Bucket, _: datetime) -> float:
        """Take a token if there is one: 0; else seconds until there is (nothing taken)."""
        wait = self.wait(key, bucket)
        if wait == 0:
            self.charge(key, bucket)
        return wait

    def _tokens(self, key: str, bucket: Bucket) -> tuple[float, float]:
        now = self._clock.now().timestamp()
        tokens, at = self._buckets.get(key, (float(bucket.burst), now))
        return min(float(bucket.burst), tokens + max(now - at, 0.0) * bucket.per_second), now

    def _keep(self, key: str, state: tuple[float, float]) -> None:
        self._buckets.pop(key, None)
        self._buckets[key] = state
        while len(self._buckets) > self._max_keys:
            del self._buckets[next(iter(self._buckets))]


class Limits:
    """The limits one process applies; ``users``: the shared per-user buckets (the Redis
    store's), else this process's own."""

    def __init__(self, *, clock: Clock, per_ip: Bucket, per_user: Bucket, max_tasks: int,
                 users: Admit | None = None, proxy_hops: int = 0) -> None:
        self.clock = clock
        self.per_ip, self.per_user, self.max_tasks = per_ip, per_user, max_tasks
        self.proxy_hops = proxy_hops  # trusted proxies appending to X-Forwarded-For
        self._ips = LocalBuckets(clock)
        self._users: Admit = users or LocalBuckets(clock).admit

    @classmethod
    def off(cls, clock: Clock) -> Limits:
        """No rate limit and no task cap (tests of other things, benchmarks)."""
        return cls(clock=clock, per_ip=OFF, per_user=OFF, max_tasks=0)

    def ip_refused(self, platform: str, address: str | None) -> Throttled | None:
        """Before anything is read: has this address used up its refusals?"""
        if self.per_ip.off or address is None:
            return None
        wait = self._ips.wait(address, self.per_ip)
        return self._refused(Limit.IP, platform, wait) if wait > 0 else None

    def ip_failed(self, address: str | None) -> None:
        """The edge refused a request from this address before or at verification."""
        if not self.per_ip.off and address is not None:
            self._ips.charge(address, self.per_ip)

    async def user_refused(self, platform: str, user_key: str) -> Throttled | None:
        """After verification: one callback of this person's (``user_key``: the verified ids).
        A store that cannot answer within ``USER_BUCKET_SECONDS`` lets the callback through
        (what follows needs the store and fails visibly without it, inside the platform's
        deadline)."""
        if self.per_user.off:
            return None
        key = hashlib.sha256(f"{platform}|{user_key}".encode()).hexdigest()[:32]
        try:
            wait = await asyncio.wait_for(self._users(key, self.per_user, self.clock.now()),
                                          USER_BUCKET_SECONDS)
        except (StoreError, TimeoutError) as exc:
            log.warning("limits.user_bucket_unavailable", error=type(exc).__name__)
            return None
        return self._refused(Limit.USER, platform, wait) if wait > 0 else None

    def busy(self, platform: str, outstanding: int) -> Throttled | None:
        """At the cap of outstanding tasks: new work is refused, never queued."""
        if self.max_tasks <= 0 or outstanding < self.max_tasks:
            return None
        return self._refused(Limit.TASKS, platform, BUSY_RETRY_SECONDS)

    def _refused(self, limit: Limit, platform: str, wait: float) -> Throttled:
        count_refusal(limit, platform)
        return Throttled(limit, max(1, math.ceil(wait)))


def count_refusal(limit: Limit, platform: str) -> None:
    """Count one refusal (the edges count ``Limit.BODY`` themselves, through this)."""
    REGISTRY.inc(REFUSED, limit=limit.value, platform=platform)

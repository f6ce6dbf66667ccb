"""Token buckets shared by replicas: the platforms' rate limits (``rate_take``, ``rate_block``)
and, on Redis, the per-person abuse limit (``limit_admit``, ``bot.abuse_limits``). On Redis each
bucket is one hash and each step one script; in memory one lock stands in for them."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from bot.clock import Clock
from bot.store import codec
from bot.store import keys as k
from bot.store.errors import translated
from bot.store.expiring import Expiring
from bot.store.group import GroupCommit

if TYPE_CHECKING:  # redis-py's asyncio client, named for types only (bot.store.redis loads it)
    import redis.asyncio as aioredis
    from redis.asyncio.cluster import RedisCluster

_RATE_TTL = 3600


class RateBuckets(Protocol):
    async def rate_take(self, bucket: str, *, rate_per_second: float, burst: int,
                        now: datetime, reserve: int = 0) -> float:
        """Take one token; returns how many seconds to wait before using it (0: go now).

        With ``reserve`` (bulk work), a token is taken only when ``reserve`` remain after it;
        otherwise nothing is taken and the answer is how long until then: ask again after it.
        """
        ...

    async def rate_block(self, bucket: str, *, seconds: float, rate_per_second: float,
                         burst: int, now: datetime) -> None:
        """The platform said 429: nobody takes from this bucket for ``seconds``."""
        ...


# A token bucket's state (hash: tokens, at) read and refilled up to now, for the two scripts
# below: KEYS[1] the bucket, ARGV[1] rate per second, ARGV[2] burst, ARGV[3] now.
_REFILL = """
local t = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local rate, burst, now = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local tokens = tonumber(t[1]) or burst
local at = tonumber(t[2]) or now
if now > at then
  tokens = math.min(burst, tokens + (now - at) * rate)
  at = now
end
"""


# KEYS: bucket | ARGV: rate per second, burst, now, ttl, block seconds (0: take one token),
#   reserve (tokens the take must leave; 0: none)
# -> seconds to wait before the taken token may be used ("0" when now); a token bucket that lets
#    callers go into debt, so that concurrent callers across replicas queue up fairly. With a
#    reserve (bulk work) nothing is taken while fewer than reserve + 1 tokens are there: the
#    answer is how long until there will be, and the caller asks again then.
RATE_TAKE = _REFILL + """
local block = tonumber(ARGV[5])
local reserve = tonumber(ARGV[6]) or 0
if block <= 0 and reserve > 0 and tokens - 1 < reserve then
  return tostring((reserve + 1 - tokens) / rate)
end
if block > 0 then
  tokens = math.min(tokens, -block * rate)
else
  tokens = tokens - 1
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(at))
redis.call('EXPIRE', KEYS[1], ARGV[4])
if tokens >= 0 then return '0' end
return tostring(-tokens / rate)
"""


# KEYS: bucket | ARGV: rate per second, burst, now, ttl
# -> "0": admitted, one token taken; else seconds until there is a token (nothing taken): the
#    per-person abuse limit (bot.abuse_limits), which refuses rather than queues
LIMIT_ADMIT = _REFILL + """
if tokens < 1 then return tostring((1 - tokens) / rate) end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens - 1), 'at', tostring(at))
redis.call('EXPIRE', KEYS[1], ARGV[4])
return '0'
"""


class RedisRates:
    """``RateBuckets`` (and the abuse limit's buckets) for ``RedisStore`` (which provides
    ``_redis`` and ``_keys``)."""

    _redis: aioredis.Redis | RedisCluster
    _keys: k.Keys

    def _rate_scripts(self) -> None:
        self._rate_take = self._redis.register_script(RATE_TAKE)
        self._limit_admit = GroupCommit(self._redis, self._redis.register_script(LIMIT_ADMIT))

    @translated
    async def rate_take(self, bucket: str, *, rate_per_second: float, burst: int,
                        now: datetime, reserve: int = 0) -> float:
        wait = await self._rate_take(keys=[self._keys.rate(bucket)], args=[
            rate_per_second, burst, codec.num(codec.epoch(now)), _RATE_TTL, 0, reserve])
        return float(wait)

    @translated
    async def rate_block(self, bucket: str, *, seconds: float, rate_per_second: float,
                         burst: int, now: datetime) -> None:
        await self._rate_take(keys=[self._keys.rate(bucket)], args=[
            rate_per_second, burst, codec.num(codec.epoch(now)), _RATE_TTL, seconds, 0])

    @translated
    async def limit_admit(self, bucket: str, *, per_second: float, burst: int, ttl_seconds: int,
                          now: datetime) -> float:
        """One callback's token from an abuse-limit bucket (``bot.abuse_limits``): 0 when taken,
        else seconds until there is one (nothing taken); sent with the others of this turn."""
        wait = await self._limit_admit(keys=[self._keys.limit(bucket)], args=[
            codec.num(per_second), burst, codec.num(codec.epoch(now)), ttl_seconds])
        return float(wait)


class MemoryRates:
    """``RateBuckets`` for ``MemoryStore`` (one lock stands in for the scripts)."""

    _lock: Any

    def _init_rates(self, clock: Clock) -> None:
        self._buckets: Expiring[str, tuple[float, datetime]] = Expiring(clock)

    async def rate_take(self, bucket: str, *, rate_per_second: float, burst: int,
                        now: datetime, reserve: int = 0) -> float:
        return await self._rate(bucket, rate_per_second, burst, now, block=0.0, reserve=reserve)

    async def rate_block(self, bucket: str, *, seconds: float, rate_per_second: float,
                         burst: int, now: datetime) -> None:
        await self._rate(bucket, rate_per_second, burst, now, block=seconds)

    async def _rate(self, bucket: str, rate: float, burst: int, now: datetime, *,
                    block: float, reserve: int = 0) -> float:
        async with self._lock:
            tokens, at = self._buckets.get(bucket) or (float(burst), now)
            if now > at:
                tokens = min(float(burst), tokens + (now - at).total_seconds() * rate)
                at = now
            if reserve > 0 and block <= 0 and tokens - 1 < reserve:
                self._buckets.put(bucket, (tokens, at), _RATE_TTL)
                return (reserve + 1 - tokens) / rate  # nothing taken: ask again then
            tokens = min(tokens, -block * rate) if block > 0 else tokens - 1
            self._buckets.put(bucket, (tokens, at), _RATE_TTL)
            return 0.0 if tokens >= 0 else -tokens / rate

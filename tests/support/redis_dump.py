"""Every key, hash field, member and value under a prefix as one text: what the erasure tests
search for a person's identifiers (nothing may be left that names them)."""

from __future__ import annotations

import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster


async def every_key_and_value(client: aioredis.Redis | RedisCluster, prefix: str) -> str:
    parts: list[str] = []
    async for name in client.scan_iter(match=f"{prefix}:*"):
        parts.append(name)
        kind = await client.type(name)
        if kind == "string":
            parts.append(str(await client.get(name)))
        elif kind == "hash":
            parts += [f"{k}={v}" for k, v in (await client.hgetall(name)).items()]
        elif kind == "zset":
            parts += await client.zrange(name, 0, -1)
        elif kind == "set":
            parts += list(await client.smembers(name))
        elif kind == "list":
            parts += await client.lrange(name, 0, -1)
        else:
            parts.append(f"<{kind}>")
    return "\n".join(parts)

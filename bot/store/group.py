"""Concurrent calls of one script, sent to Redis together (the outbox's acceptance)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, cast

import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster
from redis.commands.core import AsyncScript
from redis.exceptions import NoScriptError

Client = aioredis.Redis | RedisCluster

class GroupCommit:
    """Concurrent calls of one script, sent together: every call made in one turn of the event
    loop goes to Redis in one pipeline. Under a burst of clicks each acknowledgement then waits
    for one round trip shared with the others, instead of a pooled connection and a round trip
    of its own (which on a busy host costs more than the script itself). A cluster client
    pipelines no scripts: there the calls go concurrently, each on its own."""

    def __init__(self, redis: Client, script: AsyncScript) -> None:
        self._redis = redis
        self._script = script
        self._waiting: list[tuple[Sequence[str], Sequence[str | int], asyncio.Future[Any]]] = []
        self._sending: set[asyncio.Task[None]] = set()

    async def __call__(self, *, keys: Sequence[str], args: Sequence[str | int]) -> Any:
        loop = asyncio.get_running_loop()
        done: asyncio.Future[Any] = loop.create_future()
        self._waiting.append((keys, args, done))
        if len(self._waiting) == 1:
            loop.call_soon(self._send_waiting)
        return await done

    def _send_waiting(self) -> None:
        batch, self._waiting = self._waiting, []
        task = asyncio.ensure_future(self._send(batch))
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)

    async def _send(self, batch: list[tuple[Sequence[str], Sequence[str | int],
                                            asyncio.Future[Any]]]) -> None:
        try:
            if isinstance(self._redis, RedisCluster):  # the script reloads itself when needed
                results = list(await asyncio.gather(*(self._script(keys=keys, args=args)
                                                      for keys, args, _ in batch),
                                                    return_exceptions=True))
            elif len(batch) == 1:  # alone: a plain call is cheaper than a pipeline of one
                keys, args, _ = batch[0]
                results = [await self._script(keys=keys, args=args)]
            else:
                results = await self._pipeline(batch)
            if any(isinstance(r, NoScriptError) for r in results):  # Redis forgot it: restarted
                await self._redis.script_load(self._script.script)
                results = await self._pipeline(batch)
        except Exception as exc:  # every caller gets it; none is left waiting
            results = [exc] * len(batch)
        for (_, _, done), result in zip(batch, results, strict=True):
            if done.done():
                continue  # the caller went away
            if isinstance(result, BaseException):
                done.set_exception(result)
            else:
                done.set_result(result)

    async def _pipeline(self, batch: list[tuple[Sequence[str], Sequence[str | int],
                                                asyncio.Future[Any]]]) -> list[Any]:
        assert isinstance(self._redis, aioredis.Redis)
        async with self._redis.pipeline(transaction=False) as pipe:
            for keys, args, _ in batch:
                pipe.evalsha(self._script.sha, len(keys), *keys, *args)
            return cast(list[Any], await pipe.execute(raise_on_error=False))

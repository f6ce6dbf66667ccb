"""Concurrent calls of one script, sent to Redis together (the outbox's acceptance)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
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

    def __init__(self, redis: Client, script: AsyncScript, *,
                 wait: tuple[int, int] | None = None,
                 on_short: Callable[[int], None] | None = None) -> None:
        """``wait``: (replicas, milliseconds) to hold every batch for with WAIT, sent in the
        batch's own pipeline (WAIT counts the writes of the connection it is sent on); a batch
        fewer replicas acknowledged in time is told to ``on_short`` with its number of calls.
        One server (or Sentinel's master) only: a cluster client pipelines no scripts."""
        self._redis = redis
        self._script = script
        self._wait = wait if wait and wait[0] > 0 and not isinstance(redis, RedisCluster) \
            else None
        self._on_short = on_short
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
            elif len(batch) == 1 and self._wait is None:  # alone: a plain call is cheaper
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
            if self._wait is not None:
                pipe.execute_command("WAIT", *self._wait)
            results = cast(list[Any], await pipe.execute(raise_on_error=False))
        if self._wait is None:
            return results
        acked = results.pop()
        if self._on_short is not None and (not isinstance(acked, int) or acked < self._wait[0]):
            self._on_short(len(batch))
        return results

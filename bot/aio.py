"""Small asyncio helpers shared by the worker and the adapters."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterator, Set
from typing import Any

import structlog

from bot.metrics import REGISTRY

log = structlog.get_logger("clarify.tasks")


async def drain(tasks: Set[asyncio.Task[object]] | Set[asyncio.Task[None]]) -> None:
    """Wait until every task in the (growing) set has finished.

    Only unfinished tasks are awaited: a finished task stays in the set until its done callback
    runs, and awaiting finished tasks alone never yields to the loop, so a loop on the set itself
    could spin forever without letting that callback run.
    """
    while pending := [t for t in tasks if not t.done()]:
        await asyncio.gather(*pending, return_exceptions=True)


class Tasks:
    """The work an adapter runs after acknowledging a callback: kept until done (so it is not
    collected mid-way and ``drain`` can wait for it), a failure logged by type only, and counted
    in ``clarify_outstanding_tasks`` for its platform (the cap is
    ``bot.abuse_limits.Limits.busy``)."""

    def __init__(self, platform: str, *, counted: bool = True) -> None:
        self.platform = platform
        self.counted = counted  # in clarify_outstanding_tasks (an adapter's work after an ack)
        self._tasks: set[asyncio.Task[Any]] = set()

    def spawn[T](self, work: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._finished)
        self._count()
        return task

    def _count(self) -> None:
        if self.counted:
            REGISTRY.set("clarify_outstanding_tasks", len(self._tasks), platform=self.platform)

    def _finished(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        self._count()
        if not task.cancelled() and (failure := task.exception()) is not None:
            log.error(f"{self.platform}.task_failed", error=type(failure).__name__)

    def __len__(self) -> int:
        return len(self._tasks)

    def __iter__(self) -> Iterator[asyncio.Task[Any]]:
        return iter(set(self._tasks))

    async def drain(self) -> None:
        """Wait for every task, those started meanwhile too (tests, shutdown)."""
        await drain(self._tasks)

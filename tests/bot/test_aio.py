"""drain: waits for running tasks and never spins on finished ones."""

from __future__ import annotations

import asyncio

from bot.aio import drain


async def test_drain_returns_when_only_finished_tasks_remain() -> None:
    """A finished task still in the set (its done callback not run yet) does not hang drain."""
    finished = asyncio.create_task(asyncio.sleep(0))
    await finished
    await asyncio.wait_for(drain({finished}), timeout=2)


async def test_drain_waits_for_tasks_added_while_it_waits() -> None:
    """Tasks spawned by running tasks are waited for too."""
    tasks: set[asyncio.Task[None]] = set()
    done: list[str] = []

    async def second() -> None:
        done.append("second")

    async def first() -> None:
        task = asyncio.create_task(second())
        tasks.add(task)
        task.add_done_callback(tasks.discard)
        done.append("first")

    task = asyncio.create_task(first())
    tasks.add(task)
    task.add_done_callback(tasks.discard)
    await asyncio.wait_for(drain(tasks), timeout=2)
    assert done == ["first", "second"]

"""Small asyncio helpers shared by the worker and the adapters."""

from __future__ import annotations

import asyncio
from collections.abc import Set


async def drain(tasks: Set[asyncio.Task[object]] | Set[asyncio.Task[None]]) -> None:
    """Wait until every task in the (growing) set has finished.

    Only unfinished tasks are awaited: a finished task stays in the set until its done callback
    runs, and awaiting finished tasks alone never yields to the loop, so a loop on the set itself
    could spin forever without letting that callback run.
    """
    while pending := [t for t in tasks if not t.done()]:
        await asyncio.gather(*pending, return_exceptions=True)

"""A reference core on its own thread, for the blocking calls of schemathesis and hypothesis."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import pytest

from bot.clock import ManualClock
from devcore.server import build_core, serve
from tests.conftest import START


@pytest.fixture(scope="module")
def live_core() -> Iterator[str]:
    """A reference core served from a thread of its own; yields its base URL."""
    ready = threading.Event()
    found: list[tuple[str, asyncio.AbstractEventLoop, asyncio.Event]] = []

    async def main() -> None:
        done = asyncio.Event()
        async with serve(build_core("acme", clock=ManualClock(START))) as url:
            found.append((url, asyncio.get_running_loop(), done))
            ready.set()
            await done.wait()

    thread = threading.Thread(target=lambda: asyncio.run(main()), daemon=True)
    thread.start()
    assert ready.wait(10)
    url, loop, done = found[0]
    yield url
    loop.call_soon_threadsafe(done.set)
    thread.join(10)

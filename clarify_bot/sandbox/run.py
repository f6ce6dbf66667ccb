"""``clarify-bot sandbox``: the world and its page, until Ctrl-C or SIGTERM."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import AsyncIterator, Callable
from pathlib import Path

from aiohttp import web

from clarify_bot.sandbox.page import page_app
from clarify_bot.sandbox.world import HOST, Sandbox, open_world


@contextlib.asynccontextmanager
async def open_sandbox(*, scenario: str | Path = "sandbox", port: int = 0
                       ) -> AsyncIterator[tuple[str, Sandbox]]:
    """The sandbox running, and its page's URL (``port`` 0: a free one)."""
    async with open_world(scenario) as world:
        runner = web.AppRunner(page_app(world), access_log=None)
        await runner.setup()
        try:
            await web.TCPSite(runner, HOST, port).start()
            yield f"http://{HOST}:{runner.addresses[0][1]}/", world
        finally:
            await runner.cleanup()


async def run_sandbox(*, scenario: str | Path, port: int, echo: Callable[[str], None],
                      opened: Callable[[str], object] | None = None) -> None:
    async with open_sandbox(scenario=scenario, port=port) as (url, world):
        echo(f"clarify-bot sandbox: {url}")
        echo(f"  the real bot at {world.bot_url}, the reference core at {world.core_url}, "
             f"the local Slack at {world.slack.url}")
        echo("  open the page in a browser; Ctrl-C stops everything")
        if opened is not None:
            opened(url)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
        echo("clarify-bot sandbox: stopping")

"""The reference core on a thread of its own, so `clarify-bot clarify` (which runs its own event
loop) can talk to it over HTTP; one fresh core per test, since commands change its state."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest
from click.testing import CliRunner, Result

from bot.clock import ManualClock
from clarify_bot.cli import main
from devcore.core import ReferenceCore
from devcore.server import build_core, serve
from tests.conftest import START


@dataclass
class LiveCore:
    url: str
    core: ReferenceCore
    clock: ManualClock
    contract: str = "full"  # what the reference core serves


@pytest.fixture
def live(contract: str) -> Iterator[LiveCore]:
    clock = ManualClock(START)
    core = build_core("acme", clock=clock)
    ready = threading.Event()
    found: list[tuple[str, asyncio.AbstractEventLoop, asyncio.Event]] = []

    async def run() -> None:
        done = asyncio.Event()
        async with serve(core, contract=contract) as url:
            found.append((url, asyncio.get_running_loop(), done))
            ready.set()
            await done.wait()

    thread = threading.Thread(target=lambda: asyncio.run(run()), daemon=True)
    thread.start()
    assert ready.wait(10)
    url, loop, done = found[0]
    yield LiveCore(url=url, core=core, clock=clock, contract=contract)
    loop.call_soon_threadsafe(done.set)
    thread.join(10)


Cli = Callable[..., Result]


@pytest.fixture
def cli(live: LiveCore) -> Cli:
    """``cli(key, "ls", "--state", "open", env={...})``: the console script, as the key's person."""

    def invoke(key: str | None, *args: str, env: dict[str, str] | None = None,
               json_out: bool = False, input: str | None = None) -> Result:
        environ = {"CLARIFY_BOT_CONFIG": "", "CLARIFY_BOT_CORE__URL": live.url,
                   "CLARIFY_BOT_API_KEY": key or "", "CLARIFY_BOT_CORE_TOKEN": "",
                   **(env or {})}
        flags = ["--json"] if json_out else []
        return CliRunner().invoke(main, ["clarify", *flags, *args], env=environ, input=input)

    return invoke

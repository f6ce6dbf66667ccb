"""Serving the reference core: a context manager for tests and the demo, and a blocking run."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from aiohttp import web

from bot.clock import OffsetClock
from devcore.app import create_app
from devcore.core import Contract, ContractSwitch, ReferenceCore, load_scenario
from devcore.paging import MAX_LIMIT
from devcore.people import apply_people, read_people
from devcore.scenario import read_scenario
from devcore.state import MovableClock

MAX_LINE = 64 * 1024


@contextlib.asynccontextmanager
async def serve(
    core: ReferenceCore, *, host: str = "127.0.0.1", port: int = 0,
    contract: Contract | str | ContractSwitch = Contract.FULL,
) -> AsyncIterator[str]:
    """Run the core's HTTP app until the block ends; yields its base URL. ``contract``: the
    full contract, or only the baseline every core offers (a ``ContractSwitch`` to change it
    while it runs)."""
    # Request lines and headers up to 64 KiB reach the app, so every parameter the contract allows
    # (percent-encoded, at up to 12 bytes a character) gets a coded answer, not aiohttp's text 400.
    chosen = contract if isinstance(contract, ContractSwitch) else Contract(contract)
    runner = web.AppRunner(create_app(core, contract=chosen), access_log=None,
                           max_line_size=MAX_LINE,
                           max_field_size=MAX_LINE)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    bound = runner.addresses[0][1]
    try:
        yield f"http://{host}:{bound}"
    finally:
        await runner.cleanup()


def build_core(
    scenario: str | Path | None = None, *, clock: MovableClock | None = None,
    people: Path | None = None, largest_page: int = MAX_LIMIT,
) -> ReferenceCore:
    """A core loaded with the scenario; ``people`` maps its people to real chat ids first;
    ``largest_page`` caps every list's pages."""
    data = read_scenario(scenario)
    if people is not None:
        data = apply_people(data, read_people(people))
    core = ReferenceCore(clock=clock or OffsetClock(), largest_page=largest_page)
    load_scenario(core, data)
    return core


def run(*, scenario: str | Path | None, host: str, port: int,
        people: Path | None = None, contract: Contract | str = Contract.FULL,
        largest_page: int = MAX_LIMIT) -> None:  # pragma: no cover - CLI
    async def main() -> None:
        core = build_core(scenario, people=people, largest_page=largest_page)
        async with serve(core, host=host, port=port, contract=contract) as url:
            if Contract(contract) is Contract.BASELINE:
                print(f"reference core listening on {url} (baseline contract only: no "
                      "extensions, no OpenAPI document)", flush=True)
            else:
                print(f"reference core listening on {url} (contract at {url}/openapi.json)",
                      flush=True)
            if people is not None:
                mapped = ", ".join(sorted(read_people(people)))
                print(f"people mapped to real chat ids from {people}: {mapped}", flush=True)
            await asyncio.Event().wait()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main())

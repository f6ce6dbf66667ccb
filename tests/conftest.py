"""Fixtures shared by every test: the reference core over real HTTP on 127.0.0.1, with a clock."""

from __future__ import annotations

import asyncio
import gc
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import structlog
from redis._parsers.commands import AsyncCommandsParser

from bot.clock import ManualClock
from bot.core.client import CoreClient, RetryPolicy
from bot.core.extensions import ALL
from bot.logs import reset_logging
from devcore.client import DevCoreClient
from devcore.core import ReferenceCore
from devcore.server import build_core, serve
from tests.support.processes import devcore_url, processes  # noqa: F401 (fixtures for every test)
from tests.support.redis_cluster import LocalCluster, free_ports, have_redis_server

CLARIFY_TOKEN = "dev-clarify-token-acme"
INGEST_TOKEN = "dev-ingest-token-acme"
DEV_TOKEN = "dev-admin-token-local"
START = datetime(2026, 7, 6, 9, 0, tzinfo=UTC)
# where the suite's local Redis Cluster may listen: its three masters take the first free ports
# of this range (and their bus ports, 10000 above); CLARIFY_TEST_CLUSTER_PORTS=low-high moves it
CLUSTER_PORTS = os.environ.get("CLARIFY_TEST_CLUSTER_PORTS", "20201-20299")


# Every context an event loop reported for a task or future whose exception nobody retrieved.
# Recorded at the loop (not the ``asyncio`` logger, which a command under test may reconfigure).
_UNRETRIEVED: list[dict[str, Any]] = []
_report = asyncio.BaseEventLoop.call_exception_handler


def _recording(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    if "never retrieved" in str(context.get("message", "")):
        _UNRETRIEVED.append(context)
    _report(loop, context)  # type: ignore[arg-type]


asyncio.BaseEventLoop.call_exception_handler = _recording  # type: ignore[method-assign]


@pytest.fixture(autouse=True)
def _no_unretrieved_task_exceptions() -> Iterator[None]:
    """A test fails when a task it started ended with an exception nobody retrieved.

    A finished task reports its lost exception when it is collected, so the check collects at
    teardown, then freezes what survived: the next collection walks only what later tests make,
    and the suite's run time does not grow with every test it has already run.
    """
    _UNRETRIEVED.clear()
    yield
    gc.collect()
    gc.freeze()
    found, _UNRETRIEVED[:] = list(_UNRETRIEVED), []
    if found:
        shown = "; ".join(f"{c.get('message')}: {c.get('exception')!r}" for c in found)
        pytest.fail(f"Task exception was never retrieved ({len(found)}): {shown}")


@pytest.fixture(autouse=True)
def _fresh_logging() -> Iterator[None]:
    """A command under test may configure structlog; no test inherits another's set-up."""
    yield
    structlog.reset_defaults()
    reset_logging()


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)


# the folders whose tests run against both contracts the reference core serves: the full one,
# and the baseline every core offers (docs/core-contract.md); a test marked ``full_contract``
# (it is about an extension itself) runs against the full one only. The baseline's second run
# of a test is ``slow``: ``./dev test --fast`` runs each test once, against the full contract
BOTH_CONTRACTS = ("engine", "slack", "teams", "cli", "bot", "process", "answering", "interaction")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "contract" not in metafunc.fixturenames:
        return
    if metafunc.definition.get_closest_marker("baseline_contract") is not None:
        metafunc.parametrize("contract", ["baseline"], indirect=True)
        return
    folder = Path(str(metafunc.definition.path)).parent.name
    if folder in BOTH_CONTRACTS and metafunc.definition.get_closest_marker("full_contract") \
            is None:
        metafunc.parametrize("contract", ["full", pytest.param("baseline", marks=pytest.mark.slow)],
                             indirect=True)


@pytest.fixture
def contract(request: pytest.FixtureRequest) -> str:
    """The contract the reference core serves: "full" or "baseline" (``BOTH_CONTRACTS``)."""
    return str(getattr(request, "param", "full"))


def extensions_for(contract: str) -> frozenset[Any] | None:
    """The bot client's extensions: against the baseline core it finds out, as the service does by
    default; against the full core every extension is assumed, the client's own default (no
    discovery)."""
    return None if contract == "baseline" else ALL


@pytest.fixture
def core(clock: ManualClock) -> ReferenceCore:
    return build_core("acme", clock=clock)


@pytest.fixture
async def core_url(core: ReferenceCore, contract: str) -> AsyncIterator[str]:
    async with serve(core, contract=contract) as url:
        yield url


@pytest.fixture
async def bot_client(core_url: str, contract: str, clock: ManualClock
                     ) -> AsyncIterator[CoreClient]:
    """The bot's own client: clarify-audience service token, no retries (tests see every error)."""
    async with CoreClient(
        base_url=core_url, token=CLARIFY_TOKEN, retry=RetryPolicy(max_attempts=1),
        extensions=extensions_for(contract), clock=clock,
    ) as client:
        yield client


@pytest.fixture
async def truth_url(core: ReferenceCore, contract: str, core_url: str) -> AsyncIterator[str]:
    """The same reference core over the full contract: what it recorded, for a test to check
    (a baseline core's answers leave most of it out)."""
    if contract == "full":
        yield core_url
        return
    async with serve(core, contract="full") as url:
        yield url


@pytest.fixture
async def truth(truth_url: str) -> AsyncIterator[CoreClient]:
    """A clarify-audience client reading the core's full record (``truth_url``): for checking
    what the core recorded, never given to the bot."""
    async with CoreClient(base_url=truth_url, token=CLARIFY_TOKEN,
                          retry=RetryPolicy(max_attempts=1)) as client:
        yield client


@pytest.fixture
async def dev_client(core_url: str) -> AsyncIterator[DevCoreClient]:
    async with DevCoreClient(
        base_url=core_url, token=DEV_TOKEN, retry=RetryPolicy(max_attempts=1)
    ) as client:
        yield client


@pytest.fixture
async def client_for(core_url: str) -> AsyncIterator[Callable[[str], CoreClient]]:
    """Clients for other tokens (API keys, the ingest audience), closed after the test."""
    made: list[CoreClient] = []

    def make(token: str) -> CoreClient:
        client = CoreClient(base_url=core_url, token=token, retry=RetryPolicy(max_attempts=1))
        made.append(client)
        return client

    yield make
    for client in made:
        await client.aclose()


@pytest.fixture(scope="session")
def redis_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """Three local masters on free ports of ``CLUSTER_PORTS``, started once for the session on
    first use (skipped only without redis-server)."""
    if not have_redis_server():
        pytest.skip("needs redis-server and redis-cli (Debian: redis-server, redis-tools)")
    workdir = Path(tmp_path_factory.mktemp("redis-cluster"))
    low, _, high = CLUSTER_PORTS.partition("-")
    ports = free_ports(3, low=int(low), high=int(high or low))
    with LocalCluster(ports, workdir=workdir) as cluster, \
            pytest.MonkeyPatch.context() as mp:
        mp.setattr(AsyncCommandsParser, "initialize", _command_table_read_once())
        yield cluster


def _command_table_read_once() -> Callable[..., Awaitable[None]]:
    """A cluster client starts by reading and parsing the server's whole command table (about
    0.1 s of CPU); the suite's clients all talk to the same servers, so one read serves all."""
    original = AsyncCommandsParser.initialize
    table: dict[str, Any] = {}

    async def initialize(self: AsyncCommandsParser, node: Any = None) -> None:
        if not table:
            await original(self, node)
            table.update(self.commands)
        if node:
            self.node = node
        self.commands = dict(table)

    return initialize

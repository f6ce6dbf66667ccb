"""The delivery engine against the reference core over HTTP, with a recording channel.

Each test gets a fresh reference core (``acme`` scenario, manual clock), a store (memory, or a real
Redis on database 14 with a key prefix of its own), the engine wired as in production, and helpers
to create clarifications and to move time.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any
from uuid import uuid4

import pytest
import redis.asyncio as aioredis

from adapters.slack.render import render
from bot.audit import AuditSink, MemorySink
from bot.channel import Channel
from bot.channels.recording import RecordingChannel, SentMessage
from bot.clock import ManualClock
from bot.core.client import CoreClient, RetryPolicy
from bot.process.runtime import Engine, EngineParts, build_engine
from bot.process.worker import WorkerConfig
from bot.reach.recording import ReachRecorder
from bot.settings import ClarifySettings, SlackSettings, SlackWorkspace
from bot.store.base import Store
from bot.store.memory import MemoryStore
from bot.store.redis import RedisStore
from cards.actions import ActionCodec
from devcore.client import DevCoreClient
from devcore.core import ReferenceCore, load_scenario
from devcore.scenario import read_scenario
from tests.redis_url import TEST_REDIS
from tests.support.rigs import Drives, new_clarification  # noqa: F401 (the tests import it here)

if TYPE_CHECKING:
    from tests.engine.kit import Restart

REDIS_URL = f"{TEST_REDIS}/14"
ACME_SLACK = SlackSettings(
    workspaces=(
        SlackWorkspace(team_id="T0ACME", enterprise_id="E0ACME", tenant="acme"),
        SlackWorkspace(team_id="T0GLOBEX", tenant="globex"),
    )
)
CODEC = ActionCodec(b"engine tests signing key, 32+ bytes long")


async def no_sleep(_: float) -> None:
    return None


@dataclass
class Rig(Drives):
    core: ReferenceCore
    clock: ManualClock
    bot: CoreClient  # reads what the core recorded (the full contract: the test's view)
    dev: DevCoreClient
    channel: RecordingChannel
    sink: MemorySink
    store: Store
    engine: Engine
    contract: str = "full"  # what the reference core serves the bot

    def rendered(self, sent: SentMessage) -> str:
        """The message as Slack would receive it: what a person could read."""
        return json.dumps(render(sent.message, codec=CODEC), ensure_ascii=False)

    def events(self, type_: str, clarification_id: str | None = None) -> list[Any]:
        return [
            ev
            for ev in self.sink.of(type_)
            if clarification_id is None or ev.clarification_id == clarification_id
        ]


def clarify_settings(**overrides: Any) -> ClarifySettings:
    """The spec's settings for slack; working hours off unless a test sets ``hours`` (the
    rig's clock starts on a Saturday: tests/engine/test_working_hours.py is about the hours)."""
    overrides.setdefault("hours", {"enabled": False})
    return ClarifySettings(channels=("slack",), **overrides)


def with_hours(**overrides: Any) -> ClarifySettings:
    """``clarify_settings`` with the working hours on (Monday-Friday 08:00-18:00 in each
    person's zone): the reminders' tests are about them."""
    return clarify_settings(hours={"enabled": True}, **overrides)


@pytest.fixture
def core(clock: ManualClock) -> ReferenceCore:
    return acme_core(clock)


def acme_core(clock: ManualClock) -> ReferenceCore:
    """The acme directory without its sample clarifications: each test creates its own."""
    data = read_scenario("acme")
    data["clarifications"] = []
    reference = ReferenceCore(clock=clock)
    load_scenario(reference, data)
    return reference


def acme_engine(*, core: CoreClient, store: Store, channel: Channel, sink: AuditSink,
                clock: ManualClock, worker_id: str = "worker-1",
                clarify: ClarifySettings | None = None,
                worker: WorkerConfig | None = None, slack: SlackSettings | None = None,
                reach: ReachRecorder | None = None) -> Engine:
    """The engine as production wires it, on one channel with the acme Slack workspaces."""
    return build_engine(EngineParts(
        core=core, store=store, channels={"slack": channel},
        clarify=clarify or clarify_settings(), clock=clock, audit_sink=sink,
        slack=slack or ACME_SLACK, worker_id=worker_id, sleep=no_sleep,
        worker=worker or WorkerConfig(concurrency=4, heartbeat_seconds=3600), reach=reach))


@pytest.fixture(params=["memory", "redis"])
async def store(request: pytest.FixtureRequest, clock: ManualClock) -> AsyncIterator[Store]:
    if request.param == "memory":
        yield MemoryStore(clock=clock)
        return
    client = aioredis.Redis.from_url(REDIS_URL, decode_responses=True)
    prefix = f"t-{uuid4().hex[:8]}"
    store = RedisStore(client, prefix=prefix)
    yield store
    # only this test's keys: a concurrent run on the same database keeps its own
    async for name in client.scan_iter(match=f"{prefix}:*", count=500):
        await client.delete(name)
    await client.aclose()


@pytest.fixture
def make_rig(
    core: ReferenceCore,
    clock: ManualClock,
    core_url: str,
    store: Store,
    bot_client: CoreClient,
    truth: CoreClient,
    dev_client: DevCoreClient,
    contract: str,
) -> Callable[..., Rig]:
    def make(
        *,
        clarify: ClarifySettings | None = None,
        channel: RecordingChannel | None = None,
        worker_id: str = "worker-1",
        reach: ReachRecorder | None = None,
    ) -> Rig:
        channel = channel or RecordingChannel()
        sink = MemorySink()
        engine = acme_engine(core=bot_client, store=store, channel=channel, sink=sink,
                             clock=clock, worker_id=worker_id, clarify=clarify, reach=reach)
        return Rig(
            core=core,
            clock=clock,
            bot=truth,
            dev=dev_client,
            channel=channel,
            sink=sink,
            store=store,
            engine=engine,
            contract=contract,
        )

    return make


@pytest.fixture
def rig(make_rig: Callable[..., Rig]) -> Rig:
    return make_rig()


@pytest.fixture
async def redis_store() -> AsyncIterator[Callable[[], RedisStore]]:
    """Stores on database 14, each with a Redis client of its own, all under one fresh prefix."""
    prefix = f"rel-{uuid4().hex[:8]}"
    admin = aioredis.Redis.from_url(REDIS_URL, decode_responses=True)
    clients: list[aioredis.Redis] = []

    async def forget() -> None:
        # the prefix's keys only: other suites may share database 14
        async for name in admin.scan_iter(f"{prefix}:*"):
            await admin.delete(name)

    def make() -> RedisStore:
        client = aioredis.Redis.from_url(REDIS_URL, decode_responses=True)
        clients.append(client)
        return RedisStore(client, prefix=prefix)

    await forget()
    yield make
    for client in clients:
        await client.aclose()
    await forget()
    await admin.aclose()


@pytest.fixture
def restart(
    clock: ManualClock,
    redis_store: Callable[[], RedisStore],
    client_for: Callable[[str], CoreClient],
    tmp_path: Path,
) -> Callable[[RecordingChannel], Restart]:
    """A crashing worker and its successors on one Redis prefix, core and channel."""
    from tests.engine.kit import Restart, TeeSink  # the kit builds on this module

    def make(channel: RecordingChannel) -> Restart:
        return Restart(clock, redis_store, client_for, channel, TeeSink(tmp_path / "audit.jsonl"))

    return make


def retry_once() -> RetryPolicy:
    return RetryPolicy(max_attempts=1)


__all__ = ["Rig", "clarify_settings", "retry_once", "no_sleep", "timedelta"]

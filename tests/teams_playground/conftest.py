"""The whole bot against Microsoft's Teams emulator: reference core + ``open_service`` (every
configured part, the Teams adapter mounted on its aiohttp server) + one Agents Playground per
person, each pointed at the bot's ``/api/messages`` over real HTTP on 127.0.0.1.

The bot runs in the test's event loop on the test's ManualClock (so a digest window can end
without waiting); the Playgrounds are separate Node processes, so waiting for what they show is
bounded real-time polling (``Playground.wait_for``). Teams runs anonymous, as documented for the
Playground: no app id, server on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.clock import ManualClock
from bot.core.client import CoreClient, RetryPolicy
from bot.store.base import DeliveryKey, SlotState, Store
from devcore.client import DevCoreClient
from devcore.core import ReferenceCore, load_scenario
from devcore.scenario import read_scenario
from devcore.server import serve
from tests.conftest import CLARIFY_TOKEN
from tests.support.processes import free_port, healthy, merged, serve_settings, toml, wait_until
from tests.support.rigs import Creates
from tests.teams_playground import playground as pg

ROOT = Path(__file__).resolve().parents[2]
MOUNT = ROOT / "adapters" / "teams" / "mount.py"
ACME_AAD = "5f3c1a2b-7d4e-4c1a-9b2e-0a11ce000001"
SARAH = pg.Person("29:sarah", "Sarah Chen", "8f1c2d3e-0000-4000-8000-00000000a001",
                  "sarah.chen@acme.example")
AHMED = pg.Person("29:ahmed", "Ahmed Karimi", "8f1c2d3e-0000-4000-8000-00000000a002",
                  "ahmed.karimi@acme.example")
MARIA = pg.Person("29:maria", "Maria Lopez", "8f1c2d3e-0000-4000-8000-00000000a004",
                  "maria.lopez@acme.example")  # the acme-legal steward
ACTION_KEY = "teams playground e2e: action signing key"
DEV_TOKEN = "dev-admin-token-local"

def teams_settings(*, core: str, port: int, tenant: str, connector: str,
                   digest_threshold: int) -> dict[str, Any]:
    """The bot on Teams alone, anonymous, sending to ``connector`` (the Playgrounds' front)."""
    return merged(serve_settings(core=core, port=port, slack_api="", workspaces=False), {
        "slack": None,
        "clarify": {"channels": "teams", "digest_threshold": digest_threshold},
        # the worker holds each question's job while it waits for an answer: enough for a
        # digest
        "worker": {"poll_interval_seconds": 0.05, "concurrency": 16},
        "answers": {"poll_seconds": 0.05},
        "teams": {"anonymous": True, "service_url": f"{connector}/",
                  "tenants": [{"aad_tenant_id": tenant, "tenant": "acme"}]},
    })


def needs_the_teams_adapter() -> pytest.MarkDecorator:
    """Skip only while the Teams adapter is not there; once it is, a missing Playground fails
    in CI (which installs it) and skips elsewhere."""
    return pytest.mark.skipif(not MOUNT.is_file(),
                              reason="adapters/teams/mount.py does not exist yet")


def _require_playground() -> None:
    problem = pg.missing()
    if problem:
        if os.environ.get("CI"):
            pytest.fail(problem)
        pytest.skip(problem)


def teams_core(clock: ManualClock) -> ReferenceCore:
    """The acme directory with no clarifications, and Ahmed and Maria (the steward) reachable
    on Teams too (acme gives only Sarah a Teams alias; a critical question needs two people,
    a conflict a steward)."""
    data = read_scenario("acme")
    data["clarifications"] = []
    for person in data["people"]:
        for who in (AHMED, MARIA):
            if person["id"] == f"p-{who.user_id.split(':')[1]}":
                person["teams"] = [{"aad_object_id": who.aad_object_id, "tenant_id": ACME_AAD}]
    core = ReferenceCore(clock=clock)
    load_scenario(core, data)
    return core


@dataclass
class TeamsStack(Creates):
    clock: ManualClock
    core: ReferenceCore
    bot: CoreClient  # reads what the core recorded
    dev: DevCoreClient  # creates clarifications, as ingestion would
    url: str  # the bot's web server
    tmp: Path
    front: pg.ConnectorFront  # the one connector origin the bot sends to
    store: Store  # the bot's: a person's conversation reference is known before a question
    playgrounds: dict[str, pg.Playground] = field(default_factory=dict)
    _open: contextlib.AsyncExitStack = field(default_factory=contextlib.AsyncExitStack)

    async def person(self, who: pg.Person) -> pg.Playground:
        """A Playground for ``who``, opened once; the person writes "hi" so the bot keeps the
        conversation reference (what installing the app does in Teams)."""
        if who.user_id not in self.playgrounds:
            name = who.user_id.replace(":", "-")
            playground = await self._open.enter_async_context(pg.running(
                endpoint=f"{self.url}/api/messages", person=who, tenant_id=ACME_AAD,
                workdir=self.tmp / name, service_url=self.front.service_url(name)))
            assert await playground.say("hi") in (200, 201, 202)
            self.playgrounds[who.user_id] = playground

            async def known() -> bool:  # the bot acknowledges first and keeps it just after
                return await self.store.conversation_get("acme", who.aad_object_id) is not None
            await wait_until(known, f"the bot to keep {who.name}'s conversation")
        return self.playgrounds[who.user_id]

    async def kept_locale(self, who: pg.Person) -> str | None:
        """The ``locale`` the bot keeps with the person's conversation reference (their latest
        activity's): the locale their cards are rendered in."""
        raw = await self.store.conversation_get("acme", who.aad_object_id)
        return None if raw is None else json.loads(raw).get("locale")

    async def waiting_in_digest(self, clarification_ids: list[str], person_id: str) -> None:
        """Waits until the running worker has put each question in the person's digest batch,
        so moving the clock to the window's end cannot leave one for the next window."""
        async def digested() -> bool:
            for cid in clarification_ids:
                slot = await self.store.slot(DeliveryKey(cid, person_id, 0, "question"))
                if slot is None or slot.state is not SlotState.DIGESTED:
                    return False
            return True
        await wait_until(digested, f"{len(clarification_ids)} questions in a digest")

    async def later(self, delta: timedelta) -> None:
        """Moves the clock (core and bot share it); the running worker sees it on its next
        poll."""
        self.clock.advance(delta)

    async def responses(self, clarification_id: str) -> list[tuple[str, int | None]]:
        c = await self.bot.get_clarification(clarification_id=clarification_id)
        return [(r.responder, r.answer_index) for r in c.responses]

    async def until_recorded(self, clarification_id: str, count: int) -> list[Any]:
        async def recorded() -> bool:
            return len(await self.responses(clarification_id)) >= count
        await wait_until(recorded, f"{count} responses to {clarification_id}")
        c = await self.bot.get_clarification(clarification_id=clarification_id)
        return list(c.responses)


@pytest.fixture
async def make_teams_stack(tmp_path: Path, clock: ManualClock
                           ) -> AsyncIterator[Callable[..., Awaitable[TeamsStack]]]:
    """Starts core, bot and (on demand) Playgrounds; everything is stopped after the test."""
    _require_playground()
    from bot.settings import load_settings
    from clarify_bot.app import open_service

    async with contextlib.AsyncExitStack() as stack:
        async def make(*, digest_threshold: int = 3) -> TeamsStack:
            core = teams_core(clock)
            core_url = await stack.enter_async_context(serve(core))
            front = await stack.enter_async_context(pg.ConnectorFront())
            port = free_port()
            config = tmp_path / "clarify-bot.toml"
            config.write_text(toml(teams_settings(core=core_url, port=port, tenant=ACME_AAD,
                                                  connector=front.url,
                                                  digest_threshold=digest_threshold)))
            settings = load_settings(config, {"CLARIFY_BOT_CORE_TOKEN": CLARIFY_TOKEN,
                                              "CLARIFY_BOT_ACTION_SIGNING_KEY": ACTION_KEY})
            service = await stack.enter_async_context(open_service(settings, clock=clock))
            running = asyncio.create_task(service.run(role="all"))

            async def stop() -> None:
                service.stop()
                await asyncio.wait_for(running, 30)
            stack.push_async_callback(stop)
            url = f"http://127.0.0.1:{port}"
            await wait_until(lambda: healthy(url), "the bot to listen")
            bot = await stack.enter_async_context(CoreClient(
                base_url=core_url, token=CLARIFY_TOKEN, retry=RetryPolicy(max_attempts=1)))
            dev = await stack.enter_async_context(DevCoreClient(base_url=core_url,
                                                                token=DEV_TOKEN))
            made = TeamsStack(clock=clock, core=core, bot=bot, dev=dev, url=url, tmp=tmp_path,
                              front=front, store=service.store)
            stack.push_async_callback(made._open.aclose)
            return made

        yield make


"""The sandbox's world, assembled: one movable clock; the reference core on it, loaded with the
scenario; the local Slack stand-in holding the scenario's people with their zones and languages;
and the real bot, opened by ``clarify_bot.app.open_service`` from settings loaded as ``serve``
loads them, running its web server and worker (role ``all``) on the in-memory store. Every part
listens on 127.0.0.1 only; the bot and the stand-in talk over HTTP as Slack and the bot do
(signed requests one way, the Web API the other)."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import socket
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp

from bot.clock import OffsetClock
from bot.core.client import CoreClient
from bot.process.service import Service
from bot.settings import Settings, load_settings
from bot.store.holds import HeldJobs
from clarify_bot.app import open_service
from clarify_bot.sandbox.clock import start_time, target
from clarify_bot.sandbox.people import SandboxPerson, scenario_people, unreachable_in_slack
from devcore.client import DevCoreClient
from devcore.core import ReferenceCore
from devcore.scenario import read_scenario
from devcore.server import build_core, serve
from devslack import BOT_TOKEN, LocalSlack

HOST = "127.0.0.1"
EVENTS_PATH = "/slack/events"
READY_SECONDS = 30.0


@dataclass
class Sandbox:
    """What the page drives: the clock, the core (as an API client), the Slack stand-in."""

    clock: OffsetClock
    core_url: str
    bot_url: str
    slack: LocalSlack
    tenant: str
    people: list[SandboxPerson]
    workspaces: dict[str, str]  # the tenant's workspace ids and names
    unreachable: list[dict[str, str]]  # the tenant's people with no Slack account, and why
    window: timedelta  # the tenant's escalation window
    core: CoreClient  # the bot's own service token: reads what the bot may read
    dev: DevCoreClient  # the core's development token: creates questions as ingestion would
    holds: HeldJobs  # the bot's store: the questions it holds for working hours, read only
    reference: ReferenceCore  # the core itself, in this process: its leases carried on a move
    tokens: dict[str, str] = field(default_factory=dict)

    def move_clock(self, step: str, *, zone: str) -> datetime:
        """Move the one clock forward by ``step`` (``clarify_bot.sandbox.clock.target``). The
        leases the bot holds are carried across the jump, as if it had heartbeat through the
        time skipped: a question it holds for someone's working hours stays held, where a bare
        jump past the lease would end the lease and count a turn against the question."""
        now = self.clock.now()
        to = target(now, step, zone=zone, window=self.window)
        self.reference.jobs.carry_leases(to - now)
        return self.clock.set(to)

    def person(self, slack_id: str) -> SandboxPerson | None:
        return next((p for p in self.people if p.slack_id == slack_id), None)


@contextlib.asynccontextmanager
async def open_world(scenario: str | Path = "sandbox") -> AsyncIterator[Sandbox]:
    """Start the core, the stand-in and the bot; stop them in reverse order on exit."""
    data = read_scenario(scenario)
    tenant = data["tenants"][0]["id"]
    people = [p for p in scenario_people(data) if p.tenant == tenant]
    clock = OffsetClock()
    clock.set(start_time(clock.now()))
    core = build_core(scenario, clock=clock)
    clarify_token = _token(data, "clarify", tenant)
    async with contextlib.AsyncExitStack() as stack:
        core_url = await stack.enter_async_context(serve(core, host=HOST))
        slack = await stack.enter_async_context(LocalSlack(clock=clock))
        for team, enterprise in sorted({(p.team_id, p.enterprise_id) for p in people}):
            slack.add_workspace(team, enterprise_id=enterprise, name=policy_name(data, tenant))
        for p in people:
            slack.add_user(p.slack_id, name=p.name, email=p.email, tz=p.zone, locale=p.locale,
                           team=p.team_id)
        signing_secret = secrets.token_hex(16)
        port = _free_port()
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="clarify-sandbox-")))
        settings = _settings(folder, core_url=core_url, slack_url=slack.url, port=port,
                             data=data, tenant=tenant, env={
                                 "CLARIFY_BOT_CORE_TOKEN": clarify_token,
                                 "SLACK_BOT_TOKEN": BOT_TOKEN,
                                 "SLACK_SIGNING_SECRET": signing_secret,
                                 "CLARIFY_BOT_ACTION_SIGNING_KEY": secrets.token_hex(32)})
        service = await stack.enter_async_context(open_service(settings, clock=clock))
        bot_url = f"http://{HOST}:{port}"
        await stack.enter_async_context(_running(service, bot_url))
        slack.connect(bot_url + EVENTS_PATH, signing_secret)
        reader = await stack.enter_async_context(CoreClient(base_url=core_url,
                                                            token=clarify_token))
        dev = await stack.enter_async_context(DevCoreClient(base_url=core_url,
                                                            token=data["dev"]["tokens"][0]))
        policy: dict[str, Any] = next((t for t in data["tenants"] if t["id"] == tenant), {})
        hours = policy.get("clarify", {}).get("escalation_window_hours", 48)
        yield Sandbox(clock=clock, core_url=core_url, bot_url=bot_url, slack=slack,
                      tenant=tenant, people=people,
                      workspaces={w["id"]: w.get("name", w["id"])
                                  for w in data.get("workspaces", []) if w["tenant"] == tenant},
                      unreachable=unreachable_in_slack(data, tenant),
                      window=timedelta(hours=float(hours)), core=reader, dev=dev,
                      holds=service.store, reference=core)


@contextlib.asynccontextmanager
async def _running(service: Service, url: str) -> AsyncIterator[None]:
    """The service's web server and worker running until the block ends, then stopped as
    SIGTERM stops them."""
    task = asyncio.create_task(service.run(role="all"))
    try:
        await _ready(url, task)
        yield
    finally:
        service.stop()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def _ready(url: str, task: asyncio.Task[None]) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + READY_SECONDS
    async with aiohttp.ClientSession() as http:
        while loop.time() < deadline:
            if task.done():
                task.result()  # its own error, as serve would show it
                raise RuntimeError("the bot stopped before it served")
            with contextlib.suppress(aiohttp.ClientError):
                async with http.get(url + "/healthz") as response:
                    if response.status == 200:
                        return
            await asyncio.sleep(0.05)
    raise RuntimeError("the bot did not answer /healthz in time")


def _settings(folder: Path, *, core_url: str, slack_url: str, port: int,
              data: dict[str, Any], tenant: str, env: dict[str, str]) -> Settings:
    """The bot's settings, written as a TOML file in ``folder`` and loaded as ``serve`` loads
    its own; the audit trail goes to a file there, not to the terminal."""
    teams = sorted({(a["team_id"], a.get("enterprise_id")) for p in data.get("people", [])
                    if p.get("tenant") == tenant for a in p.get("slack", [])})
    lines = ["[clarify]", "enabled = true", 'channels = "slack"', "",
             "[core]", f'url = "{core_url}"', "",
             "[server]", f'host = "{HOST}"', f"port = {port}", "",
             "[store]", 'backend = "memory"', "",
             # a short lease: a "Not the right person" moves on when the card's lease ends
             # (docs/delivery.md), here within seconds rather than a minute
             "[worker]", "poll_interval_seconds = 0.5", "lease_seconds = 10",
             "heartbeat_seconds = 5", "",
             "[answers]", "poll_seconds = 0.2", "",
             "[log]", 'level = "warning"', "",
             "[audit]", 'sink = "jsonl"', f'path = "{folder / "audit.jsonl"}"', "",
             "[slack]", f'api_url = "{slack_url}"', ""]
    for team, enterprise in teams:
        lines += ["[[slack.workspaces]]", f'team_id = "{team}"', f'tenant = "{tenant}"']
        if enterprise:
            lines.append(f'enterprise_id = "{enterprise}"')
        lines.append("")
    path = folder / "sandbox.toml"
    path.write_text("\n".join(lines), encoding="utf-8")
    return load_settings(path, environ=env)


def policy_name(data: dict[str, Any], tenant: str) -> str:
    """The tenant's name, as its Slack workspace is called in the stand-in."""
    return str(next((t.get("name", tenant) for t in data["tenants"] if t["id"] == tenant), tenant))


def _token(data: dict[str, Any], audience: str, tenant: str) -> str:
    for token in data.get("tokens", []):
        if token.get("audience") == audience and tenant in token.get("tenants", []):
            return str(token["token"])
    raise RuntimeError(f"the scenario has no {audience} token for its first tenant")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])

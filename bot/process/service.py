"""The long-running service: the web server, the worker and the answer outbox, run and stopped.

What it runs is assembled at the top (``clarify_bot.app``): the engine, once, and each configured
platform mounted through its adapter's hook (``Platform``), which adds its routes, its readiness
check and whatever connection of its own it keeps (``Hosted``). Roles: ``web`` serves callbacks
(each answer is made durable in the outbox before it is acknowledged), health and metrics;
``worker`` polls jobs, sends cards and digests, forwards the answer outbox and opens no port;
``all`` does both in one process. On stop (SIGTERM) the service stops taking requests first (the
platforms' own connections, then the listening socket), then finishes acknowledged answers and
in-flight jobs, all within 10 seconds.

This module and the composition are the only parts of ``bot/`` that know aiohttp's web server
(tests/test_layers.py): a platform's routes are mounted on it, never written here.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
from dataclasses import dataclass, field
from typing import Any, Protocol

import structlog
from aiohttp import web

from bot.abuse_limits import Limits
from bot.answering.answers import AnswerService
from bot.answering.outbox import OutboxConsumers
from bot.audit import Audit
from bot.channel import Channel, CredentialsRejected
from bot.chat import UserTenants
from bot.clock import Clock
from bot.core import errors as e
from bot.core.client import CoreClient
from bot.errors import BotError
from bot.interaction.interactions import Interactions
from bot.metrics import CONTENT_TYPE, REGISTRY
from bot.process.health import Check, Readiness
from bot.process.pauses import Pauses
from bot.process.runtime import Engine
from bot.process.worker import CORE_TOKEN_SETTING, CredentialsCheck
from bot.settings import Settings
from bot.store.base import Outbox, Store
from cards.actions import ActionCodec

log = structlog.get_logger("clarify.service")
# Stopping: each step bounded so SIGTERM to exit stays well inside the 10 s platforms allow
# before SIGKILL. Closing Socket Mode, then the HTTP listener (in-flight requests get this long),
# then finishing acknowledged answers and in-flight jobs side by side.
STOP_STEP_SECONDS = 1.5
FINISH_WORK_SECONDS = 5.0


class CannotListen(BotError):
    """The web server's address cannot be bound (in use, not permitted): a one-line error."""

    def __init__(self, host: str, port: int, reason: str,
                 setting: str = "server.port or $PORT") -> None:
        super().__init__(f"cannot listen on {host}:{port}: {reason} (set {setting})")
        self.host, self.port, self.reason = host, port, reason


class Hosted(Protocol):
    """What a mounted platform keeps running beside the web server."""

    name: str

    async def connect(self) -> None:
        """Its own connection to the platform (Slack's Socket Mode), kept until cancelled;
        returns at once when callbacks come over the service's HTTP routes."""
        ...

    async def disconnect(self) -> None: ...

    async def drain(self) -> None:
        """Finish the work its callbacks started after acknowledging them."""
        ...


@dataclass(frozen=True, slots=True)
class Base:
    """What a platform's channel is made from, before the engine exists."""

    store: Store
    codec: ActionCodec
    clock: Clock
    stack: contextlib.AsyncExitStack  # what the adapter opens is closed here, in reverse


@dataclass(frozen=True, slots=True)
class Parts:
    """What the assembled bot hands a platform's adapter to mount its callbacks: the answer
    path and the platform-free interactions, never the core client."""

    base: Base
    channel: Channel  # the one ``Platform.open_channel`` made
    answers: AnswerService
    interactions: Interactions
    audit: Audit
    limits: Limits  # the process's abuse limits, one set for every platform


class Platform(Protocol):
    """The hook each adapter package exposes (``adapters/<platform>/mount.py``)."""

    def open_channel(self, settings: Settings, base: Base) -> Channel: ...

    def mount(self, app: Service, parts: Parts, settings: Settings) -> None:
        """Add the platform's routes to ``app.web_app`` and what it keeps running to
        ``app.hosted``."""
        ...

    def tenants(self, channel: Channel, settings: Settings) -> UserTenants:
        """Which tenant a verified user of this platform acts in (its settings' list, or what
        its installations say)."""
        ...

    def pauses(self, channel: Channel, settings: Settings, base: Base) -> Pauses | None:
        """Where a platform holds a token per installation: how the worker pauses delivery to
        one whose token is refused (``bot.process.pauses``); None where it holds one token."""
        ...

    async def prepare(self, app: Service, base: Base) -> None:
        """What the platform checks before anything is served (a distributed Slack app's
        database); most check nothing."""
        ...


@dataclass
class Service:
    settings: Settings
    core: CoreClient
    store: Store
    engine: Engine
    consumers: OutboxConsumers
    web_app: web.Application
    readiness: Readiness = field(default_factory=Readiness)
    hosted: list[Hosted] = field(default_factory=list)  # the mounted platforms
    stopping: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def answers(self) -> AnswerService:
        return self.engine.answers

    async def run(self, *, role: str = "all") -> None:
        if role != "worker":
            runner: web.AppRunner | None = await self._listen(role)
        elif self.settings.worker.health_port:  # probes and scrapes only, no callbacks
            health = web.Application(client_max_size=1024)  # GETs only
            health.add_routes(health_routes(self.readiness))
            runner = await self._listen(role, health, self.settings.worker.health_port)
        else:
            runner = None
        if role == "worker" and self.settings.worker.nice:
            os.nice(self.settings.worker.nice)  # background work: acknowledgements come first
        await self.core.detect_extensions()  # what the core offers beyond the baseline (logged)
        await self.readiness.log_problems()  # names any setting a dependency refuses
        # what start-up made (modules, SDK clients, settings) lives as long as the process: out
        # of the collector's way, a full collection during a burst of clicks walks only what
        # requests made (docs/benchmarks.md: a 50 ms pause at every such collection otherwise)
        gc.collect()
        gc.freeze()
        # the outbox's consumers live with the worker, off the event loop that acknowledges
        # clicks (docs/operations.md); a web-only process makes answers durable and wakes none
        loops = [asyncio.create_task(self.consumers.run())] if role in ("all", "worker") else []
        watch = self.engine.storewatch
        if watch is not None:  # every role notices a store that lost its data; only a worker
            # gives holds back and looks for leases nobody can carry on
            if role == "web" or not self.settings.clarify.enabled:
                watch.recovery = None
            loops.append(asyncio.create_task(watch.run(self.stopping)))
        if role in ("all", "worker") and self.settings.clarify.enabled:
            loops.append(asyncio.create_task(self.engine.worker.run()))
        elif not self.settings.clarify.enabled:
            log.warning("service.clarify_disabled")
        # tasks: connecting retries for as long as the platform does not answer; stop must win
        connections = [asyncio.create_task(h.connect()) for h in self.hosted] \
            if role in ("all", "web") else []
        try:
            await self.stopping.wait()
        finally:
            await self._stop_taking_requests(runner, connections)
            await self._finish_work(loops)

    async def _listen(self, role: str, app: web.Application | None = None,
                      port: int | None = None) -> web.AppRunner:
        host, port = self.settings.server.host, port or self.settings.server.port
        runner = web.AppRunner(app or self.web_app, access_log=None,
                               shutdown_timeout=STOP_STEP_SECONDS)
        await runner.setup()
        try:
            await web.TCPSite(runner, host, port).start()
        except OSError as exc:
            await runner.cleanup()
            setting = "worker.health_port" if app is not None else "server.port or $PORT"
            raise CannotListen(host, port, (exc.strerror or "refused").lower(), setting) from None
        log.info("service.listening", host=host, port=port, role=role)
        return runner

    async def _stop_taking_requests(self, runner: web.AppRunner | None,
                                    connections: list[asyncio.Task[None]]) -> None:
        log.info("service.stopping")
        self.engine.worker.stop()
        self.consumers.stop()
        for connection in connections:
            connection.cancel()
        for hosted in self.hosted if connections else []:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(hosted.disconnect(), STOP_STEP_SECONDS)
        if runner is not None:
            await runner.cleanup()

    async def _finish_work(self, loops: list[asyncio.Task[None]]) -> None:
        """Acknowledged answers and in-flight jobs, within FINISH_WORK_SECONDS; the rest is
        cancelled (its lease runs out; the outbox keeps what reached it)."""
        work: list[asyncio.Future[Any]] = list(loops)
        work.extend(asyncio.ensure_future(hosted.drain()) for hosted in self.hosted)
        work.append(asyncio.ensure_future(self.engine.interactions.board.drain()))  # App Homes
        _, unfinished = await asyncio.wait(work, timeout=FINISH_WORK_SECONDS)
        for task in unfinished:
            task.cancel()
        await asyncio.gather(*work, return_exceptions=True)
        log.info("service.stopped", unfinished=len(unfinished))

    def stop(self) -> None:
        self.stopping.set()


def readiness_checks(*, store: Outbox, core: CoreClient,
                     credentials: dict[str, CredentialsCheck] | None = None,
                     core_url: str | None = None, store_address: str | None = None
                     ) -> Readiness:
    """The store and the core every few seconds; each platform's credentials check (Slack's
    auth.test) at most once a minute. ``core_url`` and ``store_address`` are named in the log
    line of a check that fails, with the setting that holds them."""
    async def store_answers() -> None:
        await store.outbox_size()

    async def core_answers() -> None:
        try:
            await core.list_clarifications(limit=1)
        except e.AuthenticationFailed:
            raise CredentialsRejected("core_token_rejected", setting=CORE_TOKEN_SETTING) from None

    checks = [Check("store", store_answers, ttl_seconds=5,
                    setting="redis.url" if store_address else None, address=store_address),
              Check("core", core_answers, ttl_seconds=5, setting="core.url", address=core_url)]
    checks.extend(credentials_check(name, check) for name, check in (credentials or {}).items())
    return Readiness(checks)


def credentials_check(name: str, check: CredentialsCheck, *, setting: str | None = None,
                      address: str | None = None) -> Check:
    """A platform's own credentials as a readiness check, at most once a minute: its
    ``CredentialsRejected`` names the setting to fix; ``setting`` and ``address`` name where
    the platform is asked when it cannot be reached (Slack's ``slack.api_url``)."""
    return Check(name, check, ttl_seconds=60, setting=setting, address=address)


def extensions_in_use(core: CoreClient) -> dict[str, object]:
    """What ``/readyz`` and ``check-config`` say of the core's contract extensions."""
    discovery = core.discovery
    return {"extensions": core.offered.names,
            "source": "settings" if discovery is None else discovery.source}


def health_routes(readiness: Readiness, core: CoreClient | None = None) -> list[web.RouteDef]:
    async def healthz(_: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    async def readyz(_: web.Request) -> web.Response:
        checks = await readiness.results()
        ready = all(v == "ok" for v in checks.values())
        body: dict[str, object] = {"status": "ok" if ready else "degraded", "checks": checks}
        if core is not None:
            body["core"] = extensions_in_use(core)
        for detail in readiness.details:
            body.update(detail())
        return web.json_response(body, status=200 if ready else 503)

    async def metrics(_: web.Request) -> web.Response:
        return web.Response(body=await REGISTRY.render(), headers={"Content-Type": CONTENT_TYPE})

    return [web.get("/healthz", healthz), web.get("/readyz", readyz),
            web.get("/metrics", metrics)]

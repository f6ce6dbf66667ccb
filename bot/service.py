"""The long-running service: settings → clients, store, engine, adapters, web server, loops.

Every long-lived resource is opened in order inside one ``AsyncExitStack`` and closed in reverse.
Roles: ``web`` serves callbacks (each answer is made durable in the outbox before it is
acknowledged), health and metrics; ``worker`` polls jobs, sends cards and digests, forwards the
answer outbox and opens no port; ``all`` does both in one process. On stop (SIGTERM) the service
stops taking requests first (Socket Mode connection, then the listening socket), then finishes
acknowledged answers and in-flight jobs, all within 10 seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import httpx
import structlog
from aiohttp import web

from bot.answers import AnswerService, OutboxPolicy
from bot.audit import JsonLinesSink
from bot.channel import Channel, CredentialsRejected
from bot.clock import SystemClock
from bot.core import errors as e
from bot.core.client import CoreClient
from bot.health import Check, Readiness, Refused
from bot.metrics import CONTENT_TYPE, REGISTRY
from bot.outbox import ConsumerConfig, OutboxConsumers
from bot.runtime import Engine, EngineParts, build_engine
from bot.settings import Settings
from bot.store.base import Store
from bot.store.memory import MemoryStore
from bot.store.redis import RedisStore
from bot.worker import CORE_TOKEN_SETTING, WorkerConfig
from cards.actions import ActionCodec

log = structlog.get_logger("clarify.service")
# Stopping: each step bounded so SIGTERM to exit stays well inside the 10 s platforms allow
# before SIGKILL. Closing Socket Mode, then the HTTP listener (in-flight requests get this long),
# then finishing acknowledged answers and in-flight jobs side by side.
STOP_STEP_SECONDS = 1.5
FINISH_WORK_SECONDS = 5.0


class CannotListen(Exception):
    """The web server's address cannot be bound (in use, not permitted): a one-line error."""

    def __init__(self, host: str, port: int, reason: str) -> None:
        super().__init__(f"cannot listen on {host}:{port}: {reason} (set server.port or $PORT)")
        self.host, self.port, self.reason = host, port, reason


@dataclass
class Service:
    settings: Settings
    core: CoreClient
    store: Store
    engine: Engine
    answers: AnswerService
    consumers: OutboxConsumers
    web_app: web.Application
    readiness: Readiness = field(default_factory=Readiness)
    socket_handler: Any = None
    slack_adapter: Any = None  # its acknowledged answers are finished on stop
    stopping: asyncio.Event = field(default_factory=asyncio.Event)

    async def run(self, *, role: str = "all") -> None:
        runner = await self._listen(role) if role != "worker" else None
        if role == "worker" and self.settings.worker.nice:
            os.nice(self.settings.worker.nice)  # background work: acknowledgements come first
        await self.readiness.log_problems()  # names any setting a dependency refuses
        # what start-up made (modules, SDK clients, settings) lives as long as the process: out
        # of the collector's way, a full collection during a burst of clicks walks only what
        # requests made (docs/benchmarks.md: a 50 ms pause at every such collection otherwise)
        gc.collect()
        gc.freeze()
        # the outbox's consumers live with the worker, off the event loop that acknowledges
        # clicks (docs/operations.md); a web-only process makes answers durable and wakes none
        loops = [asyncio.create_task(self.consumers.run())] if role in ("all", "worker") else []
        if role in ("all", "worker") and self.settings.clarify.enabled:
            loops.append(asyncio.create_task(self.engine.worker.run()))
        elif not self.settings.clarify.enabled:
            log.warning("service.clarify_disabled")
        socket = None
        if self.socket_handler is not None and role in ("all", "web"):
            # a task: connecting retries for as long as Slack does not answer, and stop must win
            socket = asyncio.create_task(self.socket_handler.connect_async())
        try:
            await self.stopping.wait()
        finally:
            await self._stop_taking_requests(runner, socket)
            await self._finish_work(loops)

    async def _listen(self, role: str) -> web.AppRunner:
        host, port = self.settings.server.host, self.settings.server.port
        runner = web.AppRunner(self.web_app, access_log=None, shutdown_timeout=STOP_STEP_SECONDS)
        await runner.setup()
        try:
            await web.TCPSite(runner, host, port).start()
        except OSError as exc:
            await runner.cleanup()
            raise CannotListen(host, port, (exc.strerror or "refused").lower()) from None
        log.info("service.listening", host=host, port=port, role=role)
        return runner

    async def _stop_taking_requests(self, runner: web.AppRunner | None,
                                    socket: asyncio.Task[None] | None) -> None:
        log.info("service.stopping")
        self.engine.worker.stop()
        self.consumers.stop()
        if socket is not None:
            socket.cancel()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.socket_handler.close_async(), STOP_STEP_SECONDS)
        if runner is not None:
            await runner.cleanup()

    async def _finish_work(self, loops: list[asyncio.Task[None]]) -> None:
        """Acknowledged answers and in-flight jobs, within FINISH_WORK_SECONDS; the rest is
        cancelled (its lease runs out; the outbox keeps what reached it)."""
        work: list[asyncio.Future[Any]] = list(loops)
        if self.slack_adapter is not None:
            work.append(asyncio.ensure_future(self.slack_adapter.drain()))
        _, unfinished = await asyncio.wait(work, timeout=FINISH_WORK_SECONDS)
        for task in unfinished:
            task.cancel()
        await asyncio.gather(*work, return_exceptions=True)
        log.info("service.stopped", unfinished=len(unfinished))

    def stop(self) -> None:
        self.stopping.set()


def _store(settings: Settings) -> Store:
    if settings.store.backend == "memory":
        return MemoryStore()
    password = settings.secrets.redis_password
    return RedisStore.from_url(settings.redis.url, prefix=settings.redis.key_prefix.rstrip(":"),
                               password=password.get_secret_value() if password else None)


def _audit_sink(settings: Settings) -> JsonLinesSink:
    return JsonLinesSink(path=settings.audit.path if settings.audit.sink == "jsonl" else None)


def readiness_checks(*, store: Store, core: CoreClient, slack: Any = None) -> Readiness:
    """The store and the core every few seconds; Slack's auth.test at most once a minute."""
    async def store_answers() -> None:
        await store.outbox_size()

    async def core_answers() -> None:
        try:
            await core.list_clarifications(limit=1)
        except e.AuthenticationFailed:
            raise Refused(CORE_TOKEN_SETTING) from None

    checks = [Check("store", store_answers, ttl_seconds=5), Check("core", core_answers,
                                                                 ttl_seconds=5)]
    if slack is not None:
        async def slack_accepts_the_token() -> None:
            try:
                await slack.check_credentials()
            except CredentialsRejected as exc:
                raise Refused(exc.setting) from None

        checks.append(Check("slack", slack_accepts_the_token, ttl_seconds=60))
    return Readiness(checks)


def health_routes(readiness: Readiness) -> list[web.RouteDef]:
    async def healthz(_: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    async def readyz(_: web.Request) -> web.Response:
        checks = await readiness.results()
        ready = all(v == "ok" for v in checks.values())
        return web.json_response({"status": "ok" if ready else "degraded", "checks": checks},
                                 status=200 if ready else 503)

    async def metrics(_: web.Request) -> web.Response:
        return web.Response(body=await REGISTRY.render(), headers={"Content-Type": CONTENT_TYPE})

    return [web.get("/healthz", healthz), web.get("/readyz", readyz),
            web.get("/metrics", metrics)]


@contextlib.asynccontextmanager
async def open_service(settings: Settings) -> AsyncIterator[Service]:
    """Open every resource the settings call for; close them in reverse order on exit."""
    settings.require_secrets()
    secrets = settings.secrets
    clock = SystemClock()
    async with contextlib.AsyncExitStack() as stack:
        core = CoreClient(
            base_url=settings.core.url, token=secrets.require("core_token"),
            timeout=httpx.Timeout(settings.core.read_timeout_seconds,
                                  connect=settings.core.connect_timeout_seconds),
            limits=httpx.Limits(
                max_connections=settings.core.max_connections,
                max_keepalive_connections=settings.core.max_keepalive_connections))
        stack.push_async_callback(core.aclose)
        store = _store(settings)
        stack.push_async_callback(store.aclose)
        codec = ActionCodec(secrets.require("action_signing_key").encode())
        channels: dict[str, Channel] = {}
        slack_parts = None
        if "slack" in settings.clarify.channels:
            slack_parts = _slack_channel(settings, store=store, codec=codec, clock=clock)
            channels["slack"] = slack_parts[1]
            stack.push_async_callback(slack_parts[0].session.close)
        engine = build_engine(EngineParts(
            core=core, store=store, channels=channels, clarify=settings.clarify, clock=clock,
            audit_sink=_audit_sink(settings), slack=settings.slack, teams=settings.teams,
            worker=WorkerConfig(concurrency=settings.worker.concurrency,
                                lease_seconds=settings.worker.lease_seconds,
                                heartbeat_seconds=settings.worker.heartbeat_seconds,
                                poll_interval_seconds=settings.worker.poll_interval_seconds,
                                shutdown_grace_seconds=FINISH_WORK_SECONDS)))
        answers, consumers = _answers(settings, core=core, store=store, channels=channels,
                                      engine=engine, clock=clock)
        app = web.Application(client_max_size=256 * 1024)
        slack_channel = slack_parts[1] if slack_parts is not None else None
        if slack_channel is not None:
            engine.worker.credentials = slack_channel.check_credentials
        service = Service(settings=settings, core=core, store=store, engine=engine,
                          answers=answers, consumers=consumers, web_app=app,
                          readiness=readiness_checks(store=store, core=core, slack=slack_channel))
        app.add_routes(health_routes(service.readiness))
        if slack_parts is not None:
            service.socket_handler = _mount_slack(settings, app, slack_parts, service=service,
                                                  codec=codec, clock=clock)
            if service.socket_handler is not None:
                stack.push_async_callback(service.socket_handler.close_async)
        yield service


def _answers(settings: Settings, *, core: CoreClient, store: Store,
             channels: dict[str, Channel], engine: Engine, clock: SystemClock
             ) -> tuple[AnswerService, OutboxConsumers]:
    table = settings.answers
    policy = OutboxPolicy(lease_seconds=table.lease_seconds,
                          forward_timeout_seconds=table.lease_seconds * 0.75,
                          backoff_base_seconds=table.backoff_base_seconds,
                          backoff_cap_seconds=table.backoff_cap_seconds,
                          max_failures=table.max_failures,
                          cache_seconds=table.cache_seconds)
    answers = AnswerService(core=core, store=store, channels=channels, audit=engine.audit,
                            clock=clock, on_conflict=engine.handler.notify_conflict,
                            on_late_conflict=engine.handler.notify_late_conflict, policy=policy)
    answers.followups.workers = table.followup_workers
    consumers = OutboxConsumers(answers, ConsumerConfig(consumers=table.consumers,
                                                        poll_seconds=table.poll_seconds))
    answers.on_queued = consumers.wake
    engine.handler.on_settled = answers.refresh_settled
    REGISTRY.gauges["clarify_outbox_entries"] = _gauge(store.outbox_size)
    REGISTRY.gauges["clarify_outbox_parked_entries"] = _gauge(store.outbox_parked)
    REGISTRY.gauges["clarify_outbox_oldest_due_seconds"] = \
        lambda: store.outbox_overdue(now=clock.now())
    return answers, consumers


def _gauge(read: Callable[[], Awaitable[int]]) -> Callable[[], Awaitable[float]]:
    async def value() -> float:
        return float(await read())

    return value


def _slack_channel(settings: Settings, *, store: Store, codec: ActionCodec, clock: SystemClock
                   ) -> tuple[Any, Any]:
    from slack_sdk.web.async_client import AsyncWebClient

    from adapters.slack.channel import SlackChannel

    # one pooled session for every Web API call: without it slack_sdk opens a session, a
    # connection and a TLS context per call, which under a burst costs more than the call
    client = AsyncWebClient(token=settings.secrets.require("slack_bot_token"),
                            base_url=settings.slack.api_url, session=aiohttp.ClientSession())
    return client, SlackChannel(client=client, codec=codec, store=store, clock=clock)


def _mount_slack(settings: Settings, app: web.Application, parts: tuple[Any, Any], *,
                 service: Service, codec: ActionCodec, clock: SystemClock) -> Any:
    from adapters.slack.app import build_slack_adapter

    client, channel = parts
    secrets = settings.secrets
    socket = settings.slack.mode == "socket"
    adapter = build_slack_adapter(
        # Socket Mode requests are authenticated by the app-level token, not signed
        signing_secret=secrets.require("slack_signing_secret") if not socket else "unused",
        client=client, answers=service.answers, digests=service.engine.digests,
        channel=channel, core=service.core, codec=codec, settings=settings.slack,
        audit=service.engine.audit, clock=clock)
    service.slack_adapter = adapter
    if not socket:
        app.add_routes(adapter.routes())
        return None
    from slack_bolt.adapter.socket_mode.aiohttp import AsyncSocketModeHandler

    return AsyncSocketModeHandler(adapter.app, secrets.require("slack_app_token"))

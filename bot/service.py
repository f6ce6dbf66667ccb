"""The long-running service: settings → clients, store, engine, adapters, web server, loops.

Every long-lived resource is opened in order inside one ``AsyncExitStack`` and closed in reverse.
Roles: ``web`` serves callbacks (each answer is made durable in the outbox before it is
acknowledged), health and metrics; ``worker`` polls jobs, sends cards and digests, and forwards
the answer outbox; ``all`` does both in one process.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import httpx
import structlog
from aiohttp import web

from bot.answers import AnswerService, OutboxPolicy
from bot.audit import JsonLinesSink
from bot.channel import Channel
from bot.clock import SystemClock
from bot.core import errors as e
from bot.core.client import CoreClient
from bot.metrics import REGISTRY
from bot.outbox import ConsumerConfig, OutboxConsumers
from bot.runtime import Engine, EngineParts, build_engine
from bot.settings import Settings
from bot.store.base import Store
from bot.store.memory import MemoryStore
from bot.store.redis import RedisStore
from bot.worker import WorkerConfig
from cards.actions import ActionCodec

log = structlog.get_logger("clarify.service")


@dataclass
class Service:
    settings: Settings
    core: CoreClient
    store: Store
    engine: Engine
    answers: AnswerService
    consumers: OutboxConsumers
    web_app: web.Application
    socket_handler: Any = None
    stopping: asyncio.Event = field(default_factory=asyncio.Event)

    async def run(self, *, role: str = "all") -> None:
        runner = web.AppRunner(self.web_app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, self.settings.server.host, self.settings.server.port)
        await site.start()
        log.info("service.listening", host=self.settings.server.host,
                 port=self.settings.server.port, role=role)
        # the outbox's consumers live with the worker, off the event loop that acknowledges
        # clicks (docs/operations.md); a web-only process makes answers durable and wakes none
        loops = [asyncio.create_task(self.consumers.run())] if role in ("all", "worker") else []
        if role in ("all", "worker") and self.settings.clarify.enabled:
            loops.append(asyncio.create_task(self.engine.worker.run()))
        elif not self.settings.clarify.enabled:
            log.warning("service.clarify_disabled")
        if self.socket_handler is not None and role in ("all", "web"):
            await self.socket_handler.connect_async()
        try:
            await self.stopping.wait()
        finally:
            self.engine.worker.stop()
            self.consumers.stop()
            await asyncio.gather(*loops, return_exceptions=True)
            await runner.cleanup()

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


def health_routes(service: Service) -> list[web.RouteDef]:
    async def healthz(_: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    async def readyz(_: web.Request) -> web.Response:
        checks = {"store": "ok", "core": "ok"}
        try:
            await service.store.outbox_size()
        except Exception:
            checks["store"] = "unavailable"
        try:
            await service.core.list_clarifications(limit=1)
        except e.CoreError:
            checks["core"] = "unavailable"
        ready = all(v == "ok" for v in checks.values())
        return web.json_response({"status": "ok" if ready else "degraded", "checks": checks},
                                 status=200 if ready else 503)

    async def metrics(_: web.Request) -> web.Response:
        return web.Response(text=await REGISTRY.render(), content_type="text/plain")

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
                                poll_interval_seconds=settings.worker.poll_interval_seconds)))
        answers, consumers = _answers(settings, core=core, store=store, channels=channels,
                                      engine=engine, clock=clock)
        app = web.Application(client_max_size=256 * 1024)
        service = Service(settings=settings, core=core, store=store, engine=engine,
                          answers=answers, consumers=consumers, web_app=app)
        app.add_routes(health_routes(service))
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
    REGISTRY.gauges["clarify_outbox_parked"] = _gauge(store.outbox_parked)
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
    if not socket:
        app.add_routes(adapter.routes())
        return None
    from slack_bolt.adapter.socket_mode.aiohttp import AsyncSocketModeHandler

    return AsyncSocketModeHandler(adapter.app, secrets.require("slack_app_token"))

"""Assembly: settings → core client, store, channels, the engine once, each platform mounted.

Every long-lived resource is opened in order inside one ``AsyncExitStack`` and closed in reverse.
A platform plugs in with one line in ``clarify_bot.platforms.PLATFORMS``: its adapter package's
``mount`` module (``bot.process.service.Platform``) makes its channel before the engine is built
and mounts its callbacks after (docs/architecture.md, "Where a new platform plugs in").
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import datetime

import structlog
from aiohttp import web

from adapters.bodies import bounded_bodies
from bot import pseudonym
from bot.abuse_limits import Admit, Bucket, Limits
from bot.answering.answers import AnswerService, OutboxPolicy
from bot.answering.outbox import ConsumerConfig, OutboxConsumers
from bot.audit import JsonLinesSink
from bot.channel import Channel
from bot.chat import ConfirmingTenants, UserTenants
from bot.clock import Clock, SystemClock
from bot.core.client import CoreClient
from bot.metrics import REGISTRY
from bot.process.pauses import Pauses
from bot.process.runtime import EngineParts, build_engine
from bot.process.service import (
    FINISH_WORK_SECONDS,
    Base,
    Parts,
    Service,
    health_routes,
    readiness_checks,
)
from bot.process.worker import WorkerConfig
from bot.reach.recording import ReachRecorder
from bot.settings import Settings
from bot.store.base import Store
from bot.store.connect import parse_redis_url
from bot.store.memory import MemoryStore
from bot.store.redis import RedisStore
from cards.actions import ActionCodec
from clarify_bot import build, preflight
from clarify_bot.clients import core_client
from clarify_bot.platforms import PLATFORMS, platform
from clarify_bot.reach_record import open_recorder

log = structlog.get_logger("clarify.app")


@contextlib.asynccontextmanager
async def open_service(settings: Settings, *, clock: Clock | None = None
                       ) -> AsyncIterator[Service]:
    """Open every resource the settings call for; close them in reverse order on exit.

    ``clock``: the system clock unless a test runs the whole service on a manual one (the
    Teams end-to-end tests move it to the end of a digest window)."""
    preflight.static(settings)  # what check-config checks first, in the same words
    secrets = settings.secrets
    pseudonym.configure_from(secrets)  # before anything names a key, a card or a log line
    clock = clock or SystemClock()
    REGISTRY.set("clarify_build_info", 1, version=build.version(), commit=build.commit())
    async with contextlib.AsyncExitStack() as stack:
        core = _core(settings, clock)
        stack.push_async_callback(core.aclose)
        store = _store(settings)
        stack.push_async_callback(store.aclose)
        base = Base(store=store, clock=clock, stack=stack,
                    codec=ActionCodec(secrets.require("action_signing_key").encode()))
        mounted = {str(name): platform(str(name)) for name in settings.clarify.channels
                   if str(name) in PLATFORMS}
        channels: dict[str, Channel] = {name: hook.open_channel(settings, base)
                                        for name, hook in mounted.items()}
        # which tenant a verified user acts in, as each platform says (a distributed Slack app:
        # its installations)
        tenants = {name: hook.tenants(channels[name], settings) for name, hook in mounted.items()}
        # a platform that pauses delivery per installation (a distributed Slack app)
        pauses = next((held for name, hook in mounted.items()
                       if (held := hook.pauses(channels[name], settings, base)) is not None), None)
        reach = open_recorder(settings, clock)
        if reach is not None:
            stack.push_async_callback(reach.aclose)
        parts = _engine_parts(settings, core=core, store=store, channels=channels, clock=clock,
                              tenants=tenants, pauses=pauses, reach=reach)
        engine = build_engine(parts)
        consumers = _consumers(settings, engine.answers, store)
        app = web.Application(client_max_size=256 * 1024, middlewares=[bounded_bodies()])
        limits = _limits(settings, store, clock)
        service = Service(settings=settings, core=core, store=store, engine=engine,
                          consumers=consumers, web_app=app,
                          readiness=readiness_checks(
                              store=store, core=core, core_url=settings.core.url,
                              store_address=settings.redis.url
                              if settings.store.backend == "redis" else None))
        if engine.storewatch is not None:  # what /readyz says of the store's generation
            service.readiness.details.append(engine.storewatch.status)
        if reach is not None:  # a reach table missing (db upgrade not run): said, not counted
            await reach.check()
            service.readiness.details.append(reach.status)
        app.add_routes(health_routes(service.readiness, core))
        for name, hook in mounted.items():
            hook.mount(service, Parts(base=base, channel=channels[name], answers=engine.answers,
                                      interactions=engine.interactions, audit=engine.audit,
                                      limits=limits),
                       settings)
        for hook in mounted.values():  # what a platform checks before serving (its database)
            await hook.prepare(service, base)
        yield service


def _core(settings: Settings, clock: Clock | None = None) -> CoreClient:
    return core_client(settings, clock)


def _store(settings: Settings) -> Store:
    table = settings.store
    REGISTRY.set("clarify_outbox_limit_entries", table.outbox_max_entries)
    if table.backend == "memory":
        return MemoryStore(ttls=table.ttls(), outbox_max=table.outbox_max_entries)
    secrets = settings.secrets
    if table.outbox_replicas and parse_redis_url(settings.redis.url).mode == "cluster":
        log.warning("store.outbox_replicas_not_applied", mode="cluster",
                    hint="WAIT needs the acceptance's own connection; see docs/configuration.md")
    return RedisStore.from_url(settings.redis.url, prefix=settings.redis.key_prefix.rstrip(":"),
                               password=secrets.value("redis_password"),
                               sentinel_password=secrets.value("redis_sentinel_password"),
                               ttls=table.ttls(), outbox_max=table.outbox_max_entries,
                               migrate=True, outbox_replicas=table.outbox_replicas,
                               outbox_replica_wait_ms=table.outbox_replica_wait_ms)


def _limits(settings: Settings, store: Store, clock: Clock) -> Limits:
    """The abuse limits; per person shared by every replica when the store is Redis."""
    table = settings.limits
    users: Admit | None = None
    if isinstance(store, RedisStore):
        redis = store

        async def shared(key: str, bucket: Bucket, now: datetime) -> float:
            return await redis.limit_admit(key, per_second=bucket.per_second, burst=bucket.burst,
                                           ttl_seconds=bucket.ttl_seconds, now=now)

        users = shared
    REGISTRY.set("clarify_outstanding_tasks_limit", table.max_outstanding_tasks)
    return Limits(clock=clock, per_ip=Bucket(table.ip_refusals_per_second, table.ip_refusal_burst),
                  per_user=Bucket(table.user_per_second, table.user_burst),
                  max_tasks=table.max_outstanding_tasks, users=users,
                  proxy_hops=table.trusted_proxy_hops)


def _engine_parts(settings: Settings, *, core: CoreClient, store: Store,
                  channels: dict[str, Channel], clock: Clock,
                  tenants: dict[str, UserTenants], pauses: Pauses | None,
                  reach: ReachRecorder | None = None) -> EngineParts:
    table, audit = settings.answers, settings.audit
    slack = tenants.get("slack")  # routing's workspaces: a distributed app's installations
    return EngineParts(
        core=core, store=store, channels=channels, clarify=settings.clarify, clock=clock,
        audit_sink=JsonLinesSink(path=audit.path if audit.sink == "jsonl" else None),
        slack=slack if isinstance(slack, ConfirmingTenants) else settings.slack,
        teams=settings.teams, tenants=tenants, pauses=pauses,
        worker=WorkerConfig(concurrency=settings.worker.concurrency,
                            lease_ahead=settings.worker.lease_ahead,
                            lease_seconds=settings.worker.lease_seconds,
                            heartbeat_seconds=settings.worker.heartbeat_seconds,
                            poll_interval_seconds=settings.worker.poll_interval_seconds,
                            shutdown_grace_seconds=FINISH_WORK_SECONDS,
                            core_url=settings.core.url),
        outbox=OutboxPolicy(lease_seconds=table.lease_seconds,
                            forward_timeout_seconds=table.lease_seconds * 0.75,
                            backoff_base_seconds=table.backoff_base_seconds,
                            backoff_cap_seconds=table.backoff_cap_seconds,
                            max_failures=table.max_failures,
                            cache_seconds=table.cache_seconds,
                            in_place_at_once=table.in_place_at_once),
        followup_workers=table.followup_workers, queue_cache_seconds=table.queue_cache_seconds,
        watch_seconds=settings.store.watch_seconds, reach=reach,
        weekly_day=settings.reach.weekly_day())


def _consumers(settings: Settings, answers: AnswerService, store: Store) -> OutboxConsumers:
    table = settings.answers
    consumers = OutboxConsumers(answers, ConsumerConfig(consumers=table.consumers,
                                                        poll_seconds=table.poll_seconds))
    REGISTRY.gauges["clarify_outbox_entries"] = _gauge(store.outbox_size)
    REGISTRY.gauges["clarify_outbox_parked_entries"] = _gauge(store.outbox_parked)
    REGISTRY.gauges["clarify_outbox_oldest_due_seconds"] = \
        lambda: store.outbox_overdue(now=answers.clock.now())
    return consumers


def _gauge(read: Callable[[], Awaitable[int]]) -> Callable[[], Awaitable[float]]:
    async def value() -> float:
        return float(await read())

    return value

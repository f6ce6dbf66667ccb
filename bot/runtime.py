"""Assembling the engine: one place that wires the core client, store, channels, audit and worker.

Used by the long-running service, the demo and the tests, so all three run the same wiring.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from bot.audit import Audit, AuditSink
from bot.channel import Channel
from bot.clock import Clock
from bot.core import models as m
from bot.core.client import CoreClient
from bot.engine.deadletters import DeadLetterReporter
from bot.engine.delivery import Deliverer
from bot.engine.digests import DigestSender
from bot.engine.handler import JobHandler
from bot.engine.routing import Routing
from bot.settings import ClarifySettings, SlackSettings, TeamsSettings
from bot.store.base import Store
from bot.worker import Worker, WorkerConfig


@dataclass
class Engine:
    core: CoreClient
    store: Store
    channels: dict[str, Channel]
    routing: Routing
    audit: Audit
    deliverer: Deliverer
    handler: JobHandler
    digests: DigestSender
    dead_letters: DeadLetterReporter
    worker: Worker


@dataclass
class EngineParts:
    """Everything the engine needs from outside; the rest is derived."""

    core: CoreClient
    store: Store
    channels: dict[str, Channel]
    clarify: ClarifySettings
    clock: Clock
    audit_sink: AuditSink
    slack: SlackSettings = field(default_factory=SlackSettings)
    teams: TeamsSettings = field(default_factory=TeamsSettings)
    worker_id: str = "worker-1"
    worker: WorkerConfig = field(default_factory=WorkerConfig)
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep  # between send retries


def build_engine(parts: EngineParts) -> Engine:
    routing = Routing(
        channels=tuple(m.Channel(c) for c in parts.clarify.channels if str(c) in parts.channels),
        slack=parts.slack,
        teams=parts.teams,
    )
    audit = Audit(sink=parts.audit_sink, core=parts.core)
    deliverer = Deliverer(
        store=parts.store,
        core=parts.core,
        channels=parts.channels,
        worker_id=parts.worker_id,
        sleep=parts.sleep,
    )
    handler = JobHandler(
        core=parts.core,
        store=parts.store,
        deliverer=deliverer,
        routing=routing,
        audit=audit,
        clock=parts.clock,
        settings=parts.clarify,
    )
    digests = DigestSender(
        core=parts.core,
        store=parts.store,
        deliverer=deliverer,
        routing=routing,
        audit=audit,
        clock=parts.clock,
    )
    dead_letters = DeadLetterReporter(
        core=parts.core,
        store=parts.store,
        deliverer=deliverer,
        routing=routing,
        audit=audit,
        clock=parts.clock,
    )
    # heartbeats pace themselves on real time; only send retries take the injected sleep
    worker = Worker(
        core=parts.core,
        handler=handler,
        digests=digests,
        dead_letters=dead_letters,
        config=parts.worker,
    )
    return Engine(
        core=parts.core,
        store=parts.store,
        channels=parts.channels,
        routing=routing,
        audit=audit,
        deliverer=deliverer,
        handler=handler,
        digests=digests,
        dead_letters=dead_letters,
        worker=worker,
    )

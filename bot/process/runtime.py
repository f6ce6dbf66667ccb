"""Assembling the engine: one place that wires the core client, store, channels, audit, worker
and the answer path.

Used by the long-running service (``clarify_bot.app``), the demo and the tests, so all of them run
the same wiring. Nothing is wired after construction: the pieces both the job handler and the
answer path use (the steward's messages, card refresh) are built first and handed to each, so
neither knows the other.
"""

from __future__ import annotations

import asyncio
import random as _random
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from functools import partial

from bot.answering.answers import AnswerService, OutboxPolicy
from bot.answering.followups import Followups
from bot.audit import Audit, AuditSink
from bot.channel import Address, Channel, ContractWords, Housekeeping
from bot.chat import SlackTenants, UserTenants, WorkspaceTenants
from bot.clock import Clock
from bot.core.client import CoreClient
from bot.engine.asking import Asking
from bot.engine.away import AwayCheck
from bot.engine.deadletters import DeadLetterReporter
from bot.engine.delivery import Deliverer
from bot.engine.digests import DigestSender
from bot.engine.handler import JobHandler, Outcomes
from bot.engine.held import HoldKeeper
from bot.engine.holds import Holds
from bot.engine.lasting import LastingRefusals
from bot.engine.notices import NoticeSender
from bot.engine.reach_reports import WeeklyReports
from bot.engine.recovery import Recovery
from bot.engine.refresh import CardRefresher
from bot.engine.reminders import Reminders
from bot.engine.routing import Routing
from bot.engine.stewards import Stewards
from bot.engine.trail import Trail
from bot.engine.unreported import UnreportedCards
from bot.engine.zones import Zones
from bot.interaction.attention import TTL_SECONDS, AttentionBoard
from bot.interaction.declines import Declines
from bot.interaction.interactions import Interactions, tenant_of
from bot.interaction.reach import ReachDesk
from bot.process.holdrecovery import HoldRecovery
from bot.process.pauses import Pauses
from bot.process.storewatch import WATCH_SECONDS, StoreWatch, watchable
from bot.process.worker import Worker, WorkerConfig
from bot.reach.recording import ReachRecorder
from bot.settings import ClarifySettings, SlackSettings, TeamsSettings
from bot.store.base import Store


@dataclass
class Engine:
    core: CoreClient
    store: Store
    channels: dict[str, Channel]
    routing: Routing
    audit: Audit
    deliverer: Deliverer
    trail: Trail
    zones: Zones  # the people's zones and working hours, one per engine
    refusals: LastingRefusals  # remembered lasting refusals of the platforms
    stewards: Stewards
    refresher: CardRefresher
    handler: JobHandler
    held: HoldKeeper  # held jobs carried on (housekeeping)
    digests: DigestSender
    notices: NoticeSender
    reminders: Reminders
    dead_letters: DeadLetterReporter
    worker: Worker
    answers: AnswerService
    interactions: Interactions
    # notices a store that lost its data (None: a store without a generation)
    storewatch: StoreWatch | None = None
    reach: ReachRecorder | None = None  # the reach record's writer (None: not kept)
    weekly: WeeklyReports | None = None  # the stewards' weekly reach report (None: none)
    away: AwayCheck | None = None  # whether a person is away (None: [clarify.away] off)


@dataclass
class EngineParts:
    """Everything the engine needs from outside; the rest is derived."""

    core: CoreClient
    store: Store
    channels: dict[str, Channel]
    clarify: ClarifySettings
    clock: Clock
    audit_sink: AuditSink
    slack: SlackTenants = field(default_factory=SlackSettings)
    teams: TeamsSettings = field(default_factory=TeamsSettings)
    # which tenant a verified chat user acts in, per platform, as each mount supplies it
    # (``Platform.tenants``); None: the settings' (``slack``, ``teams``)
    tenants: Mapping[str, UserTenants] | None = None
    worker_id: str = "worker-1"
    worker: WorkerConfig = field(default_factory=WorkerConfig)
    # a platform's per-installation pauses (``Platform.pauses``: a distributed Slack app)
    pauses: Pauses | None = None
    outbox: OutboxPolicy = field(default_factory=OutboxPolicy)
    followup_workers: int = 2  # tasks showing what follows answers (card updates, notes)
    queue_cache_seconds: float = TTL_SECONDS  # a steward's attention queue is remembered
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep  # between send retries
    random: Callable[[], float] = _random.random  # the retries' jitter draws (bot.retry)
    watch_seconds: float = WATCH_SECONDS  # store.watch_seconds (bot.process.storewatch)
    # writes the reach record from the audit events, and expires it (None: not kept)
    reach: ReachRecorder | None = None
    # the day of the stewards' weekly reach report (Monday=0; None: none), when it is kept
    weekly_day: int | None = 0


async def platform_locale(zones: Zones, address: Address) -> str | None:
    """The person's locale as their platform states it (the channel's profile, kept a day by
    ``bot.engine.zones``: Slack's ``users.info``, the Teams activity's ``locale``)."""
    return (await zones.profile(address)).locale


def build_engine(parts: EngineParts) -> Engine:
    core, store, channels, clock = parts.core, parts.store, parts.channels, parts.clock
    settings: dict[str, UserTenants] = {"slack": WorkspaceTenants(parts.slack),
                                        "teams": parts.teams}
    tenants = parts.tenants if parts.tenants is not None else settings
    # how each platform maps onto the core contract's words: its people's identity kind, and
    # the channel word of its answers and delivery reports
    words = ContractWords.of(channels)
    # an Entra-addressed platform's aliases are scoped by the tenant map its mount supplied, as
    # its users' clicks are
    routing = Routing(
        channels=tuple(str(c) for c in parts.clarify.channels if str(c) in channels),
        slack=parts.slack, teams=parts.teams, tenants=tenants, words=words,
    )
    audit = Audit(sink=parts.audit_sink, core=core, observer=parts.reach)
    # one per engine: every person's zone is decided here, and a profile read is kept once in
    # this process (``bot.engine.zones``), for as long as the engine's own clock says
    zones = Zones(store, channels, parts.clarify.hours,
                  monotonic=lambda: parts.clock.now().timestamp())
    # whether a person is away, asked of their platform (``bot.engine.away``): None when
    # ``[clarify.away]`` is off, so no platform is asked
    away = AwayCheck(channels, parts.clarify.away, zones,
                     monotonic=lambda: parts.clock.now().timestamp()) \
        if parts.clarify.away.enabled else None
    deliverer = Deliverer(ledger=store, core=core, channels=channels, worker_id=parts.worker_id,
                          sleep=parts.sleep, random=parts.random,
                          locales=partial(platform_locale, zones))  # every card sent, in it
    trail = Trail(audit, clock)
    refusals = LastingRefusals(store)  # remembered: shared by every job of the engine
    board = AttentionBoard(core=core, clock=clock, tenant=partial(tenant_of, tenants=tenants),
                           ttl_seconds=parts.queue_cache_seconds)
    stewards = Stewards(core, deliverer, routing, trail, clock, parts.clarify, notices=store,
                        zones=zones, told=board.steward_told, records=store)
    refresher = CardRefresher(core=core, store=store, channels=channels, clock=clock,
                              zones=zones)
    reminders = Reminders(core=core, store=store, deliverer=deliverer, routing=routing,
                          refresher=refresher, trail=trail, clock=clock, settings=parts.clarify,
                          zones=zones, away=away)
    asking = Asking(core=core, store=store, deliverer=deliverer, routing=routing, clock=clock,
                    settings=parts.clarify, trail=trail, zones=zones, refusals=refusals,
                    reminders=reminders, away=away)
    handler = JobHandler(
        core=core, store=store, routing=routing, clock=clock, settings=parts.clarify,
        stewards=stewards, refresher=refresher, zones=zones, holds=Holds(store, clock),
        asking=asking, recovery=Recovery(core=core, store=store, deliverer=deliverer,
                                         trail=trail, settings=parts.clarify, asking=asking))
    outcomes = Outcomes()  # the worker's and the held jobs' together
    held = HoldKeeper(core=core, store=store, clock=clock, handler=handler,
                    lease_seconds=parts.worker.lease_seconds,
                    concurrency=parts.worker.concurrency, outcomes=outcomes)
    digests = DigestSender(core=core, store=store, deliverer=deliverer, routing=routing,
                           audit=audit, clock=clock, zones=zones, away=away,
                           window=parts.clarify.escalation_window)
    notices = NoticeSender(core=core, store=store, deliverer=deliverer, routing=routing,
                           audit=audit, clock=clock, told=board.steward_told, zones=zones)
    dead_letters = DeadLetterReporter(core=core, store=store, deliverer=deliverer,
                                      routing=routing, audit=audit, clock=clock, zones=zones)
    weekly = None
    if parts.reach is not None and parts.weekly_day is not None:
        weekly = WeeklyReports(reach=parts.reach.reach, core=core, ledger=store,
                               deliverer=deliverer, routing=routing, zones=zones, clock=clock,
                               weekday=parts.weekly_day)
    watch = None
    if watchable(store) is not None:
        watch = StoreWatch(store=store, clock=clock, audit=audit,
                           interval_seconds=parts.watch_seconds,
                           recovery=HoldRecovery(store=store, core=core, audit=audit, clock=clock,
                                                 lease_seconds=parts.worker.lease_seconds,
                                                 reminders=reminders))
    # question cards a killed worker never reported, looked at a lease after they were sent
    unreported = UnreportedCards(core=core, store=store, deliverer=deliverer, clock=clock,
                                 after=timedelta(seconds=parts.worker.lease_seconds))
    # the housekeeping pass, in order: a lost store noticed before held jobs are looked at
    chores = [*([watch.check_if_due] if watch is not None else []), held.flush,
              digests.flush, notices.flush, reminders.flush, unreported.flush,
              dead_letters.report,
              *([parts.reach.housekeep] if parts.reach is not None else []),
              *([weekly.run] if weekly is not None else []),
              *(c.keep_house for c in channels.values() if isinstance(c, Housekeeping))]
    # heartbeats pace themselves on real time; only send retries take the injected sleep
    worker = Worker(core=core, handler=handler, held=held, clock=clock, config=parts.worker,
                    chores=chores, random=parts.random, outcomes=outcomes, pauses=parts.pauses)
    followups = Followups(core=core, store=store, channels=channels, clock=clock,
                          refresher=refresher, stewards=stewards,
                          workers=parts.followup_workers, board=board,
                          unreported=unreported)
    answers = AnswerService(core=core, store=store, audit=audit, clock=clock,
                            followups=followups, policy=parts.outbox, random=parts.random,
                            words=words)
    declines = Declines(core=core, ledger=store, kv=store, trail=trail, refresher=refresher,
                        clock=clock, redo=handler.handle)
    desk = ReachDesk(core=core, reach=parts.reach.reach if parts.reach is not None else None,
                     clock=clock, zones=zones, tenant=partial(tenant_of, tenants=tenants))
    interactions = Interactions(core=core, store=store, digests=digests, clock=clock,
                                tenants=tenants, declines=declines,
                                board=board, zones=zones, reach=desk)
    return Engine(core=core, store=store, channels=channels, routing=routing, audit=audit,
                  deliverer=deliverer, trail=trail, zones=zones, refusals=refusals,
                  stewards=stewards, refresher=refresher, handler=handler, held=held,
                  digests=digests, notices=notices, reminders=reminders,
                  dead_letters=dead_letters, worker=worker,
                  answers=answers, interactions=interactions, storewatch=watch,
                  reach=parts.reach, weekly=weekly, away=away)

"""The steward's weekly reach report in chat: one message a week to each steward of a workspace
the reach record saw questions in, in their working hours and language.

One of the worker's chores (``run``, at most every ``EVERY``):

- the workspaces with questions over the last ``LOOK_BACK`` come from the record
  (``ReachLog.workspaces``: one clarification of each), and each workspace's steward from the
  core's record of that clarification (``workspace.steward_id``: the core decides who stewards a
  workspace; a workspace with none gets no report), remembered for ``STEWARDS_TTL``;
- a steward is due once their report day (``[reach] weekly_day``, Monday by default) has come
  in their zone and they are in their working hours (the tenant's, in their zone, as for every
  question); a steward first due later in the week (the bot was down on the day, the day is not
  a working day of theirs) gets it then, once per ISO week;
- the report covers the seven days before the report day in their zone, only the workspaces
  they steward, counts only (``bot.reach.views.weekly``): no names, no titles, no span text;
- it is sent with its own delivery key per tenant, steward and week, reserved in the store
  before the send: every worker may run the chore, and a steward gets one report a week however
  many run it. A reservation a live worker holds is left alone; one left by a worker that died
  mid-send (older than ``STALE_CLAIM``) is taken over and reconciled as any card's is.

A week with no question in the steward's workspaces sends nothing. A steward who cannot be
routed, or whose send fails, is tried again after ``RETRY_AFTER``. Nothing here fails the worker:
a failure is logged (value-free) and counted (``clarify_reach_reports_total``).
"""

from __future__ import annotations

from collections import OrderedDict, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

import structlog

from bot.channel import Address
from bot.clock import Clock
from bot.core import errors as e
from bot.core.client import CoreClient
from bot.engine import views
from bot.engine.delivery import Delivered, Deliverer
from bot.engine.hours import working_time
from bot.engine.routing import Routing
from bot.engine.zones import Zones
from bot.metrics import REGISTRY
from bot.reach.log import ReachEntry, ReachLog
from bot.reach.report import compute
from bot.reach.views import weekly
from bot.store.base import DeliveryKey, DeliveryLedger, SlotState
from bot.store.errors import StoreError

log = structlog.get_logger("clarify.reach")

KIND = "steward_reach"  # the weekly report's delivery kind (not reported to the core)
EVERY = timedelta(minutes=15)
LOOK_BACK = timedelta(days=15)  # a report sent late in its week still reads its whole week
STEWARDS_TTL = timedelta(hours=1)
STALE_CLAIM = timedelta(minutes=10)
RETRY_AFTER = timedelta(hours=2)
KEPT = 10_000  # (tenant, steward, week) decisions remembered at most
DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
OUTCOMES = ("sent", "already_sent", "nothing_to_report", "unroutable", "failed")
REGISTRY.preset("clarify_reach_reports_total", outcome=OUTCOMES)

Steward = tuple[str, str]  # (tenant, steward person id)


def week_of(local: date, weekday: int) -> date | None:
    """The report day of the ISO week ``local`` falls in, when it has come (else None)."""
    day = local - timedelta(days=local.weekday()) + timedelta(days=weekday)
    return day if local >= day else None


def week_name(day: date) -> str:
    year, week, _ = day.isocalendar()
    return f"{year}-W{week:02d}"


def window(day: date, zone: ZoneInfo) -> tuple[datetime, datetime]:
    """The seven days before ``day`` in ``zone``, as UTC instants [start, end)."""
    start = datetime.combine(day - timedelta(days=7), time(0), tzinfo=zone)
    end = datetime.combine(day, time(0), tzinfo=zone)
    return start.astimezone(UTC), end.astimezone(UTC)


def report_key(tenant: str, steward_id: str, week: str) -> DeliveryKey:
    return DeliveryKey(f"reach.{tenant}.{week}", steward_id, 0, KIND)


@dataclass
class WeeklyReports:
    reach: ReachLog
    core: CoreClient
    ledger: DeliveryLedger
    deliverer: Deliverer
    routing: Routing
    zones: Zones
    clock: Clock
    weekday: int = 0  # Monday
    every: timedelta = EVERY
    _at: datetime | None = None
    # (tenant, workspace) -> (its steward or None, until when that is believed)
    _stewards: dict[tuple[str, str], tuple[str | None, datetime]] = field(default_factory=dict)
    _found_at: datetime | None = None
    _workspaces: dict[tuple[str, str], str] = field(default_factory=dict)
    # (tenant, steward, week) decided (sent, or nothing to report), or tried again after when
    _done: OrderedDict[tuple[str, str, str], datetime | None] = field(
        default_factory=OrderedDict)
    _zones: dict[Steward, ZoneInfo] = field(default_factory=dict)  # each steward's, last seen

    async def run(self) -> int:
        """Send every due steward's report; returns how many went out. Never raises."""
        now = self.clock.now()
        if self._at is not None and now - self._at < self.every:
            return 0
        self._at = now
        try:
            stewards = await self._stewarded(now)
        except Exception as exc:  # noqa: BLE001 (a chore: the record or the core is away)
            log.warning("reach.weekly_failed", error=type(exc).__name__)
            return 0
        sent = 0
        entries: dict[str, list[ReachEntry]] = {}  # per tenant, read once a pass
        for (tenant, steward_id), workspaces in sorted(stewards.items()):
            try:
                sent += await self._one(tenant, steward_id, workspaces, now, entries)
            except (e.CoreError, StoreError) as exc:
                log.warning("reach.weekly_failed", error=type(exc).__name__)
                REGISTRY.inc("clarify_reach_reports_total", outcome="failed")
            except Exception as exc:  # noqa: BLE001 (one steward's failure is not the rest's)
                log.warning("reach.weekly_failed", error=type(exc).__name__)
                REGISTRY.inc("clarify_reach_reports_total", outcome="failed")
        return sent

    async def _stewarded(self, now: datetime) -> dict[Steward, set[str]]:
        """Each steward and the workspaces of theirs the record saw questions in."""
        if self._found_at is None or now - self._found_at >= STEWARDS_TTL:
            self._workspaces = await self.reach.workspaces(since=now - LOOK_BACK)
            self._found_at = now
        found: dict[Steward, set[str]] = defaultdict(set)
        for (tenant, workspace), clarification_id in self._workspaces.items():
            steward = await self._steward_of(tenant, workspace, clarification_id, now)
            if steward is not None:
                found[(tenant, steward)].add(workspace)
        return found

    async def _steward_of(self, tenant: str, workspace: str, clarification_id: str,
                          now: datetime) -> str | None:
        kept = self._stewards.get((tenant, workspace))
        if kept is not None and kept[1] > now:
            return kept[0]
        try:
            c = await self.core.get_clarification(clarification_id=clarification_id)
        except e.ClarificationNotFound:
            steward = None  # erased meanwhile: found again through another one next hour
        else:
            if c.tenant_id != tenant or c.workspace.workspace_id != workspace:
                steward = None  # the record and the core disagree: nobody is told anything
            else:
                steward = c.workspace.steward_id
        self._stewards[(tenant, workspace)] = (steward, now + STEWARDS_TTL)
        return steward

    def _decided(self, key: tuple[str, str, str], now: datetime) -> bool:
        if key not in self._done:
            return False
        retry = self._done[key]
        return retry is None or retry > now

    def _decide(self, key: tuple[str, str, str], retry: datetime | None = None) -> None:
        self._done[key] = retry
        self._done.move_to_end(key)
        while len(self._done) > KEPT:
            self._done.popitem(last=False)

    async def _one(self, tenant: str, steward_id: str, workspaces: set[str], now: datetime,
                   entries: dict[str, list[ReachEntry]]) -> int:
        known = self._zones.get((tenant, steward_id))
        if known is not None:  # decided this week already: no core call until next week
            day = week_of(now.astimezone(known).date(), self.weekday)
            if day is not None and self._decided((tenant, steward_id, week_name(day)), now):
                return 0
        try:
            person = await self.core.get_person(person_id=steward_id, tenant_id=tenant)
        except e.PersonNotFound:
            return 0
        address = await self.routing.route(self.core, person, tenant_id=tenant)
        if not isinstance(address, Address):
            log.info("reach.weekly_unroutable")
            REGISTRY.inc("clarify_reach_reports_total", outcome="unroutable")
            return 0
        zone = await self.zones.zone(tenant, person, address)
        self._zones[(tenant, steward_id)] = zone.zone
        while len(self._zones) > KEPT:
            del self._zones[next(iter(self._zones))]
        hours = self.zones.hours(tenant)
        # in their working hours (the tenant's, read in their zone), whatever the hold rule
        # says: a zone their platform could not tell now is waited for
        if not zone.told or not hours.open_at(now, zone.zone):
            return 0
        day = week_of(now.astimezone(zone.zone).date(), self.weekday)
        if day is None:
            return 0
        week = week_name(day)
        decided = (tenant, steward_id, week)
        if self._decided(decided, now):
            return 0
        start, end = window(day, zone.zone)
        if tenant not in entries:
            entries[tenant] = await self.reach.read(tenant=tenant, since=now - LOOK_BACK)
        mine = [x for x in entries[tenant]
                if x.workspace in workspaces and start <= x.at < end]
        if not mine:
            self._decide(decided)
            REGISTRY.inc("clarify_reach_reports_total", outcome="nothing_to_report")
            return 0
        report = compute(mine, hours=working_time(self.zones.settings))
        view = weekly(report, viewer=views.viewer(person, zone.zone),
                      start=day - timedelta(days=7), end=day - timedelta(days=1))
        key = report_key(tenant, steward_id, week)
        slot, created = await self.ledger.reserve(key, worker_id=self.deliverer.worker_id,
                                                  now=now)
        if not created:
            if slot.state is SlotState.SENT:
                self._decide(decided)
                REGISTRY.inc("clarify_reach_reports_total", outcome="already_sent")
                return 0
            if now - slot.reserved_at < STALE_CLAIM:
                return 0  # another worker is sending it
        result = await self.deliverer.deliver(key, address, view, now=now, report=False,
                                              reserved=(slot, created))
        if result.status is Delivered.NEW:
            self._decide(decided)
            REGISTRY.inc("clarify_reach_reports_total", outcome="sent")
            log.info("reach.weekly_sent", platform=address.platform, week=week)
            return 1
        if result.status is Delivered.EARLIER:
            self._decide(decided)
            REGISTRY.inc("clarify_reach_reports_total", outcome="already_sent")
            return 0
        self._decide(decided, now + RETRY_AFTER)
        REGISTRY.inc("clarify_reach_reports_total", outcome="failed")
        log.warning("reach.weekly_not_sent", platform=address.platform,
                    status=result.status.value)
        return 0

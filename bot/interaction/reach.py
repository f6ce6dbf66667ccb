"""The reach detail a steward opens in chat (Slack: the App Home's Reach tab; Teams: a card,
from the weekly report's button or the ``reach`` message): who could not be reached in the
workspaces they steward over the ``DAYS`` days before today and today, in their zone (so the
week the weekly report counted is in it whenever they open it that week), why, and what fixes
it.

Only a steward sees it: the chat identity is resolved to a person of the tenant its workspace
or Entra tenant maps to (``Interactions.tenant``), verified, and stewarding at least one
workspace (their memberships, as the core holds them; ``bot.interaction.attention.stewarded``);
anyone else gets the view that says there is nothing for them here, and a tenant's record is
never read for a person of another. The detail lists only their workspaces' entries, and names
people by display name (read from the core, a batch for the detail), never a question, a title
or a span. It is remembered per steward for ``ttl_seconds``, so opening the tab again costs
nothing.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, time, timedelta

import structlog

from bot.channel import address_of
from bot.chat import ChatUser
from bot.clock import Clock
from bot.core import batching
from bot.core import errors as e
from bot.core.client import CoreClient
from bot.core.models import Person
from bot.engine import views
from bot.engine.hours import working_time
from bot.engine.people import display_names
from bot.engine.zones import Zones
from bot.interaction.attention import stewarded
from bot.metrics import REGISTRY
from bot.reach.log import ReachLog
from bot.reach.report import compute
from bot.reach.views import detail, named
from cards.reach_views import ReachDetailView
from cards.views import Viewer

log = structlog.get_logger("clarify.reach")
DAYS = 7
TTL_SECONDS = 30.0
KEPT = 1000
OUTCOMES = ("shown", "not_steward", "unavailable")
REGISTRY.preset("clarify_reach_details_total", outcome=OUTCOMES)


@dataclass
class ReachDesk:
    core: CoreClient
    reach: ReachLog | None  # None: the record is not kept (no database, not a memory store)
    clock: Clock
    zones: Zones
    tenant: Callable[[ChatUser], str | None]  # Interactions.tenant: the one place it is decided
    ttl_seconds: float = TTL_SECONDS
    _kept: OrderedDict[tuple[str, str], tuple[datetime, ReachDetailView]] = field(
        default_factory=OrderedDict)

    async def detail(self, user: ChatUser) -> ReachDetailView:
        view = await self._detail(user)
        outcome = ("unavailable" if view.unavailable else "shown" if view.steward
                   else "not_steward")
        REGISTRY.inc("clarify_reach_details_total", outcome=outcome)
        return view

    async def _detail(self, user: ChatUser) -> ReachDetailView:
        tenant = self.tenant(user)
        if tenant is None:
            return ReachDetailView(viewer=Viewer(), steward=False)
        try:
            resolved = await self.core.resolve_person(tenant_id=tenant, identity=user.identity())
        except e.NotFound:
            return ReachDetailView(viewer=Viewer(), steward=False)
        except e.CoreError as exc:
            log.warning("reach.detail_unavailable", error=type(exc).__name__)
            return ReachDetailView(viewer=Viewer(), steward=False, unavailable=True)
        person = resolved.person
        if not resolved.verified or not stewarded(person):
            return ReachDetailView(viewer=views.viewer(person, "UTC"), steward=False)
        key = (tenant, person.person_id)
        now = self.clock.now()
        kept = self._kept.get(key)
        if kept is not None and kept[0] > now:
            return kept[1]
        view = await self._build(user, person, tenant, now)
        if not view.unavailable and self.ttl_seconds > 0:
            self._kept[key] = (now + timedelta(seconds=self.ttl_seconds), view)
            self._kept.move_to_end(key)
            while len(self._kept) > KEPT:
                self._kept.popitem(last=False)
        return view

    async def _build(self, user: ChatUser, person: Person, tenant: str, now: datetime
                     ) -> ReachDetailView:
        address = address_of(user, person.person_id)
        zone = await self.zones.zone(tenant, person, address)
        viewer = views.viewer(person, zone.zone)
        locale = (await self.zones.profile(address)).locale
        if locale:
            viewer = replace(viewer, locale=locale)
        if self.reach is None:
            return ReachDetailView(viewer=viewer, steward=True, unavailable=True)
        today = now.astimezone(zone.zone).date()
        start = today - timedelta(days=DAYS)
        since = datetime.combine(start, time(0), tzinfo=zone.zone)
        mine = stewarded(person)
        try:
            entries = [x for x in await self.reach.read(tenant=tenant, since=since)
                       if x.workspace in mine]
            report = compute(entries, hours=working_time(self.zones.settings))
            wanted = named(report)
            scope = batching.JobScope()
            await self.core.read_people(scope, tenant_id=tenant, person_ids=wanted)
            names = await display_names(self.core, wanted, tenant_id=tenant, scope=scope)
        except Exception as exc:  # noqa: BLE001 (the record or the core away: said, not raised)
            log.warning("reach.detail_unavailable", error=type(exc).__name__)
            return ReachDetailView(viewer=viewer, steward=True, unavailable=True)
        return detail(report, viewer=viewer, start=start, end=today, names=names)

    def forget(self) -> None:
        """Drop what is remembered (an erasure run in this process; tests)."""
        self._kept.clear()

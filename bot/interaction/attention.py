"""The steward's attention queue in chat (Slack's App Home, the Teams "queue" message): built
from the core once per steward and remembered for a short while, re-shown when it changes.

Building one follows the core's attention list to its end within ``QUEUE_BOUND`` (pages,
items and seconds; a list that goes on past it makes the view say so rather than give a count)
and reads the first ``QUEUE_MAX`` clarifications of the steward's (up to ``QUEUE_READ_MAX``
where the list does not say whose each is: reads decide, for the count too), so it is
remembered per steward (tenant and PERSON) for ``ttl_seconds`` on the injected clock: a person
opening their App Home again, or several opens at once (one build, shared), costs one identity
resolve. At most ``builds`` queues are built at once in a process, whoever asks. A queue the
core could not build (``unavailable``) is never remembered.

The queue changes when a steward is sent a notice or an escalation (``Stewards``' ``told``
hook) and when a steward's override is recorded (``Followups``): ``changed`` forgets what was
remembered for that steward and, on a platform whose adapter shows the queue by itself (Slack's
App Home: ``publish_with``), builds it anew and hands it to the adapter, in a task of its own so
the job or the answer that caused it does not wait. Changes for a steward whose re-publish is
still running are folded into one more build after it.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import structlog

from bot.aio import drain
from bot.channel import Address, SlackReach, TeamsReach
from bot.chat import ChatUser
from bot.clock import Clock
from bot.core import errors as e
from bot.core.client import CoreClient
from bot.core.models import Clarification, ClarificationSummary, Person, Role
from bot.core.paging import Bound
from bot.engine import views
from bot.engine.rbac import role_in
from bot.metrics import REGISTRY
from cards.views import AttentionItem, AttentionView, Viewer

log = structlog.get_logger("clarify.attention")
QUEUE_MAX = 50  # clarifications one chat queue lists; the rest is a count (the CLI lists all)
# how far a build follows the attention list for the count: 50 pages of up to 200 (a core that
# serves small pages is followed as far), 10,000 items, 10 s; past it the view says "and more"
QUEUE_BOUND = Bound(pages=50, items=10_000, seconds=10.0)
QUEUE_READS = 8  # clarifications read from the core at once for one queue
# clarifications read at most for one queue: where the list's entries do not say their tenant
# and workspace (a baseline core), reads decide which are the steward's, to show and to count
QUEUE_READ_MAX = 2 * QUEUE_MAX
TTL_SECONDS = 30.0  # how long a steward's queue is remembered (answers.queue_cache_seconds)
BUILDS = 2  # queues built at once in a process, whoever asks
KEPT = 1000  # stewards whose queue is remembered at most (the oldest is forgotten first)
OUTCOMES = ("built", "remembered", "shared", "unavailable")

Key = tuple[str, str]  # (tenant, person id)
Publish = Callable[[ChatUser, AttentionView], Awaitable[None]]

REGISTRY.preset("clarify_attention_queues_total", outcome=OUTCOMES)
REGISTRY.preset("clarify_lists_cut_total", list=("attention",))


def chat_user_of(address: Address) -> ChatUser | None:
    """The chat identity an address reaches (the steward's, for their queue)."""
    reach = address.reach
    if isinstance(reach, SlackReach):
        return ChatUser(platform=address.platform, user_id=address.user_id,
                        team_id=reach.team_id, enterprise_id=reach.enterprise_id)
    if isinstance(reach, TeamsReach):
        return ChatUser(platform=address.platform, user_id=address.user_id,
                        aad_tenant_id=reach.aad_tenant_id)
    return None


def stewarded(person: Person) -> frozenset[str]:
    """The workspaces the person is the steward of (their role there, as the core holds it)."""
    return frozenset(ms.workspace_id for ms in person.memberships
                     if role_in(person, ms.workspace_id) is Role.STEWARD)


def attention_item(person: Person, c: Clarification) -> AttentionItem:
    """One queue line: the document's title only where the steward passes the read gate,
    otherwise the neutral reference the steward escalation uses."""
    return AttentionItem(clarification_id=c.id, document=views.steward_document(c, person),
                         severity=c.severity, state=c.state)


@dataclass
class AttentionBoard:
    core: CoreClient
    clock: Clock
    tenant: Callable[[ChatUser], str | None]  # Interactions.tenant: the one place it is decided
    ttl_seconds: float = TTL_SECONDS
    builds: int = BUILDS
    kept: int = KEPT
    _remembered: OrderedDict[Key, tuple[datetime, AttentionView]] = field(
        default_factory=OrderedDict)
    _building: dict[Key, asyncio.Task[AttentionView]] = field(default_factory=dict)
    _publishers: dict[str, Publish] = field(default_factory=dict)
    _republishing: dict[Key, bool] = field(default_factory=dict)  # key → changed again since
    _gate: asyncio.Semaphore | None = None
    tasks: set[asyncio.Task[None]] = field(default_factory=set)

    def publish_with(self, platform: str, publish: Publish) -> None:
        """An adapter that shows the queue by itself (Slack's App Home) is handed it anew when
        it changes."""
        self._publishers[platform] = publish

    # ---------------------------------------------------------------- reading

    async def for_user(self, user: ChatUser) -> AttentionView:
        """A chat identity's queue: the clarifications the core's attention list holds for the
        person's tenant, in workspaces they steward, titles only where they may read the
        source. Not a steward, not verified, or not a person the core knows in a served
        tenant: the empty view; the core away: ``unavailable``."""
        tenant = self.tenant(user)
        if tenant is None:
            return AttentionView(viewer=Viewer(), steward=False)
        try:
            resolved = await self.core.resolve_person(tenant_id=tenant, identity=user.identity())
        except e.NotFound:
            return AttentionView(viewer=Viewer(), steward=False)
        except e.CoreError as exc:
            return _unavailable(exc)
        if not resolved.verified:  # a steward's queue needs the enterprise identity
            return AttentionView(viewer=_viewer(resolved.person), steward=False)
        return await self.for_person(resolved.person, tenant)

    async def for_person(self, person: Person, tenant: str, *, fresh: bool = False
                         ) -> AttentionView:
        """The steward's queue, remembered for ``ttl_seconds`` (``fresh``: built now)."""
        key = (tenant, person.person_id)
        now = self.clock.now()
        kept = self._remembered.get(key)
        if not fresh and kept is not None and kept[0] > now:
            REGISTRY.inc("clarify_attention_queues_total", outcome="remembered")
            return kept[1]
        running = self._building.get(key)
        if not fresh and running is not None:
            REGISTRY.inc("clarify_attention_queues_total", outcome="shared")
            return await asyncio.shield(running)
        build = asyncio.ensure_future(self._build(person, tenant))
        self._building[key] = build
        try:
            view = await asyncio.shield(build)
        finally:
            if self._building.get(key) is build:
                del self._building[key]
        if not view.unavailable and self.ttl_seconds > 0:
            self._remember(key, now + timedelta(seconds=self.ttl_seconds), view)
        REGISTRY.inc("clarify_attention_queues_total",
                     outcome="unavailable" if view.unavailable else "built")
        return view

    def forget(self, tenant: str, person_id: str) -> None:
        self._remembered.pop((tenant, person_id), None)

    # ---------------------------------------------------------------- changes

    async def steward_told(self, tenant_id: str, person: Person, address: Address) -> None:
        """The hook of ``Stewards`` and ``NoticeSender``: a notice or an escalation went to the
        steward at ``address``."""
        user = chat_user_of(address)
        if user is not None and address.verified:
            self.changed(user, person, tenant_id)
        else:
            self.forget(tenant_id, person.person_id)

    def changed(self, user: ChatUser, person: Person, tenant: str) -> None:
        """The steward's queue changed: forget it, and re-show it where it shows by itself."""
        self.forget(tenant, person.person_id)
        if user.platform not in self._publishers:
            return
        key = (tenant, person.person_id)
        if key in self._republishing:
            self._republishing[key] = True  # the running re-publish builds once more
            return
        self._republishing[key] = False
        task = asyncio.create_task(self._republish(key, user, person, tenant))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _republish(self, key: Key, user: ChatUser, person: Person, tenant: str) -> None:
        publish = self._publishers[user.platform]
        try:
            while True:
                self._republishing[key] = False
                view = await self.for_person(person, tenant, fresh=True)
                if not view.unavailable:  # the core away: the queue shown stays as it was
                    await publish(user, view)
                if not self._republishing[key]:
                    return
        except Exception as exc:  # never the job's or the answer's failure
            log.warning("attention.republish_failed", error=type(exc).__name__)
        finally:
            self._republishing.pop(key, None)

    async def drain(self) -> None:
        """Wait for re-publishes still running (tests, shutdown)."""
        await drain(self.tasks)

    # ---------------------------------------------------------------- building

    async def _build(self, person: Person, tenant: str) -> AttentionView:
        mine = stewarded(person)
        if not mine:
            return AttentionView(viewer=_viewer(person), steward=False)
        if self._gate is None:
            self._gate = asyncio.Semaphore(self.builds)
        try:
            async with self._gate:
                entries, complete = await self._attention_entries(tenant, mine)
                shown, read = await self._read_mine(entries, tenant, mine)
                more, counted = await self._count_rest(entries[read:], tenant, mine,
                                                       reads=QUEUE_READ_MAX - read)
        except e.CoreError as exc:
            return _unavailable(exc)
        return AttentionView(viewer=_viewer(person), steward=True,
                             items=tuple(attention_item(person, c) for c in shown),
                             more=more, whole=complete and counted)

    async def _attention_entries(self, tenant: str, workspaces: frozenset[str]
                                 ) -> tuple[list[ClarificationSummary], bool]:
        """The entries of the tenant's attention queue in those workspaces, in the core's order
        (an entry that does not say its tenant or workspace is kept: its read decides), and
        whether the core's list was read to its end."""
        queue = await self.core.attention_queue(tenant_id=tenant, bound=QUEUE_BOUND)
        if not queue.complete:
            REGISTRY.inc("clarify_lists_cut_total", list="attention")
        return [s for s in queue.items if s.tenant_id in (None, tenant)
                and (s.workspace_id is None or s.workspace_id in workspaces)], queue.complete

    async def _read_mine(self, entries: list[ClarificationSummary], tenant: str,
                         mine: frozenset[str]) -> tuple[list[Clarification], int]:
        """The first ``QUEUE_MAX`` clarifications of ``entries`` that are the steward's, in
        order, read a batch at a time (at most ``QUEUE_READ_MAX``), and how many were read."""
        found: list[Clarification] = []
        read = 0
        while read < min(len(entries), QUEUE_READ_MAX) and len(found) < QUEUE_MAX:
            batch = entries[read:read + min(QUEUE_MAX - len(found), QUEUE_READ_MAX - read)]
            read += len(batch)
            found += [c for c in await self._read_all([s.id for s in batch])
                      if c.tenant_id == tenant and c.workspace.workspace_id in mine]
        return found, read

    async def _count_rest(self, rest: list[ClarificationSummary], tenant: str,
                          mine: frozenset[str], *, reads: int) -> tuple[int, bool]:
        """How many of the entries not shown are the steward's, and whether that is exact: an
        entry that does not say its tenant and workspace (a baseline list) is read to decide,
        up to ``reads`` of them; past that the count is a lower bound."""
        unknown = [s for s in rest if s.tenant_id is None or s.workspace_id is None]
        checked = await self._read_all([s.id for s in unknown[:max(reads, 0)]])
        theirs = sum(1 for c in checked if c.tenant_id == tenant
                     and c.workspace.workspace_id in mine)
        return len(rest) - len(unknown) + theirs, len(checked) == len(unknown)

    async def _read_all(self, ids: list[str]) -> list[Clarification]:
        gate = asyncio.Semaphore(QUEUE_READS)

        async def read(cid: str) -> Clarification:
            async with gate:
                return await self.core.get_clarification(clarification_id=cid)

        return list(await asyncio.gather(*(read(cid) for cid in ids)))

    def _remember(self, key: Key, until: datetime, view: AttentionView) -> None:
        self._remembered[key] = (until, view)
        self._remembered.move_to_end(key)
        while len(self._remembered) > self.kept:
            self._remembered.popitem(last=False)


def _viewer(person: Person) -> Viewer:
    """The queue shows no time of day, so no zone is decided for it: the person's locale
    only."""
    return Viewer(locale=person.locale)


def _unavailable(exc: Exception) -> AttentionView:
    log.warning("interactions.attention_unavailable", error=type(exc).__name__)
    return AttentionView(viewer=Viewer(), steward=False, unavailable=True)

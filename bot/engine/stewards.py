"""Messages to the workspace steward: the redacted escalation, the high-severity notice (queued
and sent in a batch per steward by ``bot.engine.notices``), the conflict notices and the
unreachable-quorum notice.

Each is redacted (no span text, no question, no dates), sent once per delivery key, and on record
with its reason codes as fields. A steward who may not read the document gets a neutral reference
instead of its title and link (``views.steward_document``).

Inside a job each method takes the job's ``scope`` (``bot.core.batching``): the steward and the
names read from the job's people batch, the reports held until the job ends; the answer path
passes none, and its reports go at once.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

from bot.audit import EventFacts, SkipPair
from bot.channel import Address, Message
from bot.clock import Clock
from bot.core.batching import JobScope
from bot.core.client import CoreClient
from bot.core.models import Clarification, DeliveryKind, LeasedJob, Person, ReasonCode
from bot.engine import away, views
from bot.engine.delivery import Delivered, Deliverer, Result
from bot.engine.people import display_names
from bot.engine.rbac import may_read
from bot.engine.routing import Routing, Unroutable
from bot.engine.trail import Skip, Trail, pairs
from bot.engine.zones import Zones
from bot.settings import ClarifySettings
from bot.store.base import DeliveryKey, KeyValues, NoticeItem, NoticeLists
from cards.views import SkippedCandidate

# a message went to a steward (tenant, the steward, where): ``bot.interaction.attention`` re-shows
# their queue
Told = Callable[[str, Person, Address], Awaitable[None]]

# Delivery kinds of steward messages that the core's DeliveryKind does not name (not reported
# as deliveries; their audit events say they went out).
CONFLICT_KIND = "steward_conflict"
LATE_CONFLICT_KIND = "steward_conflict_late"
QUORUM_KIND = "steward_quorum"


@dataclass(frozen=True, slots=True)
class Reached:
    person: Person
    address: Address


@dataclass
class Stewards:
    core: CoreClient
    deliverer: Deliverer
    routing: Routing
    trail: Trail
    clock: Clock
    settings: ClarifySettings
    notices: NoticeLists  # where a high-severity notice waits for its window's message
    # the people's zones and working hours: the engine's one (``bot.engine.zones``)
    zones: Zones
    # a message went to the steward: their attention queue changed (``bot.interaction.attention``)
    told: Told | None = None
    # the bot's records of the people passed over for being away (``bot.engine.away``): the
    # steward reads their return date (None: the skips as the core's trail names them)
    records: KeyValues | None = None

    async def reach(self, c: Clarification, *, scope: JobScope | None = None
                    ) -> Reached | Skip:
        """The workspace steward and where to reach them, or why they cannot be reached."""
        steward_id = c.workspace.steward_id
        if steward_id is None:
            return Skip("-", ReasonCode.NO_DELIVERY_ALIAS, "the workspace has no steward")
        reached = await self.routing.reach(self.core, steward_id, tenant_id=c.tenant_id,
                                           scope=scope, role="steward")
        if isinstance(reached, Unroutable):
            return Skip(steward_id, reached.reason, reached.why, platform=reached.platform)
        return Reached(*reached)

    async def zone(self, c: Clarification, reached: Reached) -> ZoneInfo:
        """The steward's zone (``bot.engine.zones``): every time their message shows."""
        return (await self.zones.zone(c.tenant_id, reached.person, reached.address)).zone

    async def skipped(self, c: Clarification, skips: list[SkipPair], names: dict[str, str]
                      ) -> tuple[SkippedCandidate, ...]:
        """The skips as the steward reads them: a person passed over for being away with
        their return date, from the bot's record (``bot.engine.away.steward_skips``)."""
        if self.records is None:
            return tuple(SkippedCandidate(names.get(s.person_id, s.person_id), s.reason_code)
                         for s in skips)
        return await away.steward_skips(self.records, c.id, skips, names)

    async def escalate(self, c: Clarification, job: LeasedJob, *, skipped: list[Skip],
                       recovered: list[str], scope: JobScope | None = None) -> bool:
        """The last attempt: the redacted question goes to the workspace steward, with every
        skip reason as words on the card and as fields on the event."""
        attempt = len(job.payload.ranking)
        skips = pairs(c, skipped)
        reached = await self.reach(c, scope=scope)
        if isinstance(reached, Skip):
            await self._failed(c, job, attempt, reached.reason, skips,
                               f"The workspace steward cannot be reached ({reached.why}).",
                               scope=scope, facts=EventFacts.of(c, cause=reached.why,
                                                                platform=reached.platform))
            return False
        steward, address = reached.person, reached.address
        key = DeliveryKey(c.id, steward.person_id, attempt,
                          DeliveryKind.STEWARD_ESCALATION.value)
        waiting = list(dict.fromkeys([*views.unanswered(c), *recovered]))
        confirmed = c.quorum.confirmed_by if c.quorum.remaining > 0 else []
        names = await self.names([*(s.person_id for s in skips), *waiting, *confirmed],
                                 scope=scope)
        zone = await self.zone(c, reached)
        message: Message = views.escalation(
            c, key=key, steward=steward, skipped=await self.skipped(c, skips, names),
            unanswered=[names[p] for p in waiting], confirmed=[names[p] for p in confirmed],
            zone=zone)
        if (not self.settings.redact_fallback
                and may_read(steward, acl=c.document.acl, tenant_id=c.tenant_id).allowed):
            message = views.question(c, key=key, person=steward, zone=zone,
                                     now=self.clock.now())
        result = await self._deliver(c, steward, key, address, message, now=self.clock.now(),
                                     scope=scope)
        if result.status is Delivered.FAILED:
            # the true reason: NO_DELIVERY_ALIAS where the platform said the steward cannot be
            # reached there (an uninstalled or revoked workspace), else DELIVERY_FAILED
            why = f" ({result.why})" if result.why else ""
            await self._failed(c, job, attempt, result.reason, skips,
                               f"The steward escalation could not be delivered{why}.",
                               steward_id=steward.person_id, scope=scope,
                               facts=EventFacts.of(c, platform=address.platform,
                                                   cause=result.why,
                                                   cause_group=result.cause_group))
            return False
        codes = ", ".join(sorted({s.reason_code.value for s in skips})) or "none"
        await self.trail.event(
            c.id, "escalated", job_id=job.id, person_id=steward.person_id, attempt=attempt,
            channel=address.platform, skips=skips,
            message=f"Redacted escalation sent to the steward; skip reasons: {codes}.",
            scope=scope, facts=EventFacts.of(c))
        return True

    async def notify_quorum(self, c: Clarification, job: LeasedJob, *, asked: list[str],
                            missing: int, skipped: list[Skip],
                            scope: JobScope | None = None) -> None:
        """Too few people can confirm a critical question: the steward hears it in the same
        pass (once per clarification), with whom it was asked and how many are missing."""
        reached = await self.reach(c, scope=scope)
        skips = pairs(c, skipped)
        extra = {"asked": ",".join(asked), "missing": str(missing),
                 "required": str(c.quorum_policy.required_confirmations)}
        if isinstance(reached, Skip):
            await self._unreachable(c, "unreachable-quorum notice", reached, scope=scope)
            return
        key = DeliveryKey(c.id, reached.person.person_id, 0, QUORUM_KIND)
        names = await self.names([*(s.person_id for s in skips), *asked], scope=scope)
        view = views.quorum_unreachable(
            c, key=key, steward=reached.person, asked=[names[p] for p in asked], missing=missing,
            skipped=await self.skipped(c, skips, names),
            zone=await self.zone(c, reached))
        result = await self._deliver(c, reached.person, key, reached.address, view,
                                     now=self.clock.now(), report=False, scope=scope)
        if result.status is Delivered.NEW:
            await self.trail.event(
                c.id, "quorum_unreachable", scope=scope, job_id=job.id,
                person_id=reached.person.person_id,
                attempt=job.turn, channel=reached.address.platform, skips=skips, extra=extra,
                message=f"Too few eligible people for the quorum: {len(asked)} asked, {missing} "
                        f"of {c.quorum_policy.required_confirmations} confirmations still "
                        "missing if all of them confirm; the steward was told.")

    async def notify_high(self, c: Clarification, job: LeasedJob, *, asked: list[str],
                          scope: JobScope | None = None) -> None:
        """High severity: the steward hears that a direct question went out (once, redacted),
        in the next message listing their window's notices (``bot.engine.notices``)."""
        reached = await self.reach(c, scope=scope)
        if isinstance(reached, Skip):
            await self._unreachable(c, "high-severity notice", reached, scope=scope)
            return
        await self.notices.notice_add(
            c.tenant_id, reached.person.person_id,
            NoticeItem(c.id, job.id, job.turn, tuple(asked)), now=self.clock.now(),
            window_seconds=self.settings.severity.steward_notice_window_seconds)

    async def notify_conflict(self, c: Clarification, *, scope: JobScope | None = None
                              ) -> None:
        """Conflicted: the steward gets one conflict notice (no dates, no span text)."""
        reached = await self.reach(c, scope=scope)
        if isinstance(reached, Skip):
            await self._unreachable(c, "conflict notice", reached, scope=scope)
            return
        key = DeliveryKey(c.id, reached.person.person_id, 0, CONFLICT_KIND)
        names = await self.names([r.responder for r in c.responses], scope=scope)
        message = views.conflict(c, steward=reached.person, names=names, key=key,
                                 zone=await self.zone(c, reached))
        result = await self._deliver(c, reached.person, key, reached.address, message,
                                     now=self.clock.now(), report=False, scope=scope)
        if result.status is Delivered.NEW:
            await self.trail.event(
                c.id, "steward_notified", person_id=reached.person.person_id, scope=scope,
                channel=reached.address.platform,
                message="The steward was told that binding-capable answers disagree.")

    async def notify_late_conflict(self, c: Clarification, responder: str) -> None:
        """After binding: the steward hears once per late responder whose answer differs from
        the bound date (no dates, no span text); the bound correction is not touched. Only
        the answer path sends it: no job, no scope."""
        index = responder_index(c, responder)
        if index is None:
            return
        reached = await self.reach(c)
        if isinstance(reached, Skip):
            await self._unreachable(c, "late-conflict notice", reached, scope=None)
            return
        # One notice per responder, not per response: the same person re-tapping, or changing
        # their late answer again, tells the steward nothing new; another person's answer does.
        key = DeliveryKey(c.id, reached.person.person_id, index, LATE_CONFLICT_KIND)
        names = await self.names([responder])
        message = views.late_conflict(c, steward=reached.person, responder=names[responder],
                                      zone=await self.zone(c, reached))
        result = await self._deliver(c, reached.person, key, reached.address, message,
                                     now=self.clock.now(), report=False, scope=None)
        if result.status is Delivered.NEW:
            await self.trail.event(
                c.id, "steward_notified", person_id=reached.person.person_id, attempt=index,
                channel=reached.address.platform, extra={"responder": responder},
                message="The steward was told that an answer after binding differs from the "
                        "bound date; the bound correction is unchanged.")

    async def _deliver(self, c: Clarification, steward: Person, key: DeliveryKey,
                       address: Address, message: Message, *, now: datetime,
                       report: bool = True, scope: JobScope | None) -> Result:
        """Every steward message goes out here; one sent now is ``told`` (which re-shows the
        steward's queue in the background: outside the job, its calls take no scope)."""
        result = await self.deliverer.deliver(key, address, message, now=now, report=report,
                                              scope=scope)
        if result.status is Delivered.NEW and self.told is not None:
            await self.told(c.tenant_id, steward, address)
        return result

    async def names(self, person_ids: list[str], *, scope: JobScope | None = None
                    ) -> dict[str, str]:
        """Display names by id; an id the core does not know stands for itself."""
        found = await display_names(self.core, person_ids, scope=scope)
        return {p: found.get(p, p) for p in person_ids}

    async def _unreachable(self, c: Clarification, what: str, why: Skip, *,
                           scope: JobScope | None) -> None:
        """A steward message that cannot go anywhere is still on record, with its reason."""
        await self.trail.event(
            c.id, "steward_unreachable", person_id=c.workspace.steward_id, reason=why.reason,
            scope=scope, occurrence=what,  # each notice that could not go is its own event
            facts=EventFacts.of(c, cause=why.why, platform=why.platform),
            message=f"The workspace steward cannot be reached ({why.why}); the {what} was not "
                    "sent.")

    async def _failed(self, c: Clarification, job: LeasedJob, attempt: int,
                      reason: ReasonCode, skips: list[SkipPair], message: str, *,
                      steward_id: str | None = None, scope: JobScope | None,
                      facts: EventFacts | None = None) -> None:
        await self.trail.event(c.id, "escalation_failed", job_id=job.id,
                               person_id=steward_id or c.workspace.steward_id, attempt=attempt,
                               reason=reason, skips=skips, message=message, scope=scope,
                               facts=facts or EventFacts.of(c))


def responder_index(c: Clarification, responder: str) -> int | None:
    """Where the responder's first response sits in the append-only record: a number that
    stays the same for that person and differs between people."""
    for index, record in enumerate(c.responses):
        if record.responder == responder:
            return index
    return None

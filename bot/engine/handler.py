"""The job handler: one leased ``clarify:`` job → the right people asked, or the steward told.

Attempt N asks ranking[N]; the last attempt is the redacted steward escalation. A candidate who
cannot be asked (no alias, not in scope, no read permission, capped, delivery failed) is skipped
inside the lease with a reason code, so a skip never burns an escalation window. When nobody
eligible remains, the steward is escalated to at once with every skip reason. After delivery the
handler returns without completing: the lease runs out, and the core's backoff (the escalation
window) brings the job back at the next attempt if nobody has answered.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import structlog

from bot.audit import REASON_TEXT, Audit, AuditEvent
from bot.channel import Address, Message
from bot.clock import Clock
from bot.core import errors as e
from bot.core import models as m
from bot.core.client import CoreClient
from bot.engine import views
from bot.engine.delivery import Deliverer, Sent
from bot.engine.people import display_names
from bot.engine.rbac import may_read
from bot.engine.routing import Routing, Unroutable
from bot.metrics import REGISTRY
from bot.settings import ClarifySettings
from bot.store.base import Decision, DeliveryKey, DigestItem, SlotState, Store

log = structlog.get_logger("clarify.handler")

SETTLED = (m.ClarificationState.ANSWERED, m.ClarificationState.CONFLICTED)
# Delivery kind of the steward's notice about an answer that differs from a bound date.
LATE_CONFLICT_KIND = "steward_conflict_late"


class Outcome(StrEnum):
    COMPLETED = "completed"  # nothing more to do: the job was completed
    ASKED = "asked"  # cards (or digest entries) went out; the lease is left to run out
    ESCALATED = "escalated"  # the redacted steward escalation went out (last attempt)
    FAILED = "failed"  # nothing could be sent, not even to the steward


@dataclass(frozen=True, slots=True)
class Skip:
    person_id: str
    reason: m.ReasonCode
    why: str


@dataclass
class Walk:
    """What one pass over the ranking did."""

    asked: list[str] = field(default_factory=list)
    skipped: list[Skip] = field(default_factory=list)
    last_index: int = -1


@dataclass
class JobHandler:
    core: CoreClient
    store: Store
    deliverer: Deliverer
    routing: Routing
    audit: Audit
    clock: Clock
    settings: ClarifySettings
    # shows every delivered card of a settled clarification its final state; set where the
    # answer service exists (a state can change without the bot: the core's CLI, an API key)
    on_settled: Callable[[str], Awaitable[object]] | None = None

    async def handle(self, job: m.LeasedJob) -> Outcome:
        c = await self.core.get_clarification(clarification_id=job.payload.clarification_id)
        structlog.contextvars.bind_contextvars(
            clarification_id=c.id, job_id=job.id, attempt=job.attempts
        )
        if c.state is m.ClarificationState.CONFLICTED:
            await self.notify_conflict(c)
        if c.state in SETTLED or c.severity is m.Severity.LOW:
            await self.core.complete_job(job_id=job.id, lease_token=job.lease_token)
            if c.state in SETTLED and self.on_settled is not None:
                await self.on_settled(c.id)
            return Outcome.COMPLETED
        ranking = job.payload.ranking
        await self.reconcile_earlier(c, job)
        if job.attempts >= len(ranking):
            return await self.escalate(c, job, skipped=[])
        walk = await self.walk(c, job)
        if walk.asked:
            if walk.last_index > job.attempts:
                await self._advance(job, walk.last_index, None)
            if c.severity is m.Severity.HIGH and self.settings.severity.high_notifies_steward:
                await self.notify_high(c, job, asked=walk.asked)
            return Outcome.ASKED
        await self._advance(job, len(ranking), walk.skipped[-1].reason if walk.skipped else None)
        return await self.escalate(c, job, skipped=walk.skipped)

    async def reconcile_earlier(self, c: m.Clarification, job: m.LeasedJob) -> None:
        """Cards of earlier attempts whose worker died between sending and recording: find
        them on the platform and record them, so they can be updated and the core knows."""
        ranking = job.payload.ranking
        for index in range(min(job.attempts, len(ranking))):
            key = DeliveryKey(c.id, ranking[index], index, m.DeliveryKind.QUESTION.value)
            slot = await self.store.slot(key)
            if slot is None or slot.state is not SlotState.RESERVED:
                continue
            try:
                person = await self.core.get_person(person_id=ranking[index],
                                                    tenant_id=c.tenant_id)
            except e.PersonNotFound:
                continue
            address = self.routing.address(person, tenant_id=c.tenant_id)
            if isinstance(address, Address):
                await self.deliverer.reconcile(key, address)

    # ---------------------------------------------------------------- the ranking walk

    def wanted(self, c: m.Clarification) -> int:
        """How many people to ask at once: a critical question asks as many as quorum needs."""
        if c.severity is m.Severity.CRITICAL:
            return max(c.quorum.remaining, 1)
        return 1

    async def walk(self, c: m.Clarification, job: m.LeasedJob) -> Walk:
        walk = Walk()
        wanted = self.wanted(c)
        ranking = job.payload.ranking
        for index in range(job.attempts, len(ranking)):
            person_id = ranking[index]
            skip = await self.ask(c, job, person_id=person_id, index=index)
            if skip is None:
                walk.asked.append(person_id)
                walk.last_index = index
                if len(walk.asked) >= wanted:
                    break
                continue
            walk.skipped.append(skip)
            await self._skipped(c, job, skip, index)
            if not walk.asked:
                # skip forward inside the lease so a crash here does not burn a window
                await self._advance(job, index + 1, skip.reason)
        return walk

    async def ask(
        self, c: m.Clarification, job: m.LeasedJob, *, person_id: str, index: int
    ) -> Skip | None:
        """Ask one candidate, or say why not."""
        try:
            person = await self.core.get_person(person_id=person_id, tenant_id=c.tenant_id)
        except e.PersonNotFound:
            return Skip(
                person_id,
                m.ReasonCode.TENANT_SCOPE_MISMATCH,
                "the candidate is not a person of this tenant",
            )
        address = self.routing.address(person, tenant_id=c.tenant_id)
        if isinstance(address, Unroutable):
            return Skip(person_id, address.reason, address.why)
        verdict = may_read(person, acl=c.document.acl, tenant_id=c.tenant_id)
        if not verdict.allowed:
            return Skip(person_id, m.ReasonCode.NO_READ_PERMISSION, verdict.why)
        now = self.clock.now()
        key = DeliveryKey(c.id, person_id, index, m.DeliveryKind.QUESTION.value)
        admission = await self.store.admit(
            key,
            item=DigestItem(c.id, person_id, index, job.id),
            day=local_day(person, now),
            now=now,
            cap=self.settings.per_person_daily_cap,
            threshold=self.settings.digest_threshold,
            window_seconds=int(self.settings.digest_window.total_seconds()),
            batched=c.severity is m.Severity.NORMAL,
        )
        if admission.decision is Decision.CAPPED:
            return Skip(
                person_id, m.ReasonCode.DAILY_CAP_EXCEEDED, "the person's daily cap is reached"
            )
        if admission.decision is Decision.DIGESTED:
            assert admission.batch_id is not None
            await self.store.mark_digested(
                key, batch_id=admission.batch_id, worker_id=self.deliverer.worker_id, now=now
            )
            await self._event(
                c,
                job,
                "digested",
                person_id=person_id,
                attempt=index,
                reason=m.ReasonCode.DIGESTED,
                message="Queued for the person's digest at the window's end.",
            )
            return None
        view = views.question(c, key=key, person=person, now=now)
        result = await self.deliverer.deliver(key, address, view, now=now)
        if result.status is Sent.FAILED:
            return Skip(person_id, m.ReasonCode.DELIVERY_FAILED, "retries exhausted")
        await self._delivered(c, job, address, index, result.status)
        return None

    # ---------------------------------------------------------------- steward paths

    async def escalate(
        self, c: m.Clarification, job: m.LeasedJob, *, skipped: list[Skip]
    ) -> Outcome:
        """The last attempt: the redacted question goes to the workspace steward."""
        steward, address = await self._steward(c)
        attempt = len(job.payload.ranking)
        reasons = await self._skip_reasons(c, skipped)
        if steward is None or address is None:
            await self._event(
                c,
                job,
                "escalation_failed",
                person_id=c.workspace.steward_id,
                attempt=attempt,
                reason=m.ReasonCode.NO_DELIVERY_ALIAS,
                message="The workspace steward cannot be reached on any channel.",
            )
            return Outcome.FAILED
        key = DeliveryKey(c.id, steward.person_id, attempt, m.DeliveryKind.STEWARD_ESCALATION.value)
        waiting = await self._names(views.unanswered(c))
        message: Message = views.escalation(c, key=key, steward=steward, skipped=reasons,
                                            unanswered=list(waiting.values()))
        if (
            not self.settings.redact_fallback
            and may_read(steward, acl=c.document.acl, tenant_id=c.tenant_id).allowed
        ):
            message = views.question(c, key=key, person=steward, now=self.clock.now())
        result = await self.deliverer.deliver(key, address, message, now=self.clock.now())
        if result.status is Sent.FAILED:
            await self._event(
                c,
                job,
                "escalation_failed",
                person_id=steward.person_id,
                attempt=attempt,
                reason=m.ReasonCode.DELIVERY_FAILED,
                message="The steward escalation could not be delivered.",
            )
            return Outcome.FAILED
        codes = ", ".join(sorted({code.value for _, code in reasons})) or "none"
        await self._event(
            c,
            job,
            "escalated",
            person_id=steward.person_id,
            attempt=attempt,
            message=f"Redacted escalation sent to the steward; skip reasons: {codes}.",
        )
        return Outcome.ESCALATED

    async def notify_high(self, c: m.Clarification, job: m.LeasedJob, *, asked: list[str]
                          ) -> None:
        """High severity: the steward hears that a direct question went out (once, redacted)."""
        steward, address = await self._steward(c)
        if steward is None or address is None:
            await self._steward_unreachable(c, "high-severity notice")
            return
        key = DeliveryKey(c.id, steward.person_id, 0, m.DeliveryKind.STEWARD_NOTICE.value)
        names = await self._names(asked)
        message = views.notice(c, key=key, steward=steward,
                               asked=[names.get(p, p) for p in asked])
        result = await self.deliverer.deliver(key, address, message, now=self.clock.now())
        if result.status is Sent.NEW:
            await self._event(
                c, job, "steward_notified", person_id=steward.person_id, attempt=job.attempts,
                message="The steward was told a high-severity question was sent.")

    async def notify_conflict(self, c: m.Clarification) -> None:
        """Conflicted: the steward gets one conflict notice (no dates, no span text)."""
        steward, address = await self._steward(c)
        if steward is None or address is None:
            await self._steward_unreachable(c, "conflict notice")
            return
        key = DeliveryKey(c.id, steward.person_id, 0, "steward_conflict")
        names = await self._names([r.responder for r in c.responses])
        message = views.conflict(c, steward=steward, names=names)
        result = await self.deliverer.deliver(key, address, message, now=self.clock.now(),
                                              report=False)
        if result.status is Sent.NEW:
            await self.audit.emit(AuditEvent(
                type="steward_notified", at=self.clock.now(), clarification_id=c.id,
                person_id=steward.person_id, channel=address.platform,
                message="The steward was told that binding-capable answers disagree."))

    async def notify_late_conflict(self, c: m.Clarification, responder: str) -> None:
        """After binding: the steward hears once per late responder whose answer differs from
        the bound date (no dates, no span text); the bound correction is not touched."""
        index = responder_index(c, responder)
        steward, address = await self._steward(c)
        if index is None:
            return
        if steward is None or address is None:
            await self._steward_unreachable(c, "late-conflict notice")
            return
        # One notice per responder, not per response: the same person re-tapping, or changing
        # their late answer again, tells the steward nothing new; another person's answer does.
        key = DeliveryKey(c.id, steward.person_id, index, LATE_CONFLICT_KIND)
        names = await self._names([responder])
        message = views.late_conflict(c, steward=steward,
                                      responder=names.get(responder, responder))
        result = await self.deliverer.deliver(key, address, message, now=self.clock.now(),
                                              report=False)
        if result.status is Sent.NEW:
            await self.audit.emit(AuditEvent(
                type="steward_notified", at=self.clock.now(), clarification_id=c.id,
                person_id=steward.person_id, attempt=index, channel=address.platform,
                extra={"responder": responder},
                message="The steward was told that an answer after binding differs from the "
                        "bound date; the bound correction is unchanged."))

    async def _steward_unreachable(self, c: m.Clarification, what: str) -> None:
        """A steward message that cannot go anywhere is still on record, with its reason."""
        await self.audit.emit(AuditEvent(
            type="steward_unreachable", at=self.clock.now(), clarification_id=c.id,
            person_id=c.workspace.steward_id, reason_code=m.ReasonCode.NO_DELIVERY_ALIAS,
            message=f"The workspace steward cannot be reached on any channel; the {what} "
                    "was not sent.",
        ))

    async def _steward(self, c: m.Clarification) -> tuple[m.Person | None, Address | None]:
        if c.workspace.steward_id is None:
            return None, None
        try:
            steward = await self.core.get_person(
                person_id=c.workspace.steward_id, tenant_id=c.tenant_id
            )
        except e.PersonNotFound:
            return None, None
        address = self.routing.address(steward, tenant_id=c.tenant_id)
        return steward, address if isinstance(address, Address) else None

    async def _skip_reasons(
        self, c: m.Clarification, now_skipped: list[Skip]
    ) -> list[tuple[str, m.ReasonCode]]:
        """Every candidate's skip reason: earlier passes (the core's trail) and this one."""
        pairs: dict[tuple[str, m.ReasonCode], None] = {}
        for ev in c.events:
            if ev.type == "skipped" and ev.person_id and ev.reason_code:
                pairs[(ev.person_id, ev.reason_code)] = None
        for skip in now_skipped:
            pairs[(skip.person_id, skip.reason)] = None
        names = await self._names([p for p, _ in pairs])
        return [(names.get(p, p), code) for p, code in pairs]

    async def _names(self, person_ids: list[str]) -> dict[str, str]:
        return await display_names(self.core, person_ids)

    # ---------------------------------------------------------------- bookkeeping

    async def _advance(self, job: m.LeasedJob, attempt: int, reason: m.ReasonCode | None) -> None:
        await self.core.advance_job(
            job_id=job.id,
            lease_token=job.lease_token,
            attempt=min(attempt, job.max_attempts - 1),
            reason_code=reason,
        )

    async def _skipped(self, c: m.Clarification, job: m.LeasedJob, skip: Skip, index: int) -> None:
        REGISTRY.inc("clarify_skips_total", reason=skip.reason.value)
        await self._event(
            c,
            job,
            "skipped",
            person_id=skip.person_id,
            attempt=index,
            reason=skip.reason,
            message=f"Candidate {REASON_TEXT[skip.reason]} ({skip.why}).",
        )

    async def _delivered(
        self, c: m.Clarification, job: m.LeasedJob, address: Address, index: int, status: Sent
    ) -> None:
        what = "sent" if status is Sent.NEW else "already sent; not sent again"
        await self._event(
            c,
            job,
            "delivery",
            person_id=address.person_id,
            attempt=index,
            channel=address.platform,
            to_core=False,
            message=f"Question card {what} on {address.platform}.",
        )

    async def _event(
        self,
        c: m.Clarification,
        job: m.LeasedJob,
        type_: str,
        *,
        message: str,
        person_id: str | None = None,
        attempt: int | None = None,
        reason: m.ReasonCode | None = None,
        channel: str | None = None,
        to_core: bool = True,
    ) -> None:
        await self.audit.emit(
            AuditEvent(
                type=type_,
                at=self.clock.now(),
                clarification_id=c.id,
                message=message,
                person_id=person_id,
                attempt=attempt,
                reason_code=reason,
                job_id=job.id,
                channel=channel,
            ),
            to_core=to_core,
        )


def responder_index(c: m.Clarification, responder: str) -> int | None:
    """Where the responder's first response sits in the append-only record: a number that
    stays the same for that person and differs between people."""
    for index, record in enumerate(c.responses):
        if record.responder == responder:
            return index
    return None


def local_day(person: m.Person, now: datetime) -> str:
    """The person's calendar day: the daily cap resets at their midnight."""
    try:
        zone = ZoneInfo(person.time_zone)
    except (ZoneInfoNotFoundError, ValueError):
        zone = ZoneInfo("UTC")
    return now.astimezone(zone).date().isoformat()

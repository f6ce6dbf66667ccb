"""The engine's trail: each skip, delivery and steward message as one audit event.

Every event goes to the audit sink and (unless the core already has it as a delivery) to the
core's event trail, with its reason codes as fields, never only as words in the message.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from bot.audit import REASON_TEXT, Audit, AuditEvent, EventFacts, SkipPair
from bot.clock import Clock
from bot.core.batching import JobScope
from bot.core.models import Clarification, ReasonCode
from bot.metrics import REGISTRY


@dataclass(frozen=True, slots=True)
class Skip:
    """A ranked candidate who was not asked: the reason code, and why in value-free words."""

    person_id: str
    reason: ReasonCode
    why: str
    # what happened, in place of the reason code's own words (``REASON_TEXT``) where those
    # would not be true (a store that lost its data refused no message)
    said: str | None = None
    platform: str | None = None  # the platform that refused, where one was tried
    # the refusal's cause group where the platform's adapter classified it (a code of
    # ``bot.reach.causes.FIXES``: ``bot.channel.ChannelError.cause``), for the reach record
    cause_group: str | None = None


def pairs(c: Clarification, now_skipped: Iterable[Skip] = ()) -> list[SkipPair]:
    """Every candidate's skip reason on record: earlier passes (the core's trail), then this
    pass's, each (person, code) once, in order."""
    found: dict[SkipPair, None] = {}
    for ev in c.events:
        if ev.type == "skipped" and ev.person_id and ev.reason_code:
            found[SkipPair(ev.person_id, ev.reason_code)] = None
    for skip in now_skipped:
        found[SkipPair(skip.person_id, skip.reason)] = None
    return list(found)


@dataclass
class Trail:
    audit: Audit
    clock: Clock

    async def event(
        self,
        clarification_id: str,
        type_: str,
        *,
        message: str,
        job_id: str | None = None,
        person_id: str | None = None,
        attempt: int | None = None,
        reason: ReasonCode | None = None,
        channel: str | None = None,
        skips: Iterable[SkipPair] = (),
        extra: dict[str, str] | None = None,
        to_core: bool = True,
        scope: JobScope | None = None,
        occurrence: str | None = None,
        facts: EventFacts | None = None,
    ) -> None:
        """``occurrence``: what tells this event from another of the same type, question,
        person, attempt and reason (``bot.audit.AuditEvent``); None when there is none."""
        await self.audit.emit(
            AuditEvent(
                type=type_,
                at=self.clock.now(),
                clarification_id=clarification_id,
                message=message,
                person_id=person_id,
                attempt=attempt,
                reason_code=reason,
                job_id=job_id,
                channel=channel,
                extra=extra or {},
                skips=tuple(skips),
                occurrence=occurrence,
                facts=facts,
            ),
            to_core=to_core,
            scope=scope,
        )

    async def skipped(self, c: Clarification, skip: Skip, *, attempt: int,
                      job_id: str | None, scope: JobScope | None = None) -> None:
        """A skip, with its cause for the reach record (``bot.reach``)."""
        REGISTRY.inc("clarify_skips_total", reason=skip.reason.value)
        await self.event(c.id, "skipped", job_id=job_id, person_id=skip.person_id,
                         attempt=attempt, reason=skip.reason,
                         message=f"Candidate {skip.said or REASON_TEXT[skip.reason]} ({skip.why}).",
                         scope=scope,
                         facts=EventFacts.of(c, platform=skip.platform, cause=skip.why,
                                             cause_group=skip.cause_group))

"""The worker's part after the store lost its data (``bot.process.storewatch``): holds it
remembers given back, reminders made again where the core's record allows, and held leases that
nobody can carry on any more found and counted lost (docs/reliability.md, "A store that lost its
data"). Nothing here logs a value: ids, counts and kinds only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import structlog

from bot.audit import Audit, AuditEvent, occurrence_of
from bot.clock import Clock
from bot.core import errors as e
from bot.core.client import CoreClient
from bot.core.extensions import Extension
from bot.core.models import DeliveryKind, JobState, JobView
from bot.engine import attempts, evidence, views
from bot.engine.holds import HOLD_LEASE_SECONDS, LOST_TURN, LOST_TURN_TTL_SECONDS, Hold
from bot.engine.reminders import Reminder, Reminders
from bot.engine.reminders import moves_on as window_end
from bot.metrics import REGISTRY
from bot.store.base import CardRecord, DeliveryKey

log = structlog.get_logger("clarify.storewatch")
# the core's list of leased jobs is walked at most this far
LEASED_PAGES = 20
LEASED_PAGE = 100


@dataclass
class HoldRecovery:
    """The worker's part after a loss: holds given back, leases it can no longer carry found."""

    store: Any  # bot.store.base.Store with Generations
    core: CoreClient
    audit: Audit
    clock: Clock
    lease_seconds: int = 60
    reminders: Reminders | None = None  # made again where the evidence allows
    # job id -> (the job as the core listed it, the monotonic time it may be declared lost)
    suspects: dict[str, tuple[JobView, float]] = field(default_factory=dict)

    async def give_back(self, generation: str = "") -> int:
        """Hold again every hold this process remembers that the store no longer has (after
        the loss that began ``generation``: each loss's giving back is its own audit event)."""
        now = self.clock.now()
        given = 0
        for job_id, text in self.store.holds_remembered().items():
            if await self.store.hold_text(job_id) is not None:
                continue  # another process gave it back already
            hold = _hold(text)
            if hold is None or not await self._still_held(job_id, hold, now):
                self.store.holds_forget(job_id)  # released by another replica, or settled
                continue
            await self.store.hold_put(job_id, text, at=now)
            given += 1
            REGISTRY.inc("clarify_holds_recovered_total")
            job = hold.job
            log.warning("storewatch.hold_recovered", job_id=job_id)
            if job is not None:
                person = _person_at(job.payload.ranking, job.attempts)
                await self.audit.emit(AuditEvent(
                    type="hold_recovered", at=now,
                    clarification_id=job.payload.clarification_id, job_id=job_id,
                    person_id=person, attempt=job.attempts,
                    occurrence=occurrence_of(job_id, generation),
                    message="The bot's store lost its data while this question was held for "
                            "the person's working hours; the worker that held it gave the "
                            "hold back: the card goes out at the person's hour, once."),
                    to_core=False)
        return given

    async def _still_held(self, job_id: str, hold: Hold, now: datetime) -> bool:
        """The core still has the job leased at the hold's turn (where the core lets the bot
        read its jobs: without the jobs-read extension every remembered hold is given back,
        and one whose lease has gone is dropped by the next pass, as any lost lease is). A
        hold this process remembers may have been released by another replica since."""
        if not self.core.offers(Extension.JOBS_READ):
            return True
        try:
            view = await self.core.get_job(job_id=job_id)
        except e.JobNotFound:
            return False
        if view.state is not JobState.LEASED:
            return False
        if view.lease_expires_at is not None and view.lease_expires_at <= now:
            return False
        turn = hold.job.attempts if hold.job is not None else None
        return turn is None or view.attempts is None or view.attempts == turn

    async def reminders_back(self, generation: str = "") -> int:
        """Reminders the evidence allows again: for each job the core has waiting out a turn's
        window (state ``available``, its next turn later), the question card the core has on
        record for the turn before, unanswered and not declined, whose reminder was not due yet
        (so it certainly was not sent): the card's record kept again and its reminder indexed at
        its point of the window (the pass moves it to the person's working hour). A reminder
        that may have gone out already is not made again: at most one reminder a card."""
        if self.reminders is None or not self.core.offers(Extension.JOBS_READ):
            return 0
        percent = self.reminders.settings.reminder_at_percent
        if percent <= 0:
            return 0
        now = self.clock.now()
        made = 0
        cursor: str | None = None
        for _ in range(LEASED_PAGES):
            page = await self.core.list_jobs(state=JobState.AVAILABLE, kind="clarify:",
                                             cursor=cursor, limit=LEASED_PAGE)
            for job in page.items:
                made += await self._reminder_back(job, now, percent, generation)
            cursor = page.next_cursor
            if not cursor:
                break
        if made:
            log.warning("storewatch.reminders_recovered", reminders=made)
        return made

    async def _reminder_back(self, job: JobView, now: datetime, percent: int,
                             generation: str) -> int:
        assert self.reminders is not None
        payload, moves_on = job.payload, job.visible_at
        if payload is None or moves_on is None or moves_on <= now or not job.attempts:
            return 0
        turn = job.attempts - 1
        if turn >= len(payload.ranking):
            return 0
        person_id = payload.ranking[turn]
        c = await self.core.get_clarification(clarification_id=payload.clarification_id)
        if evidence.closed(c) or any(r.responder == person_id for r in c.responses) \
                or views.declined(c, person_id):
            return 0
        record = next((d for d in c.deliveries if d.person_id == person_id and d.attempt == turn
                       and d.kind is DeliveryKind.QUESTION), None)
        platform = self.reminders.deliverer.words.platform(record.channel) if record else None
        if record is None or record.delivered_at is None or not record.message_ref \
                or platform is None:
            return 0
        # when the card said it moves on: the bot's window from the lease the card went out on
        # (``reminders.moves_on``), not later than the core brings the next turn
        moves_on = min(moves_on, window_end(
            record.delivered_at, record.delivered_at + timedelta(seconds=self.lease_seconds),
            self.reminders.settings.escalation_window))
        point = record.delivered_at + (moves_on - record.delivered_at) * (percent / 100)
        if point <= now:
            return 0  # it may have gone out before the loss
        to_steward = attempts.last_turn(payload.ranking, turn)
        key = DeliveryKey(c.id, person_id, turn, DeliveryKind.QUESTION.value)
        if not any(card.delivery == key for card in await self.store.cards(c.id)):
            await self.store.add_card(CardRecord(
                delivery=key, platform=platform, message_ref=record.message_ref,
                moves_on_at=moves_on, moves_on_to_steward=to_steward))
        reminder = Reminder(c.id, turn, moves_on, to_steward)
        await self.store.reminder_add(reminder.member, due=point)
        REGISTRY.inc("clarify_reminders_recovered_total")
        await self.audit.emit(AuditEvent(
            type="reminder_recovered", at=now, clarification_id=c.id, person_id=person_id,
            attempt=turn, job_id=job.id, occurrence=occurrence_of(job.id, generation),
            message="The bot's store lost its data before this card's reminder was due; the "
                    "reminder was made again from the core's record of the card."),
            to_core=False)
        return 1

    async def find_leases(self, *, settle_after: float) -> int:
        """The ``clarify:`` jobs the core says the bot holds on a held lease that this process
        does not remember: suspects, declared lost at ``settle_after`` (monotonic) unless
        another process has given their hold back by then."""
        if not self.core.offers(Extension.JOBS_READ):
            return 0  # the core does not list its jobs: nothing to look for
        now = self.clock.now()
        remembered = self.store.holds_remembered()
        cursor: str | None = None
        for _ in range(LEASED_PAGES):
            page = await self.core.list_jobs(state=JobState.LEASED, kind="clarify:",
                                             cursor=cursor, limit=LEASED_PAGE)
            for job in page.items:
                if job.id in remembered or not _held_lease(job, now, self.lease_seconds):
                    continue
                self.suspects.setdefault(job.id, (job, settle_after))
            cursor = page.next_cursor
            if not cursor:
                break
        return len(self.suspects)

    async def settle(self, *, mono: float) -> int:
        """Suspects whose time has come: held again by another process, or lost."""
        lost = 0
        for job_id, (job, after) in list(self.suspects.items()):
            if mono < after:
                continue
            del self.suspects[job_id]
            if await self.store.hold_text(job_id) is not None:
                continue
            lost += 1
            await self._lost(job)
        return lost

    async def _lost(self, job: JobView) -> None:
        REGISTRY.inc("clarify_holds_lost_total")
        log.error("storewatch.hold_lost", job_id=job.id, reason="store_data_lost",
                  hint="the held lease's token was in the lost store: the person's turn passes "
                       "when the lease runs out")
        payload = job.payload
        if payload is None:
            return
        attempt = job.attempts
        person = _person_at(payload.ranking, attempt)
        if attempt is not None:
            await self.store.kv_put(LOST_TURN, f"{payload.clarification_id}|{attempt}", "1",
                                    ttl_seconds=LOST_TURN_TTL_SECONDS)
        await self.audit.emit(AuditEvent(
            type="hold_lost", at=self.clock.now(), clarification_id=payload.clarification_id,
            job_id=job.id, person_id=person, attempt=attempt, occurrence=occurrence_of(job.id),
            message="The bot's store (Redis) lost its data while this question was held for "
                    "the person's working hours; the held lease cannot be carried on, so the "
                    "person's turn passes when it runs out."))


def _hold(text: str) -> Hold | None:
    try:
        return Hold.loads(text)
    except (ValueError, KeyError, TypeError):
        return None


def _person_at(ranking: list[str], attempt: int | None) -> str | None:
    if attempt is None or not 0 <= attempt < len(ranking):
        return None
    return ranking[attempt]


def _held_lease(job: JobView, now: datetime, lease_seconds: int) -> bool:
    """A lease as long as a held one's (``HOLD_LEASE_SECONDS``), not a running job's (which
    heartbeats ``lease_seconds`` at a time)."""
    ends = job.lease_expires_at
    if ends is None:
        return False
    shortest = min(timedelta(seconds=HOLD_LEASE_SECONDS) / 6,
                   timedelta(seconds=max(5 * lease_seconds, 1)))
    return ends - now > shortest

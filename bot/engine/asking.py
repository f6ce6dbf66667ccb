"""Asking the ranking's candidates: one pass over the turns a job's attempt opens.

For each candidate, ``bot/engine/routing.py`` finds the address, ``bot/engine/rbac.py`` gates
reading, a person their platform shows as away is passed over or held until they are back
(``bot/engine/away.py``), the person's zone decides whether they are within their working
hours (``OutOfHours`` otherwise: the handler holds the job), the store admits the question
(daily cap, digest batching: ``bot/engine/digests.py`` sends those at the window's end), and
the deliverer sends the card (the person's next platform when one refuses and nothing went out:
``bot.engine.lasting``). A candidate who cannot be asked is a ``Skip`` with a reason code; a
skip passes the turn on at once (``advance``), so a skip never burns an escalation window.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import NamedTuple, Protocol
from zoneinfo import ZoneInfo

import structlog

from bot.audit import EventFacts
from bot.channel import Address
from bot.chat import for_recipient
from bot.clock import Clock
from bot.core import batching
from bot.core.client import CoreClient
from bot.core.models import Clarification, DeliveryKind, LeasedJob, Person, ReasonCode, Severity
from bot.engine import attempts, away, evidence, reminders, views
from bot.engine.away import AwayCheck, Verdict
from bot.engine.delivery import Delivered, Deliverer, Result
from bot.engine.lasting import LastingRefusals
from bot.engine.rbac import may_confirm, may_read
from bot.engine.reminders import Reminders
from bot.engine.routing import Routing, Unroutable
from bot.engine.trail import Skip, Trail
from bot.engine.zones import PersonZone, Zones
from bot.errors import BotError
from bot.metrics import REGISTRY
from bot.settings import ClarifySettings
from bot.store.admissions import Admissions
from bot.store.base import Admission, CardRecord, Decision, DeliveryKey, DigestItem, KeyValues
from bot.store.ledger import DeliveryLedger
from cards.views import QuestionView

# the handler's log lines: asking is a step of handling a job
log = structlog.get_logger("clarify.handler")


class OutOfHours(BotError):
    """The next candidate is outside their working hours until ``until`` (UTC): control flow
    inside the handler (the job is held, not failed); it never leaves ``JobHandler.handle``."""

    def __init__(self, until: datetime) -> None:
        super().__init__("outside working hours")
        self.until = until


@dataclass
class Walk:
    """What one pass over the ranking did."""

    asked: list[str] = field(default_factory=list)
    skipped: list[Skip] = field(default_factory=list)
    last_asked: int | None = None  # the ranking's index of the last person asked
    exhausted: bool = False  # the pass reached the end of the ranking
    can_confirm: set[str] = field(default_factory=set)  # asked people whose answer can count


class AskingStore(Admissions, DeliveryLedger, KeyValues, Protocol):
    """What asking uses of the store: the admission, the delivery slots and the cards sent,
    and the record of a person passed over for being away."""


@dataclass
class Asking:
    """The handler's step that asks: ``walk`` a pass of turns, ``ask`` one candidate."""

    core: CoreClient
    store: AskingStore
    deliverer: Deliverer
    routing: Routing
    clock: Clock
    settings: ClarifySettings
    trail: Trail
    zones: Zones  # the people's zones and working hours: the engine's one
    refusals: LastingRefusals  # remembered lasting refusals: those platforms are tried last
    # each question card's one reminder, indexed when the card goes out (None: no reminders)
    reminders: Reminders | None = None
    # whether a person is away, and what follows (None: never asked, ``[clarify.away]`` off)
    away: AwayCheck | None = None

    async def walk(self, c: Clarification, job: LeasedJob, turns: range,
                   scope: batching.JobScope) -> Walk:
        """Ask the candidates of ``turns`` in order until enough are asked."""
        walk = Walk()
        wanted = attempts.wanted(evidence.remaining(c))
        confirmers_only = evidence.counts_confirmers(c)
        ranking = job.payload.ranking
        answered = evidence.responded(c)
        for index in turns:
            person_id = ranking[index]
            if self._passed_on(ranking, index, answered=answered):
                # not a turn of its own: nobody is asked, no reason code is reported, and the
                # turn passes on at once (as a skip does) until someone of the pass is asked
                forward = attempts.after_skip(index, asked_any=bool(walk.asked))
                if forward is not None:
                    await advance(self.core, job, forward, None, scope)
                continue
            asked = await self.ask(c, job, person_id=person_id, index=index, scope=scope)
            if not isinstance(asked, Skip):
                walk.asked.append(person_id)
                walk.last_asked = index
                if may_confirm(asked, c):
                    walk.can_confirm.add(person_id)
                if attempts.enough(confirmers_only=confirmers_only, asked=len(walk.asked),
                                   can_confirm=len(walk.can_confirm), wanted=wanted):
                    break
                continue
            walk.skipped.append(asked)
            await self.trail.skipped(c, asked, attempt=index, job_id=job.id, scope=scope)
            forward = attempts.after_skip(index, asked_any=bool(walk.asked))
            if forward is not None:
                await advance(self.core, job, forward, asked.reason, scope)
        else:
            walk.exhausted = True
        return walk

    @staticmethod
    def _passed_on(ranking: list[str], index: int, *, answered: set[str]) -> bool:
        """``ranking[index]`` is no turn of its own (docs/delivery.md, "A person named twice"):
        the ranking named the person before (their first entry was their turn, and their card,
        if any, is still live), or they have a response on record (an answer is evidence, never
        asked for twice). Logged by position only, never by whom; a repeated entry is counted
        as tolerated in the core's ranking."""
        first = attempts.first_turn(ranking, index)
        if first is not None:
            REGISTRY.inc("clarify_core_tolerated_total", kind="repeated_entry",
                         model="Ranking")
            log.info("routing.repeated_candidate", turn=index, first_turn=first)
            return True
        if ranking[index] in answered:
            log.info("routing.answered_candidate", turn=index)
            return True
        return False

    async def ask(
        self, c: Clarification, job: LeasedJob, *, person_id: str, index: int,
        scope: batching.JobScope,
    ) -> Person | Skip:
        """Ask one candidate (a card, or a place in their digest), or say why not."""
        found = await self.askable(c, person_id, scope)
        if isinstance(found, Skip):
            return found
        person, address = found
        key = DeliveryKey(c.id, person_id, index, DeliveryKind.QUESTION.value)
        # one zone for the hold, the daily cap's day, the card's times and its reminder
        zone = await self.zones.zone(c.tenant_id, person, address)
        if self.away is not None and not _sent_before(c, person_id, index):
            passed = await self._away(c, job, key, address, zone)
            if passed is not None:
                return passed
        if c.severity is not Severity.CRITICAL:  # critical: at once
            until = self.zones.held(c.tenant_id, zone, self.clock.now())
            if until is not None:
                raise OutOfHours(until)
        if _sent_before(c, person_id, index) and await self.store.slot(key) is None:
            # the core has this card on record and the store does not: the store lost its
            # data (bot.process.storewatch); the person was asked, never a second card
            await self._on_record(c, job, key)
            return person
        held = await self._admit(c, job, key, person, zone.zone, scope)
        if not isinstance(held, Admission):
            return held if isinstance(held, Skip) else person
        now = self.clock.now()
        moves_on_at = reminders.moves_on(now, job.lease_expires_at,
                                         self.settings.escalation_window)
        to_steward = attempts.last_turn(job.payload.ranking, index)
        view = replace(views.question(c, key=key, person=person, zone=zone.zone, now=now),
                       moves_on_at=moves_on_at, moves_on_to_steward=to_steward)
        reserved = (held.reserved, held.created) if held.reserved is not None else None
        if self.reminders is not None:
            # indexed before the send, so a worker killed after it leaves the reminder due (a
            # card that never went out is found to have none: `no_card`)
            await self.reminders.schedule(c, key, zone.zone, sent_at=now,
                                          moves_on_at=moves_on_at, to_steward=to_steward)
        address = await self._unblocked_first(c, person, address, scope)
        result = await self.deliverer.deliver(key, address, _tagged(view, address), now=now,
                                              reserved=reserved, scope=scope)
        tried: list[Refused] = []
        while result.status is Delivered.FAILED and result.certain:
            # this platform refused and nothing went out: the person's next platform in
            # clarify.channels, for this question (and a refusal that holds is remembered)
            why = result.why or "retries exhausted"
            tried.append(Refused(address.platform, result.reason, why, result.cause_group))
            if result.lasting:
                await self.refusals.remember(address, why)
            other = await self.routing.route(self.core, person, tenant_id=c.tenant_id,
                                             besides=tuple(r.platform for r in tried),
                                             scope=scope)
            if not isinstance(other, Address):
                break
            address = other
            result = await self.deliverer.deliver(key, address, _tagged(view, address), now=now,
                                                  scope=scope)
        if result.status is Delivered.FAILED and result.later is not None:
            # the platform is making them reachable (a Teams app being installed for them):
            # held, their turn kept, asked again then (nothing went out: no second card)
            log.info("handler.held_for_reach", platform=address.platform,
                     due=result.later.isoformat())
            raise OutOfHours(result.later)
        if result.status is Delivered.FAILED:
            if result.certain and tried:
                return _every_platform_refused(person_id, tried)
            return Skip(person_id, result.reason, result.why or "retries exhausted",
                        platform=address.platform, cause_group=result.cause_group)
        if result.status is Delivered.UNCERTAIN:
            return Skip(person_id, ReasonCode.DELIVERY_FAILED,
                        "a worker stopped mid-send and the platform cannot say whether the card "
                        "arrived; it is not sent again", platform=address.platform)
        await self.delivered(c, job, address, key, recovered=result.recovered, result=result,
                             zone=zone.name)
        return person

    async def _away(self, c: Clarification, job: LeasedJob, key: DeliveryKey,
                    address: Address, zone: PersonZone) -> Skip | None:
        """A person their platform shows as away (``bot.engine.away``): passed over (the skip,
        its record kept for the steward), or held until their first working hour back
        (``OutOfHours``); None: asked as usual (not away, or their card of this turn is
        reserved already: a crash's resend is reconciled, never passed over)."""
        assert self.away is not None
        now = self.clock.now()
        decided = await self.away.decide(
            tenant_id=c.tenant_id, severity=c.severity, address=address, zone=zone, now=now,
            moves_on_at=reminders.moves_on(now, job.lease_expires_at,
                                           self.settings.escalation_window))
        if decided.verdict is Verdict.ASK or decided.away is None \
                or await self.store.slot(key) is not None:
            return None
        if decided.verdict is Verdict.HOLD:
            assert decided.until is not None
            away.counted(away.Action.HELD, decided.away)
            log.info("handler.held_away", source=away.source_label(decided.away),
                     due=decided.until.isoformat())
            raise OutOfHours(decided.until)
        away.counted(away.Action.PASSED_OVER, decided.away)
        await away.remember(self.store, c.id, key.person_id, decided.away)
        return away.skip(key.person_id, decided, address.platform)

    async def _on_record(self, c: Clarification, job: LeasedJob, key: DeliveryKey) -> None:
        """A question card the core has on record that the store lost: its record kept again
        (so the card is refreshed when the question settles), not sent again."""
        REGISTRY.inc("clarify_store_recovered_total", what="card")
        record = next(d for d in c.deliveries if d.person_id == key.person_id
                      and d.attempt == key.attempt and d.kind is DeliveryKind.QUESTION)
        platform = self.deliverer.words.platform(record.channel)
        if record.message_ref and platform is not None:
            await self.store.add_card(CardRecord(delivery=key, platform=platform,
                                                 message_ref=record.message_ref))
        await self.trail.event(
            c.id, "delivery", job_id=job.id, person_id=key.person_id, attempt=key.attempt,
            to_core=False, extra={"recovered": "core_record"},
            message="Question card sent before (the core has it on record); the bot's store "
                    "had lost it: recorded again, not sent again.")

    async def _unblocked_first(self, c: Clarification, person: Person, address: Address,
                               scope: batching.JobScope) -> Address:
        """The person's first platform unless a refusal of it is remembered and another of
        their platforms is not blocked: the blocked one is then tried last
        (``bot.engine.lasting``)."""
        if not isinstance(self.routing.address(person, tenant_id=c.tenant_id,
                                               besides=(address.platform,)), Address):
            return address  # no other platform to prefer: no store read for it
        if await self.refusals.blocked(address) is None:
            return address
        other = await self.routing.route(self.core, person, tenant_id=c.tenant_id,
                                         besides=(address.platform,), scope=scope)
        if isinstance(other, Address) and await self.refusals.blocked(other) is None:
            return other
        return address

    async def _admit(self, c: Clarification, job: LeasedJob, key: DeliveryKey,
                     person: Person, zone: ZoneInfo, scope: batching.JobScope
                     ) -> Skip | bool | Admission:
        """The daily cap and digest batching: a skip, True when the question joined the
        person's digest (they count as asked), or the admission to send a card now (with the
        delivery reserved in the same store call)."""
        now = self.clock.now()
        admission = await self.store.admit(
            key,
            item=DigestItem(c.id, key.person_id, key.attempt, job.id),
            day=local_day(zone, now),
            now=now,
            cap=self.settings.per_person_daily_cap,
            threshold=self.settings.digest_threshold,
            window_seconds=int(self.settings.digest_window.total_seconds()),
            batched=c.severity is Severity.NORMAL,
            reserve_for=self.deliverer.worker_id,
        )
        if admission.decision is Decision.CAPPED:
            return Skip(key.person_id, ReasonCode.DAILY_CAP_EXCEEDED,
                        "the person's daily cap is reached")
        if admission.decision is Decision.DIRECT:
            return admission
        assert admission.batch_id is not None
        await self.store.mark_digested(
            key, batch_id=admission.batch_id, worker_id=self.deliverer.worker_id, now=now
        )
        await self.trail.event(
            c.id, "digested", job_id=job.id, person_id=key.person_id, attempt=key.attempt,
            reason=ReasonCode.DIGESTED, scope=scope,
            message="Queued for the person's digest at the window's end.")
        return True

    async def reachable(self, c: Clarification, person_id: str, scope: batching.JobScope
                         ) -> tuple[Person, Address] | Skip:
        """The candidate as a person of the clarification's tenant and their address, or why
        they cannot be asked."""
        reached = await self.routing.reach(self.core, person_id, tenant_id=c.tenant_id,
                                           scope=scope, role="candidate")
        if isinstance(reached, Unroutable):
            return Skip(person_id, reached.reason, reached.why, platform=reached.platform)
        return reached

    async def askable(self, c: Clarification, person_id: str, scope: batching.JobScope
                      ) -> tuple[Person, Address] | Skip:
        """``reachable``, and allowed by the RBAC gate to read the clarification's document."""
        found = await self.reachable(c, person_id, scope)
        if isinstance(found, Skip):
            return found
        verdict = may_read(found[0], acl=c.document.acl, tenant_id=c.tenant_id)
        if not verdict.allowed:
            return Skip(person_id, ReasonCode.NO_READ_PERMISSION, verdict.why)
        return found

    async def delivered(self, c: Clarification, job: LeasedJob, address: Address,
                        key: DeliveryKey, *, recovered: bool, result: Result | None = None,
                        zone: str | None = None) -> None:
        """The bot's own sink records each card (the core has it as a delivery report), with
        the zone it was sent in for the reach record (None: a card found after a crash, whose
        zone this pass did not decide; the report takes the tenant's default)."""
        if recovered:
            what = "found on the platform after a crash and recorded; not sent again"
        elif result is not None and result.status is Delivered.NEW:
            what = "sent"
        else:
            what = "already sent; not sent again"
        await self.trail.event(
            c.id, "delivery", job_id=job.id, person_id=key.person_id, attempt=key.attempt,
            channel=address.platform, to_core=False, facts=EventFacts.of(c, zone=zone),
            extra={"recovered": "true"} if recovered else None,
            message=f"Question card {what} on {address.platform}.")


async def advance(core: CoreClient, job: LeasedJob, attempt: int,
                  reason: ReasonCode | None, scope: batching.JobScope) -> None:
    """Move the job's turn on to ``attempt`` (a skip passes it on at once)."""
    # what the advance passes over reaches the core's trail first: the job's reports go at
    # its end, and a worker killed after the advance took its skips with it (the job can
    # dead-letter before any later pass records them; found by bench/soak.py)
    await core.flush(scope)
    await core.advance_job(
        job_id=job.id,
        lease_token=job.lease_token,
        attempt=attempts.bounded(attempt, job.max_attempts),
        reason_code=reason,
    )


def _tagged(view: QuestionView, address: Address) -> QuestionView:
    """The question with its card reference tagged for the chat identity it goes to
    (``bot.chat.for_recipient``): that identity's clicks are the person's stream."""
    return replace(view, card_ref=for_recipient(view.card_ref, address.platform,
                                                address.user_id))


class Refused(NamedTuple):
    """One platform's refusal of a person's card: its reason code, its cause in words, and
    the cause group its adapter named (``bot.channel.ChannelError.cause``), if any."""

    platform: str
    reason: ReasonCode
    why: str
    group: str | None = None


def _every_platform_refused(person_id: str, tried: list[Refused]) -> Skip:
    """Every platform of the person refused: DELIVERY_FAILED when any send was refused (only
    NO_DELIVERY_ALIAS when none could reach them at all: what to install), with each platform's
    reason code and cause, in the order tried; the cause group is the first platform's that
    named one (the person's first platform where it did: what to fix first)."""
    codes = {r.reason for r in tried}
    group = next((r.group for r in tried if r.group is not None), None)
    reason = (ReasonCode.NO_DELIVERY_ALIAS if codes == {ReasonCode.NO_DELIVERY_ALIAS}
              else ReasonCode.DELIVERY_FAILED)
    platforms = "+".join(r.platform for r in tried)
    if len(tried) == 1:
        return Skip(person_id, reason, tried[0].why, platform=platforms, cause_group=group)
    return Skip(person_id, reason, "every platform refused: " + "; ".join(
        f"{r.platform}: {r.reason.value} ({r.why})" for r in tried),
        platform=platforms, cause_group=group)


def _sent_before(c: Clarification, person_id: str, attempt: int) -> bool:
    """The core has a question card to the person at this turn on record."""
    return any(d.person_id == person_id and d.attempt == attempt
               and d.kind is DeliveryKind.QUESTION for d in c.deliveries)


def local_day(zone: ZoneInfo, now: datetime) -> str:
    """The person's calendar day in their zone (``bot.engine.zones``): the daily cap resets at
    their midnight."""
    return now.astimezone(zone).date().isoformat()

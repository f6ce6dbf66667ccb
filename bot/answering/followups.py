"""What follows a settled answer: the cards' new state, private notes, the steward's notice.

The outbox's consumers hand each settled answer here and move on to the next one, so that card
updates (which the chat platform rate-limits hard) never hold up forwarding. A few workers read
the clarification once more, show the answering person the outcome on their own cards (found in
the store's card records for that PERSON, never a message the callback names), tell them
privately where a card cannot show it (digest entries, no card, refusals), repaint every other
card (through ``bot.engine.refresh``, the one place cards are rewritten) and tell the steward
about conflicts (``bot.engine.stewards``).
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from dataclasses import dataclass, field

import structlog

from bot.aio import drain
from bot.answering.waiting import Handover
from bot.channel import Channel, ChannelError
from bot.chat import Callback, ChatUser
from bot.clock import Clock
from bot.core import errors as e
from bot.core.client import CoreClient
from bot.core.models import (
    AnswerOutcome,
    AnswerResult,
    Clarification,
    ClarificationState,
    DeliveryKind,
    Person,
    QuorumState,
)
from bot.engine import outcomes, views
from bot.engine.aliases import Unlinked
from bot.engine.refresh import CardRefresher, Version
from bot.engine.stewards import Stewards
from bot.engine.unreported import UnreportedCards
from bot.interaction.attention import AttentionBoard
from bot.interaction.interactions import placement
from bot.store.base import CardRecord, DeliveryLedger
from bot.store.errors import StoreError
from cards.views import AnswerView, OutcomeKind, OutcomeView

log = structlog.get_logger("clarify.followups")
_FOLLOW_UP_UNAVAILABLE = (e.CoreTransportError, e.ServerError, e.RateLimited)


@dataclass(frozen=True, slots=True)
class Answered:
    """The core took (or, with ``result`` None, refused as moved on) a person's answer."""

    cb: Callback
    person: Person
    before: Clarification
    result: AnswerResult | None
    settled_before: bool
    answered_at: float = 0.0  # time.monotonic() when the core's answer arrived


@dataclass(frozen=True, slots=True)
class Note:
    """Tell the person privately, next to the message they clicked: "not available" unless
    ``unlinked`` (why their chat identity answers for nobody) or ``waiting`` (the "being
    recorded" kind ``bot.answering.waiting`` decided) says otherwise."""

    cb: Callback
    unlinked: Unlinked | None = None
    waiting: OutcomeKind | None = None


@dataclass(frozen=True, slots=True)
class _Own:
    """The answering person's outcome as worked out once: the cards on record, the
    clarification read after the answer (None: not needed, or the core gone again), the view
    and its version."""

    cards: list[CardRecord]
    fresh: Clarification | None
    read_at: float
    view: OutcomeView | None
    version: Version


@dataclass(frozen=True, slots=True)
class _Rest:
    """What follows an answer whose clicked card the click's own response showed
    (``in_place``): every other card and the steward; never the clicked card again."""

    job: Answered
    own: _Own
    shown: str | None  # the clicked card's reference, answered in place
    # the clicked card, left "being recorded" by a response that gave up waiting: where a note
    # would go beside it (no card of theirs on record), it is updated instead
    waiting: str | None = None


@dataclass
class Followups:
    core: CoreClient
    store: DeliveryLedger
    channels: dict[str, Channel]
    clock: Clock
    refresher: CardRefresher
    # without it the steward hears of a conflict only when the job comes back, a window later,
    # and of a conflict after binding never (no job comes back)
    stewards: Stewards | None = None
    workers: int = 2
    # a steward's override leaves their attention queue: it is shown anew
    # (``bot.interaction.attention``)
    board: AttentionBoard | None = None
    # a question card still marked unreported when someone answers: looked at once its job,
    # if alive, would have reported it (``bot.engine.unreported``)
    unreported: UnreportedCards | None = None
    _jobs: deque[Answered | Note | _Rest] = field(default_factory=deque)
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)

    # ---------------------------------------------------------------- the queue

    def submit(self, job: Answered | Note | _Rest) -> None:
        """Queue what follows an answer; a few workers take it in order."""
        self._jobs.append(job)
        while len(self._tasks) < min(self.workers, len(self._jobs)):
            task = asyncio.create_task(self._work())
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def pending(self) -> int:
        return len(self._jobs)

    async def drain(self) -> None:
        """Wait until everything queued so far has been shown (tests, shutdown)."""
        await drain(self._tasks)

    async def _work(self) -> None:
        while self._jobs:
            await self.run_now(self._jobs.popleft())

    async def run_now(self, job: Answered | Note | _Rest) -> OutcomeView | None:
        """Show one job's outcome now; returns the answering person's view. Never raises: a
        card that cannot be updated stays as it was, the answer itself is safe in the core."""
        try:
            if isinstance(job, Note):
                await self._note(job.cb, job.cb.message_ref, _note_view(job, self.clock))
                return None
            if isinstance(job, _Rest):
                await self._rest(job.job, job.own, shown=job.shown, waiting=job.waiting)
                return job.own.view
            return await self._answered(job)
        except Exception as exc:  # one job's failure must not stop the others
            log.warning("followups.failed", error=type(exc).__name__)
            return None

    async def in_place(self, job: Answered, *, handover: Handover) -> OutcomeView | None:
        """The answering person's outcome for the card they clicked, which the click's own
        response shows (a Teams invoke answered with the card): no channel call for it. Every
        other card (theirs, other people's) and the steward's notice follow in the background,
        through the channel's paced lane. A response that gave up waiting (``handover``) shows
        nothing of it: the clicked card is then painted through the channel too. Never raises
        (None: the rest shows it later)."""
        try:
            own = await self._own(job)
        except Exception as exc:
            log.warning("followups.failed", error=type(exc).__name__)
            self.submit(job)
            return None
        if not handover.take():  # the click's response is gone: every card through the channel
            self.submit(_Rest(job=job, own=own, shown=None, waiting=job.cb.message_ref))
            return None
        shown = job.cb.message_ref if own.view is not None else None
        clicked = next((card for card in own.cards if shown is not None
                        and card.platform == job.cb.platform and card.message_ref == shown),
                       None)
        if clicked is not None:  # a state read before this answer never replaces it later
            self.refresher.shown(clicked, own.version)
        self.submit(_Rest(job=job, own=own, shown=shown))
        return own.view

    # ---------------------------------------------------------------- after an answer

    async def _answered(self, job: Answered) -> OutcomeView | None:
        own = await self._own(job)
        await self._rest(job, own, shown=None)
        return own.view

    async def _own(self, job: Answered) -> _Own:
        c = job.before
        cards = await self.store.cards(c.id)
        fresh: Clarification | None = None
        read_at = time.monotonic()
        if _needs_fresh(job, cards):
            try:  # one read of the clarification after the answer serves every follow-up
                fresh = await self.core.get_clarification(clarification_id=c.id)
            except _FOLLOW_UP_UNAVAILABLE as exc:
                log.warning("answers.follow_up_failed", error=type(exc).__name__)
        view, version = await self._own_view(job, fresh, read_at, self._zone(job, cards))
        return _Own(cards=cards, fresh=fresh, read_at=read_at, view=view, version=version)

    def _zone(self, job: Answered, cards: list[CardRecord]) -> views.Zone:
        """The zone the answering person's outcome reads in: the one the card they clicked (or
        another of theirs) was written in, else theirs as known without asking the platform
        (``bot.engine.zones``)."""
        return (views.card_zone(cards, job.person.person_id,
                                clicked=(job.cb.platform, job.cb.message_ref))
                or self.refresher.zones.estimate(job.before.tenant_id, job.person))

    async def _rest(self, job: Answered, own: _Own, *, shown: str | None,
                    waiting: str | None = None) -> None:
        """Everything an answer changes but the card ``shown`` in place: the person's other
        cards (or a note), everyone else's cards, the steward."""
        c, person, result = job.before, job.person, job.result
        await self._unreported(c.id, own.cards)
        cards = [card for card in own.cards if shown is None
                 or not (card.platform == job.cb.platform and card.message_ref == shown)]
        await self._show_own(job, own.view, own.version, cards, shown=shown, waiting=waiting)
        if own.fresh is not None:
            await self.refresher.paint_states(own.fresh, cards, own.read_at)
        if result is not None:
            await self._tell_steward(c.id, own.fresh, result, responder=person.person_id)
            if job.cb.steward_override and self.board is not None:
                cb = job.cb
                self.board.changed(ChatUser(platform=cb.platform, user_id=cb.user_id,
                                            team_id=cb.team_id, enterprise_id=cb.enterprise_id,
                                            aad_tenant_id=cb.aad_tenant_id),
                                   person, c.tenant_id)

    async def _unreported(self, clarification_id: str, cards: list[CardRecord]) -> None:
        """A card of the clarification still marked unreported (its job still running, or
        killed before it reported): the card's report is seen to later, by a worker
        (``bot.engine.unreported``), so the core's trail shows the card the answer came from."""
        if self.unreported is None:
            return
        try:
            await self.unreported.answered(clarification_id, cards)
        except StoreError as exc:
            log.warning("followups.unreported_not_indexed", error=type(exc).__name__)

    async def _own_view(self, job: Answered, fresh: Clarification | None, read_at: float,
                        zone: views.Zone) -> tuple[OutcomeView | None, Version]:
        """The answering person's outcome, unless later answers already changed the state (then
        their cards show that state, like everyone else's). Without ``fresh`` (not needed, or
        the core is gone again) it is told from the core's answer alone."""
        c, result = job.before, job.result
        if fresh is None:
            if result is None:
                return None, (0.0, 0)
            return _as_the_core_said(job, self.clock, zone), (job.answered_at, 1)
        if result is not None and fresh.responses and not _latest_is(fresh, result, job):
            return None, (read_at, 0)
        confirmers = (fresh.quorum.confirmed_by if result is not None
                      and result.confirmers_derived else
                      result.confirmed_by if result is not None else [])
        names = await self.refresher.names(confirmers) if result is not None else []
        view = outcomes.after_answer(c, fresh, job.person, result, names=names,
                                     now=self.clock.now(),
                                     moved_on=job.settled_before or result is None, zone=zone)
        return view, (read_at, 1)

    async def _show_own(self, job: Answered, view: OutcomeView | None, version: Version,
                        cards: list[CardRecord], *, shown: str | None = None,
                        waiting: str | None = None) -> None:
        """``shown``: the clicked card, answered in place (it is not in ``cards``): nothing is
        said beside it either. ``waiting``: the clicked card, showing "being recorded": updated
        with the outcome where a note would be put beside it."""
        if view is None:
            return
        own = [card for card in cards if card.delivery.person_id == job.person.person_id]
        placed = placement(own, platform=job.cb.platform, clicked=job.cb.message_ref,
                           override=job.cb.steward_override)
        for card in placed.paint:
            await self.refresher.paint(card, view, version)
        for platform, near in placed.notes:
            if shown is not None and platform == job.cb.platform and near == shown:
                continue
            if waiting is not None and platform == job.cb.platform and near == waiting:
                await self._update(job.cb, near, view)
                continue
            await self._note(job.cb, near, view, platform=platform)

    async def _tell_steward(self, clarification_id: str, fresh: Clarification | None,
                            result: AnswerResult, *, responder: str) -> None:
        """A conflict reaches the steward now: before binding one notice per clarification,
        after binding (a conflicting attestation) one per late responder; both are idempotent."""
        conflicted = _conflicted(result)
        late = result.outcome is AnswerOutcome.CONFLICTING_ATTESTATION
        if self.stewards is None or not (conflicted or late):
            return
        try:
            if fresh is None:  # the follow-up read failed: one more try for the steward's sake
                fresh = await self.core.get_clarification(clarification_id=clarification_id)
            if conflicted:
                await self.stewards.notify_conflict(fresh)
            else:
                await self.stewards.notify_late_conflict(fresh, responder)
        except e.CoreError as exc:  # conflicted: the worker's next pass over the job tells them
            log.warning("answers.steward_not_told", error=type(exc).__name__, late=late)

    # ---------------------------------------------------------------- helpers

    async def _update(self, cb: Callback, ref: str, view: OutcomeView) -> None:
        channel = self.channels.get(cb.platform)
        if channel is None:
            return
        try:
            await channel.update(ref, view)
        except ChannelError as exc:
            log.warning("answers.card_update_failed", error=exc.reason)

    async def _note(self, cb: Callback, near: str | None, view: OutcomeView | None, *,
                    platform: str | None = None) -> None:
        channel = self.channels.get(platform or cb.platform)
        if channel is None or near is None:
            return
        try:
            await channel.note(near, cb.user_id, view)
        except ChannelError as exc:
            log.warning("answers.note_not_shown", error=exc.reason)


def _needs_fresh(job: Answered, cards: list[CardRecord]) -> bool:
    """Whether showing this answer needs the clarification as it is now: another person's card
    to repaint, other confirmers to name, a conflict for the steward, a replayed or refused
    answer. Otherwise the core's answer says all the person's card shows (one core call less
    per answer, which under a burst is a third of the follow-up's cost)."""
    result, person = job.result, job.person.person_id
    if result is None or result.replayed or job.settled_before or result.confirmers_derived:
        return True  # (a core that leaves confirmedBy out: the record names the confirmers)
    if set(result.confirmed_by) - {person}:
        return True
    if _conflicted(result) or result.outcome is AnswerOutcome.CONFLICTING_ATTESTATION:
        return True
    return any(card.delivery.person_id != person
               and card.delivery.kind == DeliveryKind.QUESTION.value for card in cards)


def _conflicted(result: AnswerResult) -> bool:
    """The answer left the clarification conflicted, by its outcome or the quorum's state as
    much as by the state word (which may be one the bot does not know)."""
    return (result.state is ClarificationState.CONFLICTED
            or result.quorum_state is QuorumState.CONFLICTED
            or result.outcome is AnswerOutcome.CONFLICTED)


def _note_view(note: Note, clock: Clock) -> OutcomeView | None:
    if note.unlinked is not None:
        return outcomes.unlinked(note.unlinked, note.cb.clarification_id, now=clock.now())
    if note.waiting is not None:
        return outcomes.placeholder(note.waiting, note.cb.clarification_id,
                                    answer=_cb_answer(note.cb), now=clock.now())
    return None


def _as_the_core_said(job: Answered, clock: Clock, zone: views.Zone) -> OutcomeView:
    """The outcome from the core's answer alone, when the core is gone again right after."""
    assert job.result is not None
    c, cb = job.before, job.cb
    chosen = next((x for x in c.candidates if x.index == cb.answer_index), None)
    answer = AnswerView(valid_from=chosen.valid_from, valid_to=chosen.valid_to) \
        if chosen else _cb_answer(cb)
    return outcomes.as_the_core_said(c, job.person, job.result, chosen=answer, now=clock.now(),
                                     zone=zone)


def _cb_answer(cb: Callback) -> AnswerView | None:
    if cb.answer_index is not None:
        return None
    return outcomes.custom_answer_view(cb.custom_from, cb.custom_to)


def _latest_is(fresh: Clarification, result: AnswerResult, job: Answered) -> bool:
    """Whether the clarification's latest response is this answer's (by id; by responder when
    the core leaves the response id out)."""
    latest = fresh.responses[-1]
    if result.response_id:
        return latest.response_id == result.response_id
    return latest.responder == job.person.person_id

"""Answers: a verified button callback → the durable outbox → a responder the core knows → the core.

Adapters verify the request (Slack signature, Bot Framework token) and, before acknowledging
it, hand ``take`` a ``Callback`` holding only what the verified request says (tenant, chat
identity, the platform's time of the action) and the opaque references the card carried, with
the seconds their platform gives (``respond_within``). ``take`` is the one way in, and one
store call: the answer is durable, and ordered (by the platform's time of the action) against
the same person's other answers to the same clarification, before the platform hears "ok". The
outbox's consumers (``bot.answering.outbox``) then call ``process`` for each entry: the chat
identity becomes a PERSON through the core (only a verified enterprise identity answers), the
person's rights are read at answer time, the answer is forwarded with the entry's idempotency
key, and what the cards show is handed to ``bot.answering.followups``. A double click, a
platform retry or a replayed payload reaches the core once. Every answer reaches the core, in
the order the person gave them: one superseded while it waited goes as superseded (the
``answer-order`` extension: recorded, never counted) with the platform's time of the action, so
the core's record shows the change of mind and only the latest counts; an older action arriving
after a newer one is forwarded too, and the core records it as the earlier response it is. One
person's same answer on two platforms is one answer: one given just before the same answer
already forwarded goes as a resend of that one (its idempotency key), and the core answers it
with the prior outcome (docs/delivery.md, "Every answer, in the person's order").
"""

from __future__ import annotations

import asyncio
import random as _random
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import timedelta
from enum import StrEnum

import structlog

from bot.aio import Tasks
from bot.answering.followups import Answered, Followups, Note
from bot.answering.policy import OutboxPolicy
from bot.answering.requests import answer_request, occurrence, request_id, with_acted
from bot.answering.waiting import FAILING, CoreReach, Handover, InPlace, waiting_kind
from bot.audit import Audit, AuditEvent, EventFacts, occurrence_of
from bot.channel import ContractWords
from bot.chat import Callback
from bot.clock import Clock
from bot.core import errors as e
from bot.core.client import CoreClient
from bot.core.models import AnswerOutcome, AnswerResult, Clarification, Person, ReasonCode
from bot.engine import aliases
from bot.engine.aliases import Unlinked
from bot.engine.rbac import may_read, role_in
from bot.errors import BotError
from bot.metrics import REGISTRY
from bot.recent import Recent
from bot.store.base import Acceptance, Outbox, OutboxEntry
from bot.store.errors import OutboxFull, StoreError
from cards.views import OutcomeView

log = structlog.get_logger("clarify.answers")
# The core cannot take answers now: the entry waits, and this never counts towards parking.
UNAVAILABLE = (e.CoreTransportError, e.ServerError, e.RateLimited, TimeoutError)


class AnswerStatus(StrEnum):
    FORWARDED = "forwarded"  # the core took it; ``result`` says what it did
    QUEUED = "queued"  # in the outbox: forwarded when a consumer (or the core) is free
    DUPLICATE = "duplicate"  # the same action again: held or settled already, not forwarded
    # forwarded as superseded: the same person answered later (recorded, never counted)
    SUPERSEDED = "superseded"
    # the chat identity answers for nobody (``Unlinked``: shared, unknown or unverified):
    # nothing forwarded
    UNVERIFIED = "unverified"
    OUT_OF_SCOPE = "out_of_scope"  # TENANT_SCOPE_MISMATCH: nothing forwarded
    NOT_ALLOWED = "not_allowed"  # unknown clarification, no read permission, refused by the core
    INVALID = "invalid"  # the core could not normalise the free-form answer: nothing bound
    PARKED = "parked"  # failed too often: set aside for an operator, never forwarded again


REGISTRY.preset("clarify_answers_total", verdict=AnswerStatus)
# what a refusal of an answer that could not be made durable (store down, outbox full) asks the
# platform to wait before trying again (its Retry-After)
NOT_DURABLE_RETRY_AFTER_SECONDS = 30


class NotDurable(BotError):
    """An answer could not be made durable within the platform's time (``take``): the store
    failed or did not answer. ``cause`` is the error's type name (``OutboxFull``: the outbox is
    at its limit). The adapter refuses the click (503, Retry-After), never acknowledges it."""

    def __init__(self, cause: str) -> None:
        super().__init__(cause)
        self.cause = cause
        self.retry_after = NOT_DURABLE_RETRY_AFTER_SECONDS


@dataclass(frozen=True, slots=True)
class Wait:
    """A click's response that waits for its answer's outcome (``take``): the answer is
    forwarded at once, as a task of the adapter's ``tasks`` (counted by the abuse limits,
    finished by the adapter's drain), not by a consumer. The wait ends at ``until`` (the event
    loop's time: the platform's deadline for the whole response) or, without it, ``seconds``
    after the answer is durable. ``in_place``: the response shows the person's own outcome
    (a Teams invoke answered with the card), so only that is worked out while it waits; the
    rest follows in the background."""

    tasks: Tasks
    seconds: float = 0.0
    until: float | None = None
    in_place: bool = False


@dataclass(frozen=True, slots=True)
class Receipt:
    verdict: AnswerStatus
    # what the answering person's card shows (a ``Wait`` ``in_place`` only)
    view: OutcomeView | None = None
    result: AnswerResult | None = None
    shown: Answered | Note | None = None  # what follows, for ``bot.answering.followups``


@dataclass
class AnswerService:
    core: CoreClient
    store: Outbox
    audit: Audit
    clock: Clock
    followups: Followups  # what the cards show after an answer, and the steward's notices
    policy: OutboxPolicy = field(default_factory=OutboxPolicy)
    # set when this process queues an entry: its consumers wake on it at once rather than at
    # their next poll (``bot.answering.outbox``, which waits on this very event)
    queued: asyncio.Event = field(default_factory=asyncio.Event)
    # what forwards last met: an answer or a failing core (``bot.answering.waiting``)
    reach: CoreReach | None = None
    random: Callable[[], float] = _random.random  # the outbox's jitter draws (tests: 1.0)
    # the contract's words of the mounted platforms: the answers' channel word
    words: ContractWords = field(default_factory=lambda: ContractWords.of({}))
    identities: Recent[tuple[str, str, str, str | None, str | None], Person] = field(init=False)
    clarifications: Recent[str, Clarification] = field(init=False)
    in_place: InPlace = field(init=False)

    def __post_init__(self) -> None:
        self.in_place = InPlace(self.policy.in_place_at_once)
        self.identities = Recent(ttl_seconds=self.policy.cache_seconds)
        self.clarifications = Recent(ttl_seconds=self.policy.cache_seconds)
        if self.reach is None:
            self.reach = CoreReach(self.clock)

    # ---------------------------------------------------------------- the one way in

    async def take(self, cb: Callback, *, respond_within: float, wait: Wait | None = None
                   ) -> Receipt:
        """A verified answer, made durable and ordered (one store call) before the platform
        hears "ok": the verdict (QUEUED, DUPLICATE, OUT_OF_SCOPE). Raises ``NotDurable`` when
        the store fails or does not answer within ``respond_within`` seconds (the platform's
        number, kept by its adapter): the platform is then refused, never acknowledged.

        Without ``wait`` the outbox's consumers forward it. With ``wait`` the click's response
        waits for the outcome: the answer is forwarded at once, in a task of the adapter's
        (``Wait``), and the verdict returned is the forward's, or QUEUED when the wait ends
        first (the forward goes on, its outcome follows through the channel)."""
        cb = with_acted(cb, self.clock)  # one entry, whoever forwards it
        if wait is not None and not self.in_place.enter():
            REGISTRY.inc("clarify_answers_in_burst_total")
            wait = None  # a burst: "being recorded" now, the outcome painted when it comes
        try:
            verdict = await self._durable(cb, respond_within, wake=wait is None)
            if wait is None or verdict is not AnswerStatus.QUEUED:
                return Receipt(verdict)
            return await self._waited(cb, wait)
        finally:
            if wait is not None:
                self.in_place.leave()

    async def _durable(self, cb: Callback, respond_within: float, *, wake: bool
                       ) -> AnswerStatus:
        try:
            return await asyncio.wait_for(self._accept(cb, wake=wake), respond_within)
        except (TimeoutError, StoreError) as exc:
            # under its platform's name, as operators know it (``slack.answer_not_durable``)
            log.error(f"{cb.platform}.answer_not_durable", error=type(exc).__name__)
            raise NotDurable(type(exc).__name__) from None

    async def _accept(self, cb: Callback, *, wake: bool) -> AnswerStatus:
        """Make the answer durable and ordered. ``wake`` False: the caller forwards it itself,
        and the consumers find it due only ``own_forward_seconds`` later."""
        if cb.tenant_id is None:
            await self._refuse(cb, ReasonCode.TENANT_SCOPE_MISMATCH,
                               "A callback came from a workspace mapped to no tenant.")
            return AnswerStatus.OUT_OF_SCOPE
        due = self.clock.now() + timedelta(
            seconds=0.0 if wake else self.policy.own_forward_seconds)
        try:
            got = await self.store.outbox_accept(cb.entry_id(), cb.to_json(),
                                                 order_key=cb.order_key(), acted_at=cb.acted_at,
                                                 now=due, answer=cb.fingerprint())
        except OutboxFull:  # nothing stored: the caller refuses, the platform or person retries
            REGISTRY.inc("clarify_outbox_full_total")
            raise
        if got is Acceptance.QUEUED:
            if wake:
                self.queued.set()
            return AnswerStatus.QUEUED
        REGISTRY.inc("clarify_answers_total", verdict=AnswerStatus.DUPLICATE.value)
        return AnswerStatus.DUPLICATE

    async def _waited(self, cb: Callback, wait: Wait) -> Receipt:
        """Forward the accepted answer in a task of ``wait.tasks``; its receipt if it came in
        time (with the clicker's own outcome worked out for the response when ``in_place``),
        else QUEUED: the task goes on and the follow-ups show its outcome through the channel."""
        loop = asyncio.get_running_loop()
        handover = Handover() if wait.in_place else None
        task = wait.tasks.spawn(self._forward_own(cb, handover, wait.tasks))
        until = wait.until if wait.until is not None else loop.time() + wait.seconds
        done, _ = await asyncio.wait({task}, timeout=max(0.0, until - loop.time()))
        if task not in done and (handover is None or handover.give_up()):
            return Receipt(AnswerStatus.QUEUED)
        if task not in done:  # handed over just now: only its return is left
            await asyncio.wait({task})
        if task.cancelled() or task.exception() is not None:
            return Receipt(AnswerStatus.QUEUED)
        return task.result()

    async def _forward_own(self, cb: Callback, handover: Handover | None, tasks: Tasks
                           ) -> Receipt:
        """Forward an answer this caller accepted (unless a consumer holds it already)."""
        # (as due as ``_accept(wake=False)`` made it: the claim is this caller's)
        at = self.clock.now() + timedelta(seconds=self.policy.own_forward_seconds)
        claimed = await self.store.outbox_claim(now=at, lease_seconds=self.policy.lease_seconds,
                                                limit=1, entry_id=cb.entry_id())
        if not claimed:
            return Receipt(AnswerStatus.QUEUED)
        with structlog.contextvars.bound_contextvars(**_log_ids(claimed[0])):
            return await self._process(claimed[0], handover, tasks)

    # ---------------------------------------------------------------- one outbox entry

    async def process(self, entry: OutboxEntry) -> Receipt:
        """Forward one entry a consumer claimed and settle it: done, retried with backoff, or
        parked. Never raises for the entry's sake: a bug, a malformed entry or a refusal ends
        here."""
        with structlog.contextvars.bound_contextvars(**_log_ids(entry)):
            return await self._process(entry, None)

    async def _process(self, entry: OutboxEntry, handover: Handover | None,
                       tasks: Tasks | None = None) -> Receipt:
        """``handover``: a click's response waits for this entry's outcome and shows the
        person's own result (a Teams invoke); only what it shows is worked out here, the rest
        follows in the background (in ``tasks``: settling the entry)."""
        assert self.reach is not None
        try:
            receipt = await self._attempt(entry)
        except UNAVAILABLE as exc:
            log.warning("answers.core_unavailable", error=type(exc).__name__)
            if isinstance(exc, FAILING):
                self.reach.failed(exc)
            else:  # it answered: slow down
                self.reach.answered()
            return await self._later(entry, failed=False, handover=handover,
                                     retry_after=exc.retry_after if isinstance(exc, e.CoreAPIError)
                                     else None)
        except Exception as exc:  # whatever it is, it stays with this entry
            log.error("answers.entry_failed", error=type(exc).__name__,
                      attempts=entry.attempts, failures=entry.failures + 1)
            if entry.failures + 1 >= self.policy.max_failures:
                return await self._park(entry, reason=type(exc).__name__)
            return await self._later(entry, failed=True)
        self.reach.answered()
        if handover is not None and tasks is not None and isinstance(receipt.shown, Answered):
            return await self._in_place(entry, receipt, receipt.shown, handover, tasks)
        await self.store.outbox_done(entry, now=self.clock.now())
        REGISTRY.inc("clarify_answers_total", verdict=receipt.verdict.value)
        if receipt.shown is None:
            return receipt
        # a refusal the waiting response shows itself: no note beside it
        if handover is None or not handover.take():
            self.followups.submit(receipt.shown)
        return receipt

    async def _in_place(self, entry: OutboxEntry, receipt: Receipt, shown: Answered,
                        handover: Handover, tasks: Tasks) -> Receipt:
        """The person's own outcome for the click's response; the entry settled in ``tasks``,
        not waited for: an entry not settled (the store failing, the process killed) is sent
        again after its lease, which the core answers from its idempotency key, once."""
        tasks.spawn(self._settle(entry))
        view = await self.followups.in_place(shown, handover=handover)
        REGISTRY.inc("clarify_answers_total", verdict=receipt.verdict.value)
        return replace(receipt, view=view)

    async def _settle(self, entry: OutboxEntry) -> None:
        try:
            await self.store.outbox_done(entry, now=self.clock.now())
        except Exception as exc:  # its lease brings it back
            log.warning("answers.entry_not_settled", error=type(exc).__name__)

    async def _attempt(self, entry: OutboxEntry) -> Receipt:
        cb = Callback.from_json(entry.payload)
        async with asyncio.timeout(self.policy.forward_timeout_seconds):
            return await self._forward(entry, cb)

    async def _later(self, entry: OutboxEntry, *, failed: bool,
                     retry_after: float | None = None, handover: Handover | None = None
                     ) -> Receipt:
        """Retry with backoff (``OutboxPolicy.retry``; ``retry_after``: what a core's 429 or
        503 asked, a floor). On the first try that found the core away, the person is told
        the answer is being recorded, unless the caller still waiting on ``handover`` (a Teams
        invoke) shows that in its own answer: a second message would say it twice."""
        wait = self.policy.wait(entry.attempts, draw=self.random(), retry_after=retry_after)
        await self.store.outbox_retry(entry, at=self.clock.now() + wait, failed=failed)
        REGISTRY.inc("clarify_answers_total", verdict=AnswerStatus.QUEUED.value)
        if entry.attempts != 1 or failed:
            return Receipt(AnswerStatus.QUEUED)
        # the first try found the core away: the person learns that it is being recorded (and
        # that the core cannot be reached only while it is in fact failing)
        note = Note(cb=Callback.from_json(entry.payload), waiting=waiting_kind(self.reach))
        if handover is None or not handover.take():
            self.followups.submit(note)
        return Receipt(AnswerStatus.QUEUED, shown=note)

    async def _park(self, entry: OutboxEntry, *, reason: str) -> Receipt:
        await self.store.outbox_park(entry, reason=reason, now=self.clock.now())
        REGISTRY.inc("clarify_outbox_parked_total")
        REGISTRY.inc("clarify_answers_total", verdict=AnswerStatus.PARKED.value)
        await self.audit.emit(AuditEvent(
            type="answer_parked", at=self.clock.now(),
            clarification_id=entry.order_key.partition("|")[0] or "-",
            message=f"An answer failed {entry.failures + 1} times ({reason}) and was set aside "
                    "in the outbox for an operator; it will not be forwarded on its own.",
            extra={"entry": request_id(entry.entry_id), "error": reason},
            occurrence=occurrence_of("entry", entry.entry_id),
        ), to_core=False)
        return Receipt(AnswerStatus.PARKED)

    # ---------------------------------------------------------------- the pipeline

    async def _forward(self, entry: OutboxEntry, cb: Callback) -> Receipt:
        if cb.tenant_id is None:
            return Receipt(AnswerStatus.OUT_OF_SCOPE, shown=Note(cb=cb))
        cid = cb.clarification_id
        # its tenant, workspace and document ACL (fixed for its lifetime), read while the
        # responder is: neither read waits for the other
        reading = asyncio.ensure_future(self.clarifications.read(
            cid, lambda: self.core.get_clarification(clarification_id=cid), now=self.clock.now()))
        try:
            person = self.identities.get(cb.who(), now=self.clock.now())
            if person is None:
                found = await self._responder(cb)
                if isinstance(found, Unlinked):
                    return Receipt(AnswerStatus.UNVERIFIED, shown=Note(cb=cb, unlinked=found))
                person = found
                self.identities.keep(cb.who(), person, now=self.clock.now())
            try:
                c = await reading
            except e.ClarificationNotFound:
                return Receipt(AnswerStatus.NOT_ALLOWED, shown=Note(cb=cb))
        finally:  # a read no longer waited for: stopped, or its failure taken
            if not reading.done():
                reading.cancel()
            elif not reading.cancelled():
                reading.exception()
        if c.tenant_id != cb.tenant_id:
            await self._refuse(cb, ReasonCode.TENANT_SCOPE_MISMATCH,
                               "A callback named a clarification of another tenant.")
            return Receipt(AnswerStatus.OUT_OF_SCOPE, shown=Note(cb=cb))
        if not may_read(person, acl=c.document.acl, tenant_id=c.tenant_id).allowed:
            await self._refuse(cb, ReasonCode.RESPONDER_NOT_AUTHORISED,
                               "The responder may not read this clarification's source.",
                               to_core=True)
            return Receipt(AnswerStatus.NOT_ALLOWED, shown=Note(cb=cb))
        # a repeat of an answer forwarded already goes as a resend of it, never as superseded:
        # no core records the same answer twice, whatever it does with the time, and its
        # outcome is that answer's (bot.store.stream)
        superseded = entry.superseded and entry.repeats is None
        request = answer_request(cb, person, rights=role_in(person, c.workspace.workspace_id),
                                 channel=self.words.channel(cb.platform),
                                 request_id=request_id(entry.repeats or entry.entry_id),
                                 superseded=superseded)
        try:
            answered = await self.core.answer_clarification(clarification_id=c.id,
                                                            request=request)
        except (e.AnswerUnnormalisable, e.AnswerIndexOutOfRange):
            return Receipt(AnswerStatus.INVALID)
        except e.AlreadyAnswered:
            return Receipt(AnswerStatus.FORWARDED, shown=Answered(
                cb=cb, person=person, before=c, result=None, settled_before=True,
                answered_at=time.monotonic()))
        except (e.PermissionDenied, e.StewardOverrideNotAllowed) as exc:
            if cb.steward_override:  # refused by the core: nothing recorded, told privately
                await self._refuse(cb, ReasonCode.RESPONDER_NOT_AUTHORISED,
                                   f"A steward override was refused by the core ({exc.code}); "
                                   "nothing was recorded.")
            return Receipt(AnswerStatus.NOT_ALLOWED, shown=Note(cb=cb))
        answered_at = time.monotonic()
        result = answered.result
        await self._audit_answer(c, person, cb, result, superseded=superseded)
        if superseded or result.superseded:
            # recorded as the earlier answer it is; what the person sees is their latest
            # answer's outcome (it follows, or went before)
            return Receipt(AnswerStatus.SUPERSEDED, result=result)
        # after binding an answer is a conflicting attestation (or refused as the same, above):
        # "settled before" comes from the core's answer, not from the (maybe remembered) read
        settled_before = result.outcome is AnswerOutcome.CONFLICTING_ATTESTATION
        return Receipt(AnswerStatus.FORWARDED, result=result, shown=Answered(
            cb=cb, person=person, before=c, result=result, settled_before=settled_before,
            answered_at=answered_at))

    async def _responder(self, cb: Callback) -> Person | Unlinked:
        """The verified PERSON behind the chat identity, or why there is none, refused with
        its reason (ALIAS_AMBIGUOUS for a chat id several people claim, else
        RESPONDER_NOT_AUTHORISED) on the audit sink and the core's trail."""
        assert cb.tenant_id is not None
        found = await aliases.clicker(self.core, tenant_id=cb.tenant_id, user=cb.identity())
        if isinstance(found, Unlinked):
            await self._refuse(cb, found.reason, f"{found.why.capitalize()}; nothing was "
                               "forwarded.", to_core=True)
        return found

    # ---------------------------------------------------------------- audit

    async def _refuse(self, cb: Callback, reason: ReasonCode, message: str, *,
                      to_core: bool = False) -> None:
        await self.audit.emit(AuditEvent(
            type="answer_refused", at=self.clock.now(), clarification_id=cb.clarification_id,
            message=message, reason_code=reason, channel=cb.platform,
            extra={"chat_user": cb.user_id}, occurrence=occurrence(cb),
        ), to_core=to_core)

    async def _audit_answer(self, c: Clarification, person: Person, cb: Callback,
                            result: AnswerResult, *, superseded: bool = False) -> None:
        later = superseded or result.superseded
        await self.audit.emit(AuditEvent(
            type="answer_forwarded", at=self.clock.now(), clarification_id=c.id,
            person_id=person.person_id, channel=cb.platform,
            message=("Answer forwarded as superseded by a later answer of the same person; "
                     "recorded, it does not count." if later else
                     f"Answer forwarded; the core's outcome: {result.outcome}."),
            extra={"superseded": "true"} if later else {}, occurrence=occurrence(cb),
            facts=EventFacts.of(c, bound=not later and result.outcome is AnswerOutcome.BOUND),
        ), to_core=False)


def _log_ids(entry: OutboxEntry) -> dict[str, str]:
    """The ids every log line of one entry's work carries: its clarification and its person's
    stream, read from the entry's order key (``Callback.order_key``), never from its answer: a
    card's order token (pseudonymous already), else the chat user (pseudonymised by the log
    processor, ``bot.pseudonym``)."""
    parts = entry.order_key.split("|") + ["-"] * 4
    if parts[1] == "p":
        return {"clarification_id": parts[0], "order_token": parts[2]}
    return {"clarification_id": parts[0], "platform": parts[1], "chat_user": parts[3]}

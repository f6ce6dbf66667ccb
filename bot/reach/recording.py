"""Writing the reach record from the engine's own audit events (no log scraping).

``ReachRecorder.seen`` is the audit's observer (``bot.audit.AuditObserver``): it turns an event
that carries its question's facts (``bot.audit.EventFacts``) into entries and queues them; a
background task writes the queue to the ``ReachLog``. Recording never holds up or fails a
delivery: the event's path only appends to a bounded queue; a write that fails is logged
(value-free: the error's type) and counted (``clarify_reach_write_failures_total``) and its
entries are tried again with the next write; entries beyond the queue's bound are dropped and
counted (``clarify_reach_dropped_total``). ``housekeep``, one of the worker's chores, writes
what is queued, recomputes ``clarify_unreachable_people`` (``bot.reach.gauges``, every few
minutes) and removes the entries older than the retention.

``clarify_time_to_bound_seconds`` is observed once per question as its bound entry passes,
from its first card: the one this recorder saw (the first-card times are kept in memory, at
most ``FIRST_CARDS_LIMIT`` questions, the oldest forgotten first), else the one the log holds
(``ReachLog.first_asked``: another replica sent it, or this process before a restart). That
look-up happens in the background write path, after the write (never in ``seen``, never on a
delivery's path), at most ``LOOKUPS_LIMIT`` waiting; one that fails is logged (value-free) and
counted (``clarify_reach_write_failures_total``) and tried again with the next write. A
question whose first card the log does not hold either is not observed (the report has it
where its entries are).
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import OrderedDict, deque
from datetime import datetime, timedelta

import structlog

from bot.audit import AuditEvent
from bot.clock import Clock
from bot.metrics import REGISTRY
from bot.reach.causes import FIXES
from bot.reach.gauges import UnreachableGauge
from bot.reach.log import ASKING, CAUSE_LIMIT, NONE, ZONE_LIMIT, Kind, ReachEntry, ReachLog

log = structlog.get_logger("clarify.reach")

QUEUE_LIMIT = 10_000
FIRST_CARDS_LIMIT = 50_000
LOOKUPS_LIMIT = 1_000  # bound entries waiting for their first card's look-up in the log
EXPIRE_EVERY = timedelta(hours=1)
# the audit event types the record keeps, and as what
KINDS: dict[str, Kind] = {
    "delivery": Kind.ASKED,
    "reminder_sent": Kind.REMINDED,
    "digest_sent": Kind.DIGESTED,
    "skipped": Kind.SKIPPED,
    "escalation_failed": Kind.SKIPPED,  # the steward could not be reached
    "steward_unreachable": Kind.SKIPPED,
    "delivery_failed": Kind.SKIPPED,  # a digest refused
    "answer_forwarded": Kind.ANSWERED,
    "escalated": Kind.ESCALATED,
    "dead_letter_reported": Kind.DEAD_LETTERED,
}


def entries_of(event: AuditEvent) -> list[ReachEntry]:
    """The entries an event stands for: none for an event without its question's facts, a
    person, or a kind the record keeps; an answer that bound its question is two (answered,
    bound); a superseded answer none."""
    kind = KINDS.get(event.type)
    facts = event.facts
    if kind is None or facts is None or not event.person_id:
        return []
    if kind is Kind.ANSWERED and event.extra.get("superseded") == "true":
        return []
    kinds = [kind, Kind.BOUND] if kind is Kind.ANSWERED and facts.bound else [kind]
    cause = facts.cause[:CAUSE_LIMIT] if facts.cause else None
    group = facts.cause_group if facts.cause_group in FIXES else None
    return [ReachEntry(
        entry_id=_entry_id(event.event_id, each), at=event.at, tenant=facts.tenant,
        workspace=facts.workspace, platform=event.channel or facts.platform or NONE,
        person_id=event.person_id, clarification_id=event.clarification_id, kind=each,
        severity=facts.severity,
        reason_code=event.reason_code.value if event.reason_code is not None else None,
        cause=cause if each is Kind.SKIPPED else None,
        zone=facts.zone if each in ASKING and facts.zone and len(facts.zone) <= ZONE_LIMIT
        else None,
        cause_group=group if each is Kind.SKIPPED else None,
    ) for each in kinds]


def _entry_id(event_id: str, kind: Kind) -> str:
    # the event id is the same for a replayed event: so is the entry's
    # (the event id names no one: a keyed hash of its parts)
    return f"{kind.value}.{hashlib.sha256(f'{event_id}|{kind.value}'.encode()).hexdigest()[:40]}"


class ReachRecorder:
    def __init__(self, reach: ReachLog, *, clock: Clock, retention: timedelta,
                 queue_limit: int = QUEUE_LIMIT) -> None:
        self.reach = reach
        self.clock = clock
        self.retention = retention
        self._queue: deque[ReachEntry] = deque()
        self._limit = queue_limit
        self._task: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()
        self._expired_at: datetime | None = None
        self.problem: str | None = None  # what ``check`` found the log lacks (value-free)
        self._failing = False  # the last write failed: ``housekeep`` asks the log why
        self.unreachable = UnreachableGauge(reach, clock=clock)
        # question -> its first card's time, oldest first
        self._first_cards: OrderedDict[str, datetime] = OrderedDict()
        # questions whose time to bound answer was observed (a replay is not observed again)
        self._observed: OrderedDict[str, None] = OrderedDict()
        # bound entries whose first card this process did not see: looked up in the log
        self._unseen: deque[ReachEntry] = deque()

    def seen(self, event: AuditEvent) -> None:
        found = entries_of(event)
        if not found:
            return
        for entry in found:
            self._time(entry)
        room = self._limit - len(self._queue)
        if room < len(found):
            REGISTRY.inc("clarify_reach_dropped_total", amount=len(found) - max(room, 0))
            log.warning("reach.queue_full", dropped=len(found) - max(room, 0))
            found = found[:max(room, 0)]
        self._queue.extend(found)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # written by the next flush
        if self._task is None or self._task.done():
            self._task = loop.create_task(self._drain())

    def _time(self, entry: ReachEntry) -> None:
        question = entry.clarification_id
        if entry.kind in (Kind.ASKED, Kind.DIGESTED):
            if question not in self._first_cards:
                self._first_cards[question] = entry.at
                if len(self._first_cards) > FIRST_CARDS_LIMIT:
                    self._first_cards.popitem(last=False)
        elif entry.kind is Kind.BOUND and question not in self._observed:
            first = self._first_cards.pop(question, None)
            if first is not None:
                self._observe(entry, first)
            elif len(self._unseen) < LOOKUPS_LIMIT:
                self._unseen.append(entry)  # the write path looks its first card up

    def _observe(self, bound: ReachEntry, first: datetime) -> None:
        self._observed[bound.clarification_id] = None
        if len(self._observed) > FIRST_CARDS_LIMIT:
            self._observed.popitem(last=False)
        REGISTRY.observe("clarify_time_to_bound_seconds",
                         max((bound.at - first).total_seconds(), 0.0), severity=bound.severity)

    async def _drain(self) -> None:
        await self.flush()

    async def flush(self) -> int:
        """Write what is queued, then look up the first cards this process did not see of the
        questions bound meanwhile; returns how many entries were new. Never raises."""
        added = await self._write()
        if not self._failing:
            await self._look_up_first_cards()
        return added

    async def _look_up_first_cards(self) -> None:
        """``clarify_time_to_bound_seconds`` of the bound questions whose first card another
        process sent (``ReachLog.first_asked``). A look-up that fails stops here: the rest
        wait for the next write."""
        while self._unseen:
            bound = self._unseen.popleft()
            if bound.clarification_id in self._observed:
                continue  # a replay of it, meanwhile
            try:
                first = await self.reach.first_asked(bound.clarification_id)
            except Exception as exc:  # noqa: BLE001 (recording never fails a delivery)
                REGISTRY.inc("clarify_reach_write_failures_total")
                log.warning("reach.first_card_unread", error=type(exc).__name__,
                            waiting=len(self._unseen) + 1)
                self._unseen.appendleft(bound)
                return
            if first is not None and bound.clarification_id not in self._observed:
                self._observe(bound, first)

    async def _write(self) -> int:
        async with self._lock:
            if not self._queue:
                return 0
            batch = list(self._queue)
            self._queue.clear()
            try:
                added = await self.reach.add(batch)
                self._failing = False
                return added
            except Exception as exc:  # noqa: BLE001 (recording never fails a delivery)
                self._failing = True
                REGISTRY.inc("clarify_reach_write_failures_total")
                log.warning("reach.write_failed", error=type(exc).__name__, entries=len(batch))
                keep = batch[-(self._limit - len(self._queue)):] if self._limit > len(
                    self._queue) else []
                self._queue.extendleft(reversed(keep))
                return 0

    async def check(self) -> str | None:
        """Ask the log whether it can be written (serve's start-up, and after a failed write):
        a missing table is logged as an error naming its fix and kept for ``/readyz``
        (``status``). Never raises."""
        try:
            self.problem = await self.reach.missing()
        except Exception as exc:  # noqa: BLE001 (unreachable: the writes say so themselves)
            log.warning("reach.check_failed", error=type(exc).__name__)
            return self.problem
        if self.problem is not None:
            log.error("reach.not_ready", problem=self.problem,
                      setting="CLARIFY_BOT_DATABASE_URL")
        return self.problem

    def status(self) -> dict[str, object]:
        """What ``/readyz`` shows of the reach record beside its checks (it does not make the
        bot unready: delivery goes on without the record)."""
        return {"reach": "ok" if self.problem is None else self.problem}

    async def housekeep(self) -> None:
        """The worker's chore: write what is queued (asking the log why, when that fails),
        recompute the unreachable people's gauges (every few minutes), and
        (hourly) forget what is past the retention."""
        await self.flush()
        if self._failing or self.problem is not None:
            await self.check()
        await self.unreachable.refresh()
        now = self.clock.now()
        if self._expired_at is not None and now - self._expired_at < EXPIRE_EVERY:
            return
        self._expired_at = now
        try:
            gone = await self.reach.expire(now - self.retention)
        except Exception as exc:  # noqa: BLE001 (housekeeping goes on)
            REGISTRY.inc("clarify_reach_write_failures_total")
            log.warning("reach.expire_failed", error=type(exc).__name__)
            return
        if gone:
            log.info("reach.expired", entries=gone)

    async def aclose(self) -> None:
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)
        await self.flush()
        await self.reach.aclose()

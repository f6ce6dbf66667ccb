"""The reference core's state and what every endpoint shares: records, auth, events, expiry.

``CoreState`` holds the directory, the clarification records, the fact store and the job queue;
reading its clock reaps expired leases first, so moving the clock is all a test needs to make
escalation windows pass. The endpoints are added on top by ``devcore.clarifications`` and
``devcore.core``.
"""

from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Protocol

from bot.core.errors import ErrorCode
from bot.core.models import (
    AskedAlias,
    Clarification,
    ClarificationEvent,
    ClarificationState,
    ClarificationSummary,
    EventReport,
    ReasonCode,
    SkipEntry,
)
from devcore.book import AnswerBook
from devcore.directory import Directory, Token
from devcore.facts import FactStore
from devcore.faults import CoreFault
from devcore.jobs import JobQueue, JobRecord
from devcore.paging import MAX_LIMIT


class MovableClock(Protocol):
    def now(self) -> datetime: ...
    def advance(self, delta: timedelta | float) -> datetime: ...
    def set(self, when: datetime) -> datetime: ...


@dataclass(slots=True)
class Record:
    model: Clarification
    seq: int  # creation order: the key of the clarification list's keyset paging
    dedup_key: tuple[object, ...]
    book: AnswerBook = field(default_factory=AnswerBook)
    event_ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    # the candidates' delivery identities as the core resolves them (spec changelog v0.9),
    # worked out on the first read by the bot and kept: the ranking does not change (a
    # directory changed afterwards leaves them as they were: docs/reference-core.md)
    asked_aliases: list[AskedAlias] | None = None


class CoreState:
    """The core's state, its clock, token checks and the audit events every endpoint writes."""

    def __init__(self, *, clock: MovableClock, directory: Directory | None = None,
                 largest_page: int = MAX_LIMIT) -> None:
        self.clock = clock
        # the most items a page of any list holds, whatever ``limit`` asks (production cores
        # cap their pages; 1 makes every walk of a list follow its cursors page by page)
        self.largest_page = largest_page
        self.reset(directory or Directory())

    def reset(self, directory: Directory) -> None:
        """Forget everything and start from this directory (a loaded scenario)."""
        self.directory = directory
        self.facts = FactStore()
        self.records: dict[str, Record] = {}
        self.dedup: dict[tuple[object, ...], str] = {}
        self.jobs = JobQueue(on_expired=self._on_expired, on_dead_letter=self._on_dead_letter)
        self._ids = itertools.count(1)
        # (end of the escalation window, job seq, job id, the attempt whose window it is): a
        # lease that ran out after a delivery starts the wait, and the window has run out only
        # when that wait (the backoff, whose base is the window) is over
        self._windows: list[tuple[datetime, int, str, int]] = []

    def now(self) -> datetime:
        now = self.clock.now()
        self.jobs.reap(now)
        while self._windows and self._windows[0][0] <= now:
            _, _, job_id, attempt = heapq.heappop(self._windows)
            self._window_ran_out(self.jobs.jobs[job_id], attempt)
        return now

    # ---------------------------------------------------------------- auth

    def authenticate(self, bearer: str | None) -> Token:
        token = self.directory.tokens.get(bearer or "")
        if token is None:
            raise CoreFault(ErrorCode.UNAUTHENTICATED)
        return token

    def is_dev(self, bearer: str | None) -> bool:
        return bool(bearer) and bearer in self.directory.dev_tokens

    # ---------------------------------------------------------------- events

    def _event(
        self,
        c: Clarification,
        type_: str,
        message: str,
        *,
        person_id: str | None = None,
        actor: str | None = None,
        attempt: int | None = None,
        reason_code: ReasonCode | None = None,
        event_id: str | None = None,
        report: EventReport | None = None,
    ) -> ClarificationEvent:
        record = self.records[c.id]
        event = ClarificationEvent(
            event_id=event_id or f"ev-{next(record.event_ids):05d}",
            type=type_,
            at=self.clock.now(),
            actor=actor,
            person_id=person_id,
            attempt=attempt,
            reason_code=reason_code,
            reason_codes=report.reason_codes if report else [],
            skips=[SkipEntry(person_id=s.person_id, reason_code=s.reason_code)
                   for s in (report.skips if report else [])],
            message=message,
        )
        c.events.append(event)
        return event

    def _on_expired(self, job: JobRecord, ran_out: int, ended: datetime) -> None:
        """A lease ran out (at ``ended``): the candidate's window goes on until the job is due
        again (spec changelog v0.9: the backoff is the window). A decline (no backoff) ends no
        window."""
        if job.visible_at > ended:
            heapq.heappush(self._windows, (job.visible_at, job.seq, job.id, ran_out))

    def _window_ran_out(self, job: JobRecord, ran_out: int) -> None:
        """Spec §5: ``expired`` = the escalation window exhausted for the current candidate."""
        record = self.records.get(job.payload.clarification_id)
        if record is None or job.attempts != ran_out + 1:
            return  # the job moved on otherwise meanwhile
        c = record.model
        ranking = job.payload.ranking
        person = ranking[ran_out] if ran_out < len(ranking) else c.workspace.steward_id
        if c.state is ClarificationState.OPEN:
            c.state = ClarificationState.EXPIRED
            c.updated_at = self.clock.now()
        self._event(
            c,
            "expired",
            "The escalation window ran out for this attempt.",
            person_id=person,
            attempt=ran_out,
        )

    def _on_dead_letter(self, job: JobRecord, at: datetime) -> None:
        record = self.records.get(job.payload.clarification_id)
        if record is None:
            return
        c = record.model
        if c.state is not ClarificationState.ANSWERED:
            c.state = ClarificationState.DEAD_LETTERED
            c.updated_at = at
        self._event(
            c,
            "dead_lettered",
            "The ranking is exhausted; listed in the steward digest.",
            attempt=job.attempts,
        )

    # ---------------------------------------------------------------- lookups

    def _record(self, token: Token, clarification_id: str) -> Record:
        record = self.records.get(clarification_id)
        if record is None or record.model.tenant_id not in token.tenants:
            raise CoreFault(ErrorCode.CLARIFICATION_NOT_FOUND)
        return record


def summary(c: Clarification) -> ClarificationSummary:
    """The list view of a clarification, unredacted (callers redact for the reader)."""
    return ClarificationSummary(
        id=c.id,
        tenant_id=c.tenant_id,
        workspace_id=c.workspace.workspace_id,
        document_id=c.document.document_id,
        kind=c.kind,
        severity=c.severity,
        state=c.state,
        quorum_state=c.quorum.state,
        document_title=c.document.title,
        created_at=c.created_at,
        updated_at=c.updated_at,
    )

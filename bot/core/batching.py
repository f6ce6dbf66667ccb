"""One job's core traffic in a few calls: its people read together, its reports sent together.

Handling one ``clarify:`` job call by call costs about seven core calls: a read and a reverse
resolve per person routed (candidates, the steward, names on a steward's card), a delivery report
per card and an event report per skip or notice. A job's ``JobScope`` is passed explicitly, as
``scope=``, from the handler down to every call that reads a person or reports: given one,
``CoreClient`` answers ``get_person`` from the scope's one ``POST /v1/people/batch`` (any id it does
not hold still goes to the core), and holds ``report_delivery`` and ``report_event`` until ``flush``
sends them in one ``POST /v1/reports``. Without one (digests, answers, the demo, work a job starts
in the background) every call goes out on its own. What the scope holds about chat aliases (the
batch's resolutions, the clarification's ``askedAliases``, the records read) is weighed by
``bot.engine.aliases`` before any ``POST /v1/people/resolve``.

Jobs running side by side share those calls too (``Gathered``): the people reads of jobs that
start within a few milliseconds of each other go out as one call per tenant, and so do the
reports of jobs that end close together.

A scope lives for one job: person records are as fresh as the job (one job's routing reads each
person once either way), and a report reaches the core at most one job's handling time later
than a report sent on its own. Each report stays idempotent on its own id, so a job retried
after a crash reports again safely.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable, Iterator
from dataclasses import dataclass, field
from typing import Any

import structlog

from bot.core.errors import CoreAPIError, ErrorCode, exception_for, message_of, status_of
from bot.core.models import (
    AskedAlias,
    DeliveryReportItem,
    EventReportItem,
    PeopleBatch,
    Person,
    PersonEntry,
    ReportBatch,
)
from bot.core.tolerance import tolerated

log = structlog.get_logger("bot.core.batching")
REPORTS_PER_CALL = 200  # the contract's limit of each list in one batch
PEOPLE_PER_CALL = 100
LINGER_SECONDS = 0.005  # how long a call waits for others to join it


@dataclass
class JobScope:
    """What one job has read and has yet to report."""

    tenant_id: str | None = None
    people: dict[str, PersonEntry] = field(default_factory=dict)
    deliveries: list[DeliveryReportItem] = field(default_factory=list)
    events: list[EventReportItem] = field(default_factory=list)
    # the clarification's askedAliases: what the core says each candidate's chat identities
    # map back to (with the batch's resolutions and the records read, ``bot.engine.aliases``
    # weighs them)
    asked: list[AskedAlias] = field(default_factory=list)
    # the cards this job marked in the store as not yet reported (``bot.engine.delivery``), by
    # delivery id, and how to clear those marks once the core has their reports (a worker
    # killed before then leaves them, for ``bot.engine.unreported``)
    marked: dict[str, Hashable] = field(default_factory=dict)
    clear: Callable[[list[Any]], Awaitable[None]] | None = None

    # ---------------------------------------------------------------- people

    def learn(self, tenant_id: str, batch: PeopleBatch) -> None:
        self.tenant_id = tenant_id
        for entry in batch.people:
            if entry.person is None and entry.error_code is None:
                # says nothing of the person: not kept, so they are read on their own route
                # rather than taken as not found (a turn skipped for nothing)
                tolerated("bad_entry", "PersonEntry")
                log.warning("core.entries_dropped", answer="PeopleBatch", model="PersonEntry",
                            count=1, fields=["person", "errorCode"])
                continue
            self.people[entry.person_id] = entry

    def remember(self, person_id: str, tenant_id: str | None, person: Person | None,
                 error_code: str | None) -> None:
        """A person read on its own (or the code the read answered), for the rest of the job."""
        if tenant_id is not None and tenant_id == self.tenant_id \
                and person_id not in self.people:
            self.people[person_id] = PersonEntry(person_id=person_id, person=person,
                                                 error_code=error_code)

    def vouch(self, tenant_id: str, aliases: list[AskedAlias]) -> None:
        if tenant_id == self.tenant_id:
            self.asked = list(aliases)

    def person(self, person_id: str, tenant_id: str | None) -> Person | None:
        """The person read in the batch (None: not held, ask the core); raises what the single
        read would have raised for an id the core refused. A read that names no tenant (display
        names on a steward's card) is answered from the job's tenant."""
        if tenant_id not in (None, self.tenant_id):
            return None
        entry = self.people.get(person_id)
        if entry is None:
            return None
        if entry.person is None:
            raise _error(entry.error_code or "PERSON_NOT_FOUND")
        return entry.person

    # ---------------------------------------------------------------- reports

    def mark(self, delivery_id: str, key: Hashable,
             clear: Callable[[list[Any]], Awaitable[None]]) -> None:
        """The delivery report just held was marked unreported in the store under ``key``."""
        self.marked[delivery_id] = key
        self.clear = clear

    async def reported(self, delivery_ids: set[str]) -> None:
        """The core has these reports: their marks are cleared. A store that cannot be reached
        keeps them (the card is looked at again later, and found on the core's trail)."""
        keys = [self.marked.pop(d) for d in delivery_ids if d in self.marked]
        if not keys or self.clear is None:
            return
        try:
            await self.clear(keys)
        except Exception as exc:  # the store's own errors, which this layer does not name
            log.warning("core.report_marks_kept", error=type(exc).__name__)

    def chunks(self) -> Iterator[ReportBatch]:
        deliveries, events = self.deliveries, self.events
        self.deliveries, self.events = [], []
        while deliveries or events:
            yield ReportBatch(deliveries=deliveries[:REPORTS_PER_CALL],
                              events=events[:REPORTS_PER_CALL])
            deliveries, events = deliveries[REPORTS_PER_CALL:], events[REPORTS_PER_CALL:]


class Gathered[K: Hashable, T]:
    """Requests made within ``linger`` seconds of the first, per key, sent by one ``send``; each
    caller waits for it and gets its error, if any (the store's outbox accepts the same way)."""

    def __init__(self, send: Callable[[K, list[T]], Awaitable[None]], *,
                 linger: float = LINGER_SECONDS) -> None:
        self._send = send
        self._linger = linger
        self._waiting: dict[K, list[tuple[T, asyncio.Future[None]]]] = {}
        self._sending: set[asyncio.Task[None]] = set()

    async def __call__(self, key: K, item: T, *, linger: float | None = None) -> None:
        """``linger``: this group's wait, when this request opens it (default: the one given
        at construction)."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        group = self._waiting.setdefault(key, [])
        group.append((item, done))
        if len(group) == 1:
            loop.call_later(self._linger if linger is None else linger, self._go, key)
        await done

    def _go(self, key: K) -> None:
        group = self._waiting.pop(key, [])
        task = asyncio.ensure_future(self._run(key, group))
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)

    async def _run(self, key: K, group: list[tuple[T, asyncio.Future[None]]]) -> None:
        error: BaseException | None = None
        try:
            await self._send(key, [item for item, _ in group])
        except Exception as exc:  # every caller gets it; none is left waiting
            error = exc
        for _, done in group:
            if done.done():
                continue  # the caller went away
            if error is None:
                done.set_result(None)
            else:
                done.set_exception(error)


def _error(code: str) -> CoreAPIError:
    """The exception the single route would have raised for ``code``."""
    known = ErrorCode(code) if code in ErrorCode else ErrorCode.PERSON_NOT_FOUND
    status = status_of(known)
    return exception_for(status=status, code=known.value)(
        status=status, code=known.value, message=message_of(known))

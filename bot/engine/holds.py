"""Holds: a job kept back, its lease alive, instead of spending a person's turn.

A job is held for a person's working hours (``JobHandler.hold``, docs/delivery.md "Working
hours"), or because an answer it needs did not read or was refused for now (docs/core-contract.md,
"Nothing unreadable is silent"). ``Hold`` is the record the store keeps for it
(``Store.hold_put``); ``Holds`` writes the record when the handler decides to hold. What happens
to a hold afterwards (its lease extended, the job handled when due, the hold dropped when its
lease is lost) is ``bot.engine.held``'s, flushed from the worker's housekeeping.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta

import structlog

from bot.clock import Clock
from bot.core.models import LeasedJob
from bot.metrics import REGISTRY
from bot.store.holds import HeldJobs

# the handler's log lines: the hold is its decision
log = structlog.get_logger("clarify.handler")

# a job held for working hours keeps its lease this long per heartbeat (the core's maximum),
# and a worker looks at it again this much before the lease would end (docs/delivery.md)
HOLD_LEASE_SECONDS = 3600
HOLD_MARGIN_SECONDS = 1200
# a job held because an answer it needs did not read is looked at (read again) this often, well
# inside the held lease (docs/core-contract.md, "Nothing unreadable is silent")
UNREAD_LOOK_SECONDS = 600
# a job whose read the core refused for now (a 429, a 5xx or no answer, past the client's own
# retries) is held the same way and read again after this, doubled per refusal in a row, or
# after the core's Retry-After
TROUBLE_LOOK_SECONDS = 5
# a turn whose held lease could not be carried on because the store lost its data
# (bot.process.storewatch): "clarification id|attempt" -> "1", so the person's skip when the
# core hands the job again says so (kept as long as a delivery slot)
LOST_TURN = "store-lost-turn"
LOST_TURN_TTL_SECONDS = 8 * 24 * 3600
# when the store last lost its data (bot.process.storewatch): "at" -> ISO time. A turn the core
# let expire within a held lease's life after it, with nobody asked, was held in the lost store
# (a core that does not list its jobs leaves no other trace of it)
LOST_AT = "store-lost-at"


@dataclass(frozen=True, slots=True)
class Hold:
    """A job held for a person's working hours, or because an answer it needs did not read, as
    the store keeps it (``Store.hold_put``). ``job`` is None for a polled job that did not read
    itself: then ``named`` (its id and lease token) is all the bot holds it by."""

    job: LeasedJob | None
    due: datetime
    named: tuple[str, str] | None = None
    troubles: int = 0  # how many times in a row the core refused the job's reads for now

    @property
    def lease_token(self) -> str:
        if self.job is not None:
            return self.job.lease_token
        assert self.named is not None
        return self.named[1]

    def dumps(self) -> str:
        data: dict[str, object] = {
            "job": None if self.job is None else self.job.model_dump(mode="json", by_alias=True),
            "due": self.due.isoformat()}
        if self.named is not None:
            data["named"] = list(self.named)
        if self.troubles:
            data["troubles"] = self.troubles
        return json.dumps(data)

    @classmethod
    def loads(cls, text: str) -> Hold:
        data = json.loads(text)
        named = data.get("named")
        return cls(job=None if data["job"] is None else LeasedJob.model_validate(data["job"]),
                   due=datetime.fromisoformat(data["due"]),
                   named=(named[0], named[1]) if named else None,
                   troubles=int(data.get("troubles") or 0))

    def look_at(self, lease_expires_at: datetime | None, now: datetime) -> datetime:
        """When a worker should look at the hold next: at ``due``, or before the lease ends
        (``HOLD_MARGIN_SECONDS`` before, or half the time left when the lease is shorter: a
        core without the heartbeat-lease extension extends by the lease's own duration)."""
        if lease_expires_at is None:
            return self.due
        left = lease_expires_at - now
        margin = min(timedelta(seconds=HOLD_MARGIN_SECONDS), left / 2)
        return min(self.due, lease_expires_at - margin)


def trouble_wait(troubles: int, retry_after: float | None) -> float:
    """Seconds before a job whose reads the core refused ``troubles`` times in a row is read
    again: ``TROUBLE_LOOK_SECONDS`` doubled per refusal (5, 10, 20 … seconds), never before the
    core's Retry-After and never later than ``UNREAD_LOOK_SECONDS``."""
    backoff = TROUBLE_LOOK_SECONDS * 2 ** min(troubles - 1, 16)
    return min(max(retry_after or 0.0, backoff), UNREAD_LOOK_SECONDS)


@dataclass
class Holds:
    """Where the handler's holds are written: each kept in the store at once, so that a worker
    killed from then on leaves it to any other (``bot.engine.held.HoldKeeper``)."""

    store: HeldJobs
    clock: Clock

    async def for_hours(self, job: LeasedJob, due: datetime) -> None:
        """Held until ``due`` (the person's next working hour): nothing is sent and no attempt
        is spent, so the escalation window starts when the card goes out."""
        await self.store.hold_put(job.id, Hold(job, due).dumps(), at=self.clock.now())
        REGISTRY.inc("clarify_jobs_held_total")
        log.info("handler.held_for_hours", due=due.isoformat())

    async def unread(self, job: LeasedJob, *, read: str, operation: str,
                     fields: list[str]) -> None:
        """A read the job needs answered something the bot cannot read: held, read again every
        ``UNREAD_LOOK_SECONDS`` until it reads."""
        REGISTRY.inc("clarify_jobs_unreadable_total", read=read, action="held")
        due = self.clock.now() + timedelta(seconds=UNREAD_LOOK_SECONDS)
        log.warning("handler.held_unreadable", job_id=job.id, read=read,
                    operation=operation, fields=fields, again=due.isoformat())
        await self.store.hold_put(job.id, Hold(job, due).dumps(), at=self.clock.now())

    async def in_trouble(self, job: LeasedJob, *, read: str, operation: str, error: str,
                         retry_after: float | None) -> None:
        """A read the job needs was refused for now: held, read again after ``trouble_wait``
        (the refusals in a row counted on the hold)."""
        earlier = await self.store.hold_text(job.id)
        troubles = Hold.loads(earlier).troubles + 1 if earlier is not None else 1
        due = self.clock.now() + timedelta(seconds=trouble_wait(troubles, retry_after))
        log.warning("handler.held_core_trouble", job_id=job.id, read=read,
                    operation=operation, error=error, again=due.isoformat(),
                    troubles=troubles)
        await self.store.hold_put(job.id, Hold(job, due, troubles=troubles).dumps(),
                                  at=self.clock.now())

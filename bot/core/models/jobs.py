"""Leased ``clarify:`` jobs: polling, heartbeats, in-lease advance, completion and listing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from pydantic import AwareDatetime, Field, PrivateAttr, model_validator

from bot.core.models.enums import (
    JobState,
    ReasonCode,
)
from bot.core.models.wire import (
    RequestModel,
    ShortText,
    WireModel,
    additive,
    extension_field,
    lenient,
    tolerant_items,
)

# the extensions a request field of this module belongs to (bot.core.extensions names them)
HEARTBEAT_LEASE = "heartbeat-lease"
ADVANCE_ATTEMPT = "advance-attempt"


class JobPayload(WireModel):
    clarification_id: str = Field(min_length=1)
    ranking: list[str]
    attempts: int | None = additive(ge=0, description=(
        "The job's attempts, where a core keeps them in the payload (the spec's changelog names "
        "the field JobPayload.attempts): read when the job itself leaves attempts out."))


class PollRequest(RequestModel):
    kinds: list[Annotated[str, Field(min_length=1, max_length=64)]] = Field(min_length=1)
    max_jobs: int = Field(default=1, ge=1, le=100)
    lease_seconds: int = Field(default=60, ge=5, le=3600)


class LeasedJob(WireModel):
    """A leased job. ``attempts`` (the spec calls it additive) may be left out: then the
    payload's is read, and without that the bot derives the turn from the clarification's
    trail before it asks anyone (docs/core-contract.md, "A job without attempts");
    ``maxAttempts`` left out is the spec's ``len(ranking) + 1``."""

    id: str = Field(min_length=1)
    kind: str = ""
    payload: JobPayload
    attempts: int | None = Field(default=None, ge=0, description=(
        "0-based; attempt N asks ranking[N]. Left out: payload.attempts, else the bot derives "
        "it from the clarification's trail."))
    max_attempts: int = Field(default=0, description="Left out: len(ranking) + 1 (the spec's).")
    lease_token: str = Field(min_length=1)
    lease_expires_at: AwareDatetime
    visible_at: AwareDatetime | None = additive(description=(
        "When the job became available to lease: created, or visible again after a retry's "
        "backoff. Optional: a core that leaves it out still conforms; the bot then reports no "
        "job lag."))

    @model_validator(mode="after")
    def _derive(self) -> LeasedJob:
        if self.attempts is None and self.payload.attempts is not None:
            self.attempts = self.payload.attempts
        if "max_attempts" not in self.model_fields_set:
            self.max_attempts = len(self.payload.ranking) + 1
        return self

    @property
    def turn(self) -> int:
        """The attempt this lease is for, once known (``attempts``; a job whose core left it out
        gets it from ``with_turn`` before it is handled)."""
        if self.attempts is None:
            raise ValueError("the job's attempt is not known yet")
        return self.attempts

    def with_turn(self, attempts: int) -> LeasedJob:
        """The job at ``attempts``, derived by the bot (the core left it out)."""
        return self.model_copy(update={"attempts": attempts})


@dataclass(frozen=True, slots=True)
class UnreadJob:
    """A polled job the reader dropped: its id and lease token where those still read (then the
    worker holds the job rather than let its lease spend a turn), and the places in it that did
    not read (schema paths, never values)."""

    id: str | None
    lease_token: str | None
    fields: tuple[str, ...] = ()

    @property
    def named(self) -> bool:
        return bool(self.id and self.lease_token)


class PollResponse(WireModel):
    # a job that does not parse is dropped (counted, logged) and handed to the worker as an
    # ``UnreadJob``; the rest are handled
    jobs: Annotated[list[LeasedJob], tolerant_items(LeasedJob)]
    _unread: list[UnreadJob] = PrivateAttr(default_factory=list)

    @property
    def unread(self) -> list[UnreadJob]:
        """The jobs of this poll the reader could not read (``CoreClient.poll_jobs``)."""
        return self._unread


class HeartbeatRequest(RequestModel):
    lease_token: ShortText
    lease_seconds: int | None = extension_field(HEARTBEAT_LEASE, ge=5, le=3600, description=(
        "Extend from now by this many seconds, which become the lease's duration; absent: by "
        "the lease's own duration (the leaseSeconds it was polled or last extended with)."))


class AdvanceRequest(RequestModel):
    """Skip forward inside the lease: set ``attempts`` to ``attempt`` without a backoff.

    Idempotent: advancing to the attempt the job is already at is a no-op. Without ``attempt``
    (the baseline's advance, or a core that does not offer the extension) ``attempts`` rises by
    one, and a resent advance would rise twice: the client never resends that one blindly.
    """

    lease_token: ShortText
    attempt: int | None = extension_field(ADVANCE_ATTEMPT, ge=1, description=(
        "The attempt to skip forward to (idempotent); absent: the next one."))
    reason_code: ReasonCode | None = extension_field(ADVANCE_ATTEMPT)


class ExpediteRequest(RequestModel):
    """The turn of the candidate asked at ``attempt`` is over before its window (they declined):
    the job's next turn starts now rather than after the backoff. No lease is needed, since the
    job is usually waiting out its backoff when a person declines.

    Idempotent, and never moves ``attempts``: a job waiting at a later attempt becomes visible
    now; a job still leased at ``attempt`` or before is retried without a backoff when its lease
    ends; a job already past that turn's wait, completed or dead-lettered is left as it is.
    """

    attempt: int = Field(ge=0)
    reason_code: ReasonCode | None = None


class CompleteRequest(RequestModel):
    lease_token: ShortText


class FailRequest(RequestModel):
    lease_token: ShortText
    retryable: bool = True
    reason: Annotated[str, Field(max_length=200, pattern=r"^[A-Za-z0-9_.: -]*$")] = ""


class JobView(WireModel):
    """A job as the lease operations (complete, fail) and the job reads answer it. The baseline
    names its id and where it stands; every field a core may leave out has a default, so an
    acknowledgement the bot does not need to read never fails a job."""

    id: str
    kind: str = additive("")
    # the mark on the whole type: one on a union member is never found by the reader
    state: Annotated[JobState | None, lenient(JobState, JobState.AVAILABLE)] = None
    payload: JobPayload | None = additive()
    attempts: int | None = None
    max_attempts: int | None = None
    visible_at: AwareDatetime | None = additive()
    lease_expires_at: AwareDatetime | None = additive()
    last_error: str | None = additive()
    dead_lettered_at: AwareDatetime | None = additive()


class JobPage(WireModel):
    items: Annotated[list[JobView], tolerant_items(JobView)]
    next_cursor: str | None = None

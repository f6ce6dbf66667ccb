"""Leased ``clarify:`` jobs: polling, heartbeats, in-lease advance, completion and listing."""

from __future__ import annotations

from typing import Annotated

from pydantic import AwareDatetime, Field

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


class PollRequest(RequestModel):
    kinds: list[Annotated[str, Field(min_length=1, max_length=64)]] = Field(min_length=1)
    max_jobs: int = Field(default=1, ge=1, le=100)
    lease_seconds: int = Field(default=60, ge=5, le=3600)


class LeasedJob(WireModel):
    id: str = Field(min_length=1)
    kind: str
    payload: JobPayload
    attempts: int
    max_attempts: int
    lease_token: str
    lease_expires_at: AwareDatetime
    visible_at: AwareDatetime | None = additive(description=(
        "When the job became available to lease: created, or visible again after a retry's "
        "backoff. Optional: a core that leaves it out still conforms; the bot then reports no "
        "job lag."))


class PollResponse(WireModel):
    # a job that does not parse is left to its lease (counted), the rest are handled
    jobs: Annotated[list[LeasedJob], tolerant_items(LeasedJob)]


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
    state: Annotated[JobState, lenient(JobState, JobState.AVAILABLE)] | None = None
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

"""The steward's surface: a clarification's delivery history and erasing a person's attribution.

The attention queue needs no model of its own (it is a ``ClarificationPage``); the history joins
the clarification's job to its events, attempt by attempt, so a steward sees who was asked, who
was skipped and why, without parsing messages; the erasure report says what was tombstoned.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AwareDatetime, Field

from bot.core.models.enums import AttemptOutcome, JobState, ReasonCode, RecordedChannel
from bot.core.models.people import PersonAliases
from bot.core.models.reports import ClarificationEvent
from bot.core.models.wire import Id, RequestModel, WireModel, lenient, tolerant_items

NIL_PERSON = "00000000-0000-0000-0000-000000000000"  # the tombstone of an erased person id


class HistoryAttempt(WireModel):
    """One attempt of the job: attempt N asks ``ranking[N]``; the last asks the steward."""

    attempt: int
    person_id: str | None = Field(default=None, description=(
        "The candidate of this attempt (the steward on the last one); the nil id once erased."))
    steward: bool = Field(default=False, description="The redacted steward escalation attempt.")
    outcome: Annotated[AttemptOutcome, lenient(AttemptOutcome, AttemptOutcome.PENDING)]
    reason_code: Annotated[ReasonCode | None, lenient(ReasonCode, None)] = Field(
        default=None, description="Why it was skipped.")
    channel: Annotated[RecordedChannel | None, lenient(RecordedChannel, None)] = None
    delivered_at: AwareDatetime | None = None
    events: Annotated[list[ClarificationEvent], tolerant_items(ClarificationEvent)] = Field(
        default=[], description="This attempt's events, in the order they happened.")


class DeliveryHistory(WireModel):
    clarification_id: str
    job_id: str | None = Field(default=None, description="Absent for low severity (no job).")
    job_state: Annotated[JobState | None, lenient(JobState, None)] = None
    job_attempts: int = Field(default=0, description="The job's attempts so far.")
    max_attempts: int = 0
    attempts: Annotated[list[HistoryAttempt], tolerant_items(HistoryAttempt)] = []
    events: Annotated[list[ClarificationEvent], tolerant_items(ClarificationEvent)] = Field(
        default=[], description="Every event of the clarification, in order (the attempts' and "
        "the rest).")


class ErasureRequest(RequestModel):
    tenant_id: Id | None = Field(default=None, description=(
        "The key's own tenant when left out; another is 403 TENANT_SCOPE_MISMATCH."))


class ErasureReport(WireModel):
    """What the core tombstoned; every count is 0 when the person's attribution was erased
    before (the call is idempotent)."""

    person_id: str
    tenant_id: str
    clarifications: int = Field(default=0, description=(
        "Clarifications whose attribution changed."))
    asked: int = 0
    responses: int = 0
    deliveries: int = 0
    events: int = 0
    jobs: int = Field(default=0, description="Job payload rankings rewritten.")
    fact_versions: int = Field(default=0, description="Fact provenance entries tombstoned.")
    aliases: PersonAliases = Field(default=PersonAliases(), description=(
        "The person's chat identities, so the caller can erase what it holds under them."))

"""Answers: what a responder sends, what the core records and what it decides.

``Interval`` lives here because an answer is where an interval comes from; the
clarification's bound interval is the answer that bound it.
"""

from __future__ import annotations

from pydantic import AwareDatetime, Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

from bot.core.models.enums import (
    AnswerOutcome,
    BindingStatus,
    Channel,
    ClarificationState,
    QuorumState,
    RecordedChannel,
    Role,
)
from bot.core.models.wire import Id, RequestModel, WireModel


class Interval(WireModel):
    valid_from: AwareDatetime | None = None
    valid_to: AwareDatetime | None = None


class AnswerCustom(WireModel):
    """A free-form answer as recorded: an interval, or only the person's own words."""

    valid_from: str | None = None
    valid_to: str | None = None
    source_text: str | None = None


class AnswerCustomInput(RequestModel):
    """A free-form answer to normalise: ISO dates, or only the person's own words."""

    valid_from: str | None = Field(default=None, max_length=64)
    valid_to: str | None = Field(default=None, max_length=64)
    source_text: str | None = Field(default=None, max_length=2000)


class ResponseRecord(WireModel):
    response_id: str
    responder: str
    rights_at_answer_time: Role
    answer_index: int | None = None
    answer_custom: AnswerCustom | None = None
    interval: Interval
    channel: RecordedChannel
    message_ref: str | None = None
    response_tx: AwareDatetime
    binding_status: BindingStatus
    supersedes: str | None = None
    note: str | None = Field(default=None, description=(
        "The responder's note (a steward's reason for an override); withheld in a redacted "
        "view."))


class AnswerRequest(RequestModel):
    answer_index: int | None = Field(default=None, ge=0)
    answer_custom: AnswerCustomInput | None = None
    responder: Id | None = None
    rights: Role | None = None
    channel: Channel = Field(default=Channel.API, description=(
        "Asserted by the clarify audience only. An API key may omit it or send cli (or api); "
        "its answers are recorded with channel cli."))
    message_ref: str | None = Field(default=None, max_length=500, description=(
        "The chat message answered; clarify audience only (from an API key: 403)."))
    steward_override: bool = False
    request_id: Id | None = Field(
        default=None,
        description="The caller's idempotency key: the same responder sending the same "
        "requestId again gets the first outcome back, even after answering differently since.",
    )
    note: str | None = Field(default=None, min_length=1, max_length=500, description=(
        "A note kept on the response (a steward's reason for an override)."))

    @field_validator("answer_index", mode="before")
    @classmethod
    def _index_not_a_boolean(cls, value: object) -> object:
        # JSON true/false would otherwise be read as 1/0 (pydantic's lax int); 0.0 stays an
        # integer, as JSON Schema's "integer" allows, so the published document is unchanged.
        if isinstance(value, bool):
            raise PydanticCustomError("int_type", "Input should be a valid integer")
        return value

    @model_validator(mode="after")
    def _exactly_one_answer(self) -> AnswerRequest:
        if (self.answer_index is None) == (self.answer_custom is None):
            raise ValueError("exactly one of answerIndex and answerCustom is required")
        return self


class AnswerResult(WireModel):
    outcome: AnswerOutcome
    clarification_id: str
    state: ClarificationState
    quorum_state: QuorumState
    response_id: str
    quorum_satisfied: bool
    quorum_remaining: int
    confirmed_by: list[str] = []
    fact_version_tx: AwareDatetime | None = None
    bound_interval: Interval | None = None
    replayed: bool = False

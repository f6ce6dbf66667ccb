"""Answers: what a responder sends, what the core records and what it decides.

``Interval`` lives here because an answer is where an interval comes from; the
clarification's bound interval is the answer that bound it.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Annotated

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
from bot.core.models.wire import Id, RequestModel, WireModel, additive, extension_field, lenient

ANSWER_REQUEST_ID = "answer-request-id"
ANSWER_NOTE = "answer-note"
ANSWER_ORDER = "answer-order"


class Interval(WireModel):
    valid_from: AwareDatetime | None = None
    valid_to: AwareDatetime | None = None

    @classmethod
    def from_text(cls, valid_from: str | None, valid_to: str | None) -> Interval:
        """A free-form answer's ISO dates or date-times as an interval (unreadable ends open)."""
        return cls(valid_from=_instant(valid_from), valid_to=_instant(valid_to))


def _instant(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        try:
            day = date.fromisoformat(text)
        except ValueError:
            return None
        return datetime(day.year, day.month, day.day, tzinfo=UTC)
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


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
    rights_at_answer_time: Annotated[Role, lenient(Role, Role.VIEWER)]
    answer_index: int | None = None
    answer_custom: AnswerCustom | None = None
    interval: Interval = additive(Interval(), description=(
        "The interval answered; derived from the candidate or the free-form dates when left "
        "out."))
    channel: Annotated[RecordedChannel, lenient(RecordedChannel, RecordedChannel.API)]
    message_ref: str | None = None
    response_tx: AwareDatetime
    # an unknown status counts as no confirmation, and is not taken for an attestation either
    binding_status: Annotated[BindingStatus, lenient(BindingStatus, BindingStatus.UNKNOWN)]
    supersedes: str | None = additive()
    responded_at: AwareDatetime | None = additive(description=(
        "When the responder answered, by the platform's clock (answer-order); a responder's "
        "active response is their latest by this time."))
    superseded_by: str | None = additive(description=(
        "The response of the same responder that replaced this one (answer-order): recorded, "
        "never counted."))
    note: str | None = additive(description=(
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
    request_id: Id | None = extension_field(
        ANSWER_REQUEST_ID,
        description="The caller's idempotency key: the same responder sending the same "
        "requestId again gets the first outcome back, even after answering differently since.",
    )
    note: str | None = extension_field(ANSWER_NOTE, min_length=1, max_length=500, description=(
        "A note kept on the response (a steward's reason for an override)."))
    responded_at: AwareDatetime | None = extension_field(ANSWER_ORDER, description=(
        "When the responder answered, by the platform's own clock (Slack's action_ts, the "
        "Teams activity's timestamp), not when the answer arrived: the responder's active "
        "response is their latest by this time, so an earlier answer that arrives after a "
        "later one is recorded as superseded and never becomes the active one."))
    superseded: bool | None = extension_field(ANSWER_ORDER, description=(
        "The caller holds a later answer of the same responder to this clarification, sent "
        "next: the response is recorded (append-only) but the quorum is not evaluated on it "
        "and it never counts."))

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


# what an outcome implies for the clarification when a core leaves the state out
_STATE_OF = {
    AnswerOutcome.BOUND: ClarificationState.ANSWERED,
    AnswerOutcome.PARTIALLY_CONFIRMED: ClarificationState.PARTIALLY_CONFIRMED,
    AnswerOutcome.ATTESTATION: ClarificationState.ATTESTED,
    AnswerOutcome.CONFLICTED: ClarificationState.CONFLICTED,
    AnswerOutcome.CONFLICTING_ATTESTATION: ClarificationState.ANSWERED,
    AnswerOutcome.STEWARD_OVERRIDE: ClarificationState.ANSWERED,
}
_QUORUM_OF = {
    ClarificationState.ANSWERED: QuorumState.SATISFIED,
    ClarificationState.CONFLICTED: QuorumState.CONFLICTED,
}


class AnswerResult(WireModel):
    """The outcome of an answer. The baseline names the outcome, whether the quorum is satisfied
    and what remains (and the fact version when bound); the state and quorum state are derived
    from the outcome when a core leaves them out."""

    # an outcome the bot does not know is shown as what it surely is: a recorded attestation
    outcome: Annotated[AnswerOutcome, lenient(AnswerOutcome, AnswerOutcome.ATTESTATION)]
    quorum_satisfied: bool = False
    quorum_remaining: int = 0
    fact_version_tx: AwareDatetime | None = None
    clarification_id: str = additive("")
    state: Annotated[ClarificationState, lenient(
        ClarificationState, ClarificationState.OPEN)] = additive(ClarificationState.OPEN)
    quorum_state: Annotated[QuorumState, lenient(
        QuorumState, QuorumState.PENDING)] = additive(QuorumState.PENDING)
    response_id: str = additive("", description="Empty when left out: the responder's latest "
                                "response is theirs.")
    confirmed_by: list[str] = additive([])
    bound_interval: Interval | None = additive()
    replayed: bool = additive(False)
    superseded: bool = additive(False, description=(
        "The response was recorded as superseded (answer-order): an earlier answer than the "
        "responder's active one, or one the caller said a later answer follows; nothing was "
        "evaluated on it."))
    @property
    def confirmers_derived(self) -> bool:
        """The core left confirmedBy out: who confirmed is read from the record afterwards."""
        return "confirmed_by" not in self.model_fields_set

    def confirmers(self, responder: str) -> list[str]:
        """Who confirmed, as far as this result tells: the core's list, or (a core that leaves
        it out) at least the responder whose answer counted."""
        if not self.confirmers_derived:
            return self.confirmed_by
        counts = (AnswerOutcome.BOUND, AnswerOutcome.PARTIALLY_CONFIRMED,
                  AnswerOutcome.STEWARD_OVERRIDE)
        return [responder] if self.outcome in counts else []

    @model_validator(mode="after")
    def _derive(self) -> AnswerResult:
        if "state" not in self.model_fields_set:
            self.state = _STATE_OF.get(self.outcome, ClarificationState.OPEN)
        if "quorum_state" not in self.model_fields_set:
            self.quorum_state = (QuorumState.SATISFIED if self.quorum_satisfied
                                 else _QUORUM_OF.get(self.state, QuorumState.PENDING))
        return self

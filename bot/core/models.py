"""Pydantic models of every body in the core contract (camelCase on the wire).

Requests forbid unknown fields (an old core rejects an additive field loudly instead of
dropping it); responses ignore unknown fields so that the core can grow additively.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Annotated, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

from bot.core.errors import ErrorCode

Id = Annotated[str, Field(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9._:@-]+$")]
ShortText = Annotated[str, Field(max_length=200)]


class WireModel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")

    def wire(self) -> dict[str, object]:
        """The JSON-ready camelCase body, without absent optionals."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class RequestModel(WireModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


# ---------------------------------------------------------------- enums (spec §5, §6)


class Severity(StrEnum):
    LOW = "low"
    NORMAL = "normal"
    HIGH = "high"
    CRITICAL = "critical"

    @property
    def rank(self) -> int:
        return list(Severity).index(self)


class AmbiguityKind(StrEnum):
    RELATIVE_DATE = "relative_date"
    CONFLICTING_DATES = "conflicting_dates"
    UNDATED = "undated"
    LOW_CONFIDENCE_EXTRACTION = "low_confidence_extraction"


class ClarificationState(StrEnum):
    OPEN = "open"
    ATTESTED = "attested"
    PARTIALLY_CONFIRMED = "partially_confirmed"
    ANSWERED = "answered"
    CONFLICTED = "conflicted"
    EXPIRED = "expired"
    DEAD_LETTERED = "dead_lettered"


class QuorumState(StrEnum):
    NOT_REQUIRED = "not_required"
    PENDING = "pending"
    SATISFIED = "satisfied"
    CONFLICTED = "conflicted"


class Role(StrEnum):
    VIEWER = "viewer"
    EDITOR = "editor"
    STEWARD = "steward"

    @property
    def rank(self) -> int:
        return list(Role).index(self)


class BindingStatus(StrEnum):
    BINDING_CANDIDATE = "binding_candidate"
    BOUND = "bound"
    ATTESTATION = "attestation"
    CONFLICTING = "conflicting"
    STEWARD_OVERRIDE = "steward_override"


class Channel(StrEnum):
    SLACK = "slack"
    TEAMS = "teams"
    CLI = "cli"
    API = "api"


class AnswerOutcome(StrEnum):
    BOUND = "bound"
    PARTIALLY_CONFIRMED = "partially_confirmed"
    ATTESTATION = "attestation"
    CONFLICTED = "conflicted"
    CONFLICTING_ATTESTATION = "conflicting_attestation"
    STEWARD_OVERRIDE = "steward_override"


class ReasonCode(StrEnum):
    NO_READ_PERMISSION = "NO_READ_PERMISSION"
    NO_DELIVERY_ALIAS = "NO_DELIVERY_ALIAS"
    ALIAS_AMBIGUOUS = "ALIAS_AMBIGUOUS"
    DELIVERY_FAILED = "DELIVERY_FAILED"
    DAILY_CAP_EXCEEDED = "DAILY_CAP_EXCEEDED"
    DIGESTED = "DIGESTED"
    TENANT_SCOPE_MISMATCH = "TENANT_SCOPE_MISMATCH"
    RESPONDER_NOT_AUTHORISED = "RESPONDER_NOT_AUTHORISED"


class EvidenceClass(StrEnum):
    SOURCE_SPAN = "source_span"
    SYSTEM_EXTRACTION = "system_extraction"
    HUMAN_CLARIFICATION = "human_clarification"
    HUMAN_ATTESTATION = "human_attestation"
    STEWARD_OVERRIDE = "steward_override"
    QUORUM_CONFIRMATION = "quorum_confirmation"


class JobState(StrEnum):
    AVAILABLE = "available"
    LEASED = "leased"
    COMPLETED = "completed"
    DEAD_LETTERED = "dead_lettered"


class DeliveryKind(StrEnum):
    QUESTION = "question"
    DIGEST = "digest"
    STEWARD_ESCALATION = "steward_escalation"
    STEWARD_NOTICE = "steward_notice"


class Audience(StrEnum):
    CLARIFY = "clarify"
    INGEST = "ingest"


# ---------------------------------------------------------------- errors


class ValidationIssue(WireModel):
    """One failed rule: a path of the contract's schema and a code, never the value sent."""

    loc: list[str | int] = Field(
        description="Field path in the schema; an unknown field is reported at its parent.")
    msg: str
    rule: str | None = Field(default=None, description=(
        "required, unknown_field, type, format, enum, pattern, too_small, too_large, too_short, "
        "too_long, exactly_one, policy, reference or invalid."))


class ErrorBody(WireModel):
    code: ErrorCode
    message: str
    status: int
    details: list[ValidationIssue] | None = None


# ---------------------------------------------------------------- jobs


class JobPayload(WireModel):
    clarification_id: Id
    ranking: list[str]


class PollRequest(RequestModel):
    kinds: list[Annotated[str, Field(min_length=1, max_length=64)]] = Field(min_length=1)
    max_jobs: int = Field(default=1, ge=1, le=100)
    lease_seconds: int = Field(default=60, ge=5, le=3600)


class LeasedJob(WireModel):
    id: Id
    kind: str
    payload: JobPayload
    attempts: int
    max_attempts: int
    lease_token: str
    lease_expires_at: AwareDatetime


class PollResponse(WireModel):
    jobs: list[LeasedJob]


class HeartbeatRequest(RequestModel):
    lease_token: ShortText
    lease_seconds: int | None = Field(default=None, ge=5, le=3600, description=(
        "Extend from now by this many seconds, which become the lease's duration; absent: by "
        "the lease's own duration (the leaseSeconds it was polled or last extended with)."))


class AdvanceRequest(RequestModel):
    """Skip forward inside the lease: set ``attempts`` to ``attempt`` without a backoff.

    Idempotent: advancing to the attempt the job is already at is a no-op.
    """

    lease_token: ShortText
    attempt: int = Field(ge=1)
    reason_code: ReasonCode | None = None


class CompleteRequest(RequestModel):
    lease_token: ShortText


class FailRequest(RequestModel):
    lease_token: ShortText
    retryable: bool = True
    reason: Annotated[str, Field(max_length=200, pattern=r"^[A-Za-z0-9_.: -]*$")] = ""


class JobView(WireModel):
    id: Id
    kind: str
    state: JobState
    payload: JobPayload
    attempts: int
    max_attempts: int
    visible_at: AwareDatetime
    lease_expires_at: AwareDatetime | None = None
    last_error: str | None = None
    dead_lettered_at: AwareDatetime | None = None


class JobPage(WireModel):
    items: list[JobView]
    next_cursor: str | None = None


# ---------------------------------------------------------------- clarifications


class Interval(WireModel):
    valid_from: AwareDatetime | None = None
    valid_to: AwareDatetime | None = None


class DateCandidate(WireModel):
    index: int
    label: str = Field(description="Empty in a redacted view.")
    valid_from: AwareDatetime | None = None
    valid_to: AwareDatetime | None = None


class QuorumPolicy(WireModel):
    required_confirmations: int = Field(ge=1)
    required_roles: list[Role]
    allow_steward_override: bool


class QuorumStatus(WireModel):
    state: QuorumState
    required: int
    confirmations: int
    remaining: int
    confirmed_by: list[str] = []


class SourceAcl(WireModel):
    """The source record's read ACL: the allowlist the RBAC gate checks (deny by default)."""

    workspace_id: str
    read_roles: list[Role] = []
    allow_people: list[str] = []
    deny_people: list[str] = []


class SourceDocument(WireModel):
    document_id: str
    title: str = Field(description="Empty in a redacted view.")
    url: str
    source_version_tx: AwareDatetime
    acl: SourceAcl


class WorkspaceRef(WireModel):
    workspace_id: str
    name: str
    steward_id: str | None = None


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
    channel: Channel
    message_ref: str | None = None
    response_tx: AwareDatetime
    binding_status: BindingStatus
    supersedes: str | None = None


class DeliveryRecord(WireModel):
    delivery_id: str
    person_id: str
    channel: Channel
    kind: DeliveryKind
    attempt: int
    message_ref: str | None = None
    delivered_at: AwareDatetime


class SkipEntry(WireModel):
    """One candidate who was not asked, and the reason code why (on escalations, digests)."""

    person_id: str
    reason_code: ReasonCode


class ClarificationEvent(WireModel):
    event_id: str
    type: str
    at: AwareDatetime
    actor: str | None = None
    person_id: str | None = None
    attempt: int | None = None
    reason_code: ReasonCode | None = None
    reason_codes: list[ReasonCode] = []
    skips: list[SkipEntry] = []
    message: str = ""


class ClarificationSummary(WireModel):
    id: Id
    tenant_id: str
    workspace_id: str
    kind: AmbiguityKind
    severity: Severity
    state: ClarificationState
    quorum_state: QuorumState
    document_title: str = Field(description="Empty in a redacted view.")
    created_at: AwareDatetime
    updated_at: AwareDatetime
    redacted: bool = Field(default=False, description=(
        "The caller may not read the source: text taken from the document is withheld."))


class ClarificationPage(WireModel):
    items: list[ClarificationSummary]
    next_cursor: str | None = None


class Clarification(WireModel):
    """Everything delivery needs about one clarification."""

    id: Id
    tenant_id: str
    workspace: WorkspaceRef
    target: str
    kind: AmbiguityKind
    severity: Severity
    state: ClarificationState
    quorum_policy: QuorumPolicy
    quorum: QuorumStatus
    candidates: list[DateCandidate]
    question: str = Field(description="Empty in a redacted view.")
    span_excerpt: str = Field(description="Empty in a redacted view.")
    span_start: int | None = None
    span_end: int | None = None
    document: SourceDocument
    detector_confidence: float
    applied_candidate_confidence: float
    ranking: list[str]
    asked: list[str] = []
    responses: list[ResponseRecord] = []
    deliveries: list[DeliveryRecord] = []
    events: list[ClarificationEvent] = []
    job_id: str | None = None
    bound_interval: Interval | None = None
    bound_fact_version_tx: AwareDatetime | None = None
    created_at: AwareDatetime
    updated_at: AwareDatetime
    redacted: bool = Field(default=False, description=(
        "The caller may not read the source (an API key whose person fails the read check, or "
        "one bound to no person): spanExcerpt, question, document.title and candidate labels "
        "are empty and free-form answers carry no sourceText."))


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


class DeliveryReport(RequestModel):
    """The bot reports one message sent; idempotent on ``deliveryId``."""

    delivery_id: Id
    person_id: Id
    channel: Channel
    kind: DeliveryKind
    attempt: int = Field(ge=0)
    message_ref: str | None = Field(default=None, max_length=500)


class SkipInput(RequestModel):
    """A ``SkipEntry`` as the bot reports it."""

    person_id: Id
    reason_code: ReasonCode


class EventReport(RequestModel):
    """The bot reports a skip, escalation or notice; idempotent on ``eventId``."""

    event_id: Id
    type: Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[a-z_]+$")]
    person_id: Id | None = None
    attempt: int | None = Field(default=None, ge=0)
    reason_code: ReasonCode | None = None
    reason_codes: list[ReasonCode] = Field(
        default=[], max_length=len(ReasonCode),
        description="Every reason code the event stands for (an escalation's or a dead letter's "
        "skip reasons, a skip's own code), each once, sorted.")
    skips: list[SkipInput] = Field(
        default=[], max_length=200,
        description="The candidates the event concerns who were not asked, with the code why.")
    message: Annotated[str, Field(max_length=500)] = ""

    def wire(self) -> dict[str, object]:
        # empty lists stay off the wire: a core that predates them still takes a plain skip
        return {k: v for k, v in super().wire().items() if v != []}


# ---------------------------------------------------------------- people


class SlackIdentity(RequestModel):
    platform: Literal["slack"] = "slack"
    user_id: Id
    team_id: Id | None = None
    enterprise_id: Id | None = None


class TeamsIdentity(RequestModel):
    platform: Literal["teams"] = "teams"
    aad_object_id: Id
    tenant_id: Id


ChatIdentity = Annotated[SlackIdentity | TeamsIdentity, Field(discriminator="platform")]


class SlackAlias(WireModel):
    user_id: str
    team_id: str | None = None
    enterprise_id: str | None = None
    verified: bool = False


class TeamsAlias(WireModel):
    aad_object_id: str
    tenant_id: str
    verified: bool = False


class PersonAliases(WireModel):
    email: str | None = None
    upn: str | None = None
    slack: list[SlackAlias] = []
    teams: list[TeamsAlias] = []


class Membership(WireModel):
    workspace_id: str
    role: Role


class Person(WireModel):
    person_id: str
    tenant_id: str
    display_name: str
    locale: str = "en"
    time_zone: str = "UTC"
    verified_enterprise_identity: bool
    aliases: PersonAliases
    memberships: list[Membership] = []


class ResolveRequest(RequestModel):
    tenant_id: Id
    identity: ChatIdentity


class ResolvedPerson(WireModel):
    person: Person
    verified: bool = Field(description="The chat identity maps to a verified enterprise identity.")


# ---------------------------------------------------------------- facts (bitemporal)


class Provenance(WireModel):
    evidence_class: EvidenceClass
    clarification_id: str | None = None
    source_version_tx: AwareDatetime | None = None
    confirmed_by: list[str] = []


class FactVersion(WireModel):
    logical_id: str
    version_tx: AwareDatetime
    tx_to: AwareDatetime | None = None
    valid_from: AwareDatetime | None = None
    valid_to: AwareDatetime | None = None
    confidence: float
    pending_clarification_id: str | None = None
    provenance: Provenance


class FactHistory(WireModel):
    logical_id: str
    versions: list[FactVersion]


# ---------------------------------------------------------------- development endpoints


class CandidateInput(RequestModel):
    label: Annotated[str, Field(min_length=1, max_length=200)]
    valid_from: AwareDatetime | None = None
    valid_to: AwareDatetime | None = None


class SpanInput(RequestModel):
    start: int = Field(ge=0)
    end: int = Field(ge=0)
    text: Annotated[str, Field(max_length=5000)]


class DocumentInput(RequestModel):
    document_id: Id
    title: Annotated[str, Field(min_length=1, max_length=500)]
    url: Annotated[str, Field(min_length=1, max_length=2000)]
    content_hash: Annotated[str, Field(min_length=1, max_length=128)]
    source_version_tx: AwareDatetime | None = None
    acl: SourceAcl


class AuthorityInput(RequestModel):
    """Graph neighbours of the target, by relation; the core ranks them (spec §3.2)."""

    authored_by: list[Id] = []
    named: list[Id] = []
    owned_by: list[Id] = []


class CreateClarificationRequest(RequestModel):
    tenant_id: Id
    workspace_id: Id
    target: Id
    document: DocumentInput
    span: SpanInput
    question: Annotated[str, Field(min_length=1, max_length=500)]
    kind: AmbiguityKind
    severity_hint: Severity | None = None
    candidates: list[CandidateInput] = Field(min_length=1, max_length=20)
    detector_confidence: float = Field(ge=0, le=1)
    applied_candidate_confidence: float = Field(ge=0, le=1)
    authority: AuthorityInput = AuthorityInput()


class CreateClarificationResponse(WireModel):
    clarification: ClarificationSummary
    deduplicated: bool
    job_id: str | None = None


class ClockRequest(RequestModel):
    advance_seconds: float | None = Field(default=None, ge=0, le=10 * 365 * 86400)
    set: AwareDatetime | None = None

    @model_validator(mode="after")
    def _exactly_one_move(self) -> ClockRequest:
        if (self.advance_seconds is None) == (self.set is None):
            raise ValueError("exactly one of advanceSeconds and set is required")
        return self


class ClockView(WireModel):
    now: datetime


class ScenarioLoaded(WireModel):
    tenants: int
    people: int
    clarifications: int

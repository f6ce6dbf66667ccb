"""One clarification as the core holds it: candidates, quorum, source, and its list views.

The baseline (docs/core-contract.md) names a clarification's severity, state, quorum policy and
state, candidates with labels, question, span excerpt, document link and ACL, workspace and
steward, asked list, responses and event trail, and (spec changelog v0.9) the delivery identities
the core resolved for its candidates. Everything else is ``additive``. What a core that leaves
the counts out still lets the bot know is derived here, once, when the record is read:
each candidate's index (its position), each response's interval (the candidate it names, or its
own dates) and the quorum's counts (the responders whose latest response is binding-capable).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AwareDatetime, Field, model_validator

from bot.core.models.answers import Interval, ResponseRecord
from bot.core.models.enums import (
    AmbiguityKind,
    AuthorityRelation,
    BindingStatus,
    ClarificationState,
    QuorumState,
    Role,
    Severity,
)
from bot.core.models.people import AskedAlias
from bot.core.models.reports import ClarificationEvent, DeliveryRecord
from bot.core.models.wire import WireModel, additive, lenient, lenient_list, tolerant_items

SeverityRead = Annotated[Severity, lenient(Severity, Severity.NORMAL)]
StateRead = Annotated[ClarificationState, lenient(ClarificationState, ClarificationState.OPEN)]
QuorumStateRead = Annotated[QuorumState, lenient(QuorumState, QuorumState.PENDING)]
KindRead = Annotated[AmbiguityKind | None, lenient(AmbiguityKind, None)]
Roles = Annotated[list[Role], lenient_list(Role)]


class DateCandidate(WireModel):
    index: int = additive(0, description="The candidate's position; derived when left out.")
    label: str = Field(description="Empty in a redacted view.")
    valid_from: AwareDatetime | None = None
    valid_to: AwareDatetime | None = None


class RankedRelation(WireModel):
    """Why one ranked person is asked: their relation to the target (spec §3.2)."""

    person_id: str
    # a relation the bot does not know still says the person is ranked (cards: a neutral line)
    relation: Annotated[AuthorityRelation, lenient(AuthorityRelation, AuthorityRelation.UNKNOWN)]


class QuorumPolicy(WireModel):
    required_confirmations: int = Field(ge=1)
    required_roles: Roles = []
    allow_steward_override: bool = False


class QuorumStatus(WireModel):
    state: QuorumStateRead
    required: int = additive(0, description="Derived from the policy when left out.")
    confirmations: int = additive(0, description="Derived from the responses when left out.")
    remaining: int = additive(0, description="Derived when left out.")
    confirmed_by: list[str] = additive([])


class SourceAcl(WireModel):
    """The source record's read ACL: the allowlist the RBAC gate checks (deny by default)."""

    workspace_id: str
    read_roles: Roles = []
    allow_people: list[str] = []
    deny_people: list[str] = []


class SourceDocument(WireModel):
    document_id: str = additive("")
    title: str = additive("", description="Empty in a redacted view.")
    url: str
    source_version_tx: AwareDatetime | None = additive()
    acl: SourceAcl


class WorkspaceRef(WireModel):
    workspace_id: str
    name: str = additive("")
    steward_id: str | None = None


class ClarificationSummary(WireModel):
    id: str = Field(min_length=1)
    severity: SeverityRead
    state: StateRead
    tenant_id: str | None = additive()
    workspace_id: str | None = additive()
    document_id: str | None = additive(description="The source document's id.")
    kind: KindRead = additive()
    quorum_state: Annotated[QuorumState | None, lenient(QuorumState, None)] = additive()
    document_title: str = additive("", description="Empty in a redacted view.")
    created_at: AwareDatetime | None = additive()
    updated_at: AwareDatetime | None = additive()
    redacted: bool = additive(False, description=(
        "The caller may not read the source: text taken from the document is withheld."))


class ClarificationPage(WireModel):
    items: Annotated[list[ClarificationSummary], tolerant_items(ClarificationSummary)]
    next_cursor: str | None = None


# the binding statuses whose responses count as confirmations until a steward decides
_CONFIRMING = frozenset({BindingStatus.BINDING_CANDIDATE, BindingStatus.BOUND})
# the quorum's counts a core may leave out (each is derived when it does)
_QUORUM_COUNTS = frozenset({"required", "confirmations", "remaining", "confirmed_by"})


class Clarification(WireModel):
    """Everything delivery needs about one clarification."""

    id: str = Field(min_length=1)
    tenant_id: str
    workspace: WorkspaceRef
    severity: SeverityRead
    state: StateRead
    quorum_policy: QuorumPolicy
    quorum: QuorumStatus
    candidates: list[DateCandidate]
    question: str = Field(description="Empty in a redacted view.")
    span_excerpt: str = Field(description="Empty in a redacted view.")
    document: SourceDocument
    asked: list[str] = []
    responses: Annotated[list[ResponseRecord], tolerant_items(ResponseRecord)] = []
    events: Annotated[list[ClarificationEvent], tolerant_items(ClarificationEvent)] = []
    asked_aliases: Annotated[list[AskedAlias], tolerant_items(AskedAlias)] = Field(
        default=[], description=(
            "The candidates' delivery identities, resolved by the core (spec changelog v0.9): "
            "each names a chat identity that maps back to that person alone. Used instead of a "
            "resolve call per candidate where given."))
    target: str = additive("")
    kind: KindRead = additive()
    span_start: int | None = additive()
    span_end: int | None = additive()
    detector_confidence: float | None = additive()
    applied_candidate_confidence: float | None = additive()
    ranking: list[str] = additive([])
    relations: Annotated[list[RankedRelation], tolerant_items(RankedRelation)] = additive(
        [], description=(
            "Each ranked person's relation to the target (author, named, owner), the first "
            "that ranked them. A core that leaves it out still conforms; cards then do not say "
            "why the person was asked."))
    deliveries: Annotated[list[DeliveryRecord], tolerant_items(DeliveryRecord)] = additive([])
    job_id: str | None = additive()
    bound_interval: Interval | None = additive()
    bound_fact_version_tx: AwareDatetime | None = additive()
    created_at: AwareDatetime | None = additive()
    updated_at: AwareDatetime | None = additive()
    redacted: bool = additive(False, description=(
        "The caller may not read the source (an API key whose person fails the read check, or "
        "one bound to no person): spanExcerpt, question, document.title and candidate labels "
        "are empty and free-form answers carry no sourceText."))

    @model_validator(mode="after")
    def _derive(self) -> Clarification:
        """What a baseline core leaves out but the record implies (module docstring)."""
        for position, candidate in enumerate(self.candidates):
            if "index" not in candidate.model_fields_set:
                candidate.index = position
        for response in self.responses:
            if "interval" not in response.model_fields_set:
                response.interval = _interval_of(response, self.candidates)
        if not _QUORUM_COUNTS <= self.quorum.model_fields_set:
            self._derive_quorum()
        if self.bound_interval is None and self.bound_fact_version_tx is None:
            # the binding response's: its interval, and when it was recorded (the fact version
            # is created with it); from the responses whatever the state word says
            binding = self._binding()
            if binding is not None:
                self.bound_interval = binding.interval
                self.bound_fact_version_tx = binding.response_tx
        return self

    def _binding(self) -> ResponseRecord | None:
        """The response that bound: the latest steward override, else the latest bound one."""
        for status in (BindingStatus.STEWARD_OVERRIDE, BindingStatus.BOUND):
            found = [r for r in self.responses if r.binding_status is status]
            if found:
                return found[-1]
        return None

    def _derive_quorum(self) -> None:
        """The counts the core left out, from the responses; a count it sent is kept."""
        q = self.quorum
        given = set(q.model_fields_set)
        latest: dict[str, ResponseRecord] = {}
        for response in self.responses:  # in order: a responder's latest counts
            latest[response.responder] = response
        confirming = [p for p, r in latest.items() if r.binding_status in _CONFIRMING]
        overrides = [r for r in self.responses
                     if r.binding_status is BindingStatus.STEWARD_OVERRIDE]
        if overrides:  # a steward's decision is what confirmed it
            confirming = [overrides[-1].responder]
        if "required" not in given:
            q.required = (0 if q.state is QuorumState.NOT_REQUIRED
                          else self.quorum_policy.required_confirmations)
        if "confirmations" not in given:
            q.confirmations = (min(len(confirming), q.required) if q.required
                               else len(confirming))
        if "remaining" not in given:
            q.remaining = 0 if q.state is QuorumState.SATISFIED else max(
                q.required - q.confirmations, 0)
        if "confirmed_by" not in given:
            q.confirmed_by = confirming


def _interval_of(response: ResponseRecord, candidates: list[DateCandidate]) -> Interval:
    if response.answer_index is not None:
        for candidate in candidates:
            if candidate.index == response.answer_index:
                return Interval(valid_from=candidate.valid_from, valid_to=candidate.valid_to)
    custom = response.answer_custom
    if custom is not None:
        return Interval.from_text(custom.valid_from, custom.valid_to)
    return Interval()

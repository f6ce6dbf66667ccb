"""One clarification as the core holds it: candidates, quorum, source, and its list views."""

from __future__ import annotations

from pydantic import AwareDatetime, Field

from bot.core.models.answers import Interval, ResponseRecord
from bot.core.models.enums import (
    AmbiguityKind,
    AuthorityRelation,
    ClarificationState,
    QuorumState,
    Role,
    Severity,
)
from bot.core.models.reports import ClarificationEvent, DeliveryRecord
from bot.core.models.wire import Id, WireModel


class DateCandidate(WireModel):
    index: int
    label: str = Field(description="Empty in a redacted view.")
    valid_from: AwareDatetime | None = None
    valid_to: AwareDatetime | None = None


class RankedRelation(WireModel):
    """Why one ranked person is asked: their relation to the target (spec §3.2)."""

    person_id: str
    relation: AuthorityRelation


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


class ClarificationSummary(WireModel):
    id: Id
    tenant_id: str
    workspace_id: str
    document_id: str | None = Field(default=None, description="The source document's id.")
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
    relations: list[RankedRelation] = Field(default=[], description=(
        "Additive: each ranked person's relation to the target (author, named, owner), the "
        "first that ranked them. A core that leaves it out still conforms; cards then do not "
        "say why the person was asked."))
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

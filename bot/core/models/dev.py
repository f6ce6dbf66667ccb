"""Bodies of the reference core's development endpoints: create, clock and scenario."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import AwareDatetime, Field, model_validator

from bot.core.models.clarifications import ClarificationSummary, SourceAcl
from bot.core.models.enums import (
    AmbiguityKind,
    Role,
    Severity,
)
from bot.core.models.wire import Id, RequestModel, Rfc3339, WireModel


class CandidateInput(RequestModel):
    label: Annotated[str, Field(min_length=1, max_length=200)]
    valid_from: AwareDatetime | None = None
    valid_to: AwareDatetime | None = None


class SpanInput(RequestModel):
    start: int = Field(ge=0)
    end: int = Field(ge=0)
    text: Annotated[str, Field(max_length=5000)]


class SourceAclInput(RequestModel):
    """A source's read ACL as ingestion sends it: checked as strictly as every request."""

    workspace_id: Id
    read_roles: list[Role] = []
    allow_people: list[Id] = []
    deny_people: list[Id] = []

    def acl(self) -> SourceAcl:
        return SourceAcl.model_validate(self.model_dump())


class DocumentInput(RequestModel):
    document_id: Id
    title: Annotated[str, Field(min_length=1, max_length=500)]
    url: Annotated[str, Field(min_length=1, max_length=2000)]
    content_hash: Annotated[str, Field(min_length=1, max_length=128)]
    source_version_tx: AwareDatetime | None = None
    acl: SourceAclInput


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
    set: Rfc3339 | None = None

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

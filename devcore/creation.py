"""Creating a clarification as ingestion does: severity, quorum policy, ranking (spec §3.2, §5)."""

from __future__ import annotations

from datetime import datetime

from bot.core.errors import ErrorCode
from bot.core.models import (
    AuthorityInput,
    AuthorityRelation,
    Clarification,
    ClarificationState,
    CreateClarificationRequest,
    DateCandidate,
    QuorumState,
    QuorumStatus,
    RankedRelation,
    Severity,
    SourceDocument,
    WorkspaceRef,
)
from devcore.directory import Directory, Tenant
from devcore.faults import CoreFault


def authority_ranking(
    authority: AuthorityInput, *, tenant_id: str, directory: Directory, cap: int
) -> list[RankedRelation]:
    """Author, then people named, then owner; first seen wins (with the relation that ranked
    them); people of the tenant only."""
    ranking: dict[str, RankedRelation] = {}
    by_relation = ((AuthorityRelation.AUTHORED_BY, authority.authored_by),
                   (AuthorityRelation.NAMED, authority.named),
                   (AuthorityRelation.OWNED_BY, authority.owned_by))
    for relation, people in by_relation:
        for person_id in people:
            if person_id in ranking:
                continue
            if directory.person_in(tenant_id=tenant_id, person_id=person_id) is None:
                continue
            ranking[person_id] = RankedRelation(person_id=person_id, relation=relation)
    return list(ranking.values())[:cap]


def build_clarification(
    req: CreateClarificationRequest,
    *,
    clarification_id: str,
    tenant: Tenant,
    directory: Directory,
    now: datetime,
) -> Clarification:
    workspace = directory.workspace_in(tenant_id=tenant.id, workspace_id=req.workspace_id)
    if workspace is None:
        raise CoreFault(ErrorCode.TENANT_SCOPE_MISMATCH,
                        "The workspace is not one of the tenant's workspaces.")
    if req.document.acl.workspace_id != workspace.id:
        raise CoreFault(ErrorCode.VALIDATION_FAILED, "The source ACL names another workspace.")
    if req.span.end < req.span.start:
        raise CoreFault(ErrorCode.VALIDATION_FAILED, "The span ends before it starts.")
    severity = tenant.policy.severity_for(kind=req.kind, hint=req.severity_hint)
    policy = tenant.policy.quorum_policy_for(severity)
    quorum_required = policy.required_confirmations > 1 or severity is Severity.CRITICAL
    doc = req.document
    ranked = authority_ranking(req.authority, tenant_id=tenant.id, directory=directory,
                               cap=tenant.policy.max_candidates)
    return Clarification(
        id=clarification_id,
        tenant_id=tenant.id,
        workspace=WorkspaceRef(
            workspace_id=workspace.id, name=workspace.name, steward_id=workspace.steward_id
        ),
        target=req.target,
        kind=req.kind,
        severity=severity,
        state=ClarificationState.OPEN,
        quorum_policy=policy,
        quorum=QuorumStatus(
            state=QuorumState.PENDING if quorum_required else QuorumState.NOT_REQUIRED,
            required=policy.required_confirmations,
            confirmations=0,
            remaining=policy.required_confirmations,
        ),
        candidates=[
            DateCandidate(index=i, label=c.label, valid_from=c.valid_from, valid_to=c.valid_to)
            for i, c in enumerate(req.candidates)
        ],
        question=req.question,
        span_excerpt=req.span.text,
        span_start=req.span.start,
        span_end=req.span.end,
        document=SourceDocument(
            document_id=doc.document_id,
            title=doc.title,
            url=doc.url,
            source_version_tx=doc.source_version_tx or now,
            acl=doc.acl.acl(),
        ),
        detector_confidence=req.detector_confidence,
        applied_candidate_confidence=req.applied_candidate_confidence,
        ranking=[r.person_id for r in ranked],
        relations=ranked,
        created_at=now,
        updated_at=now,
    )

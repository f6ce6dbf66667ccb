"""Who may see and who may assert what: tenant scope, the read gate, answer provenance.

Scope: a request reads the tenants of its token, or the one it names (403 outside the scope);
ids are unique only within a tenant, so an id held by two tenants of the scope needs the tenant.

Reads: the clarify audience gets the full record (the bot runs the RBAC gate before each delivery);
an API key gets it only when its person may read the source under ``bot.core.access.may_read``,
the check the bot uses; any other caller, including a key bound to no person, gets the redacted
view. Answers: only the clarify audience asserts a responder, rights, a chat channel or a message
reference (spec §6, §7); every other caller answers as its own principal, recorded as ``cli``.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.core.access import may_read
from bot.core.errors import ErrorCode
from bot.core.models import (
    AnswerRequest,
    Audience,
    Clarification,
    ClarificationSummary,
    ResponseRecord,
    Role,
)
from bot.core.models import (
    Channel as ContractChannel,
)
from devcore.directory import Directory, Token
from devcore.faults import CoreFault

# "api" is the request's default: no chat claim
_KEY_CHANNELS = (ContractChannel.CLI, ContractChannel.API)


def scope(token: Token, tenant_id: str | None) -> frozenset[str]:
    """The tenants a request reads: the one it names (which must be in scope) or the scope."""
    if tenant_id is None:
        return token.tenants
    if tenant_id not in token.tenants:
        raise CoreFault(ErrorCode.TENANT_SCOPE_MISMATCH)
    return frozenset({tenant_id})


def one_tenant(
    token: Token, tenant_id: str | None, holders: set[str], missing: ErrorCode
) -> str:
    """The single tenant of the scope that holds an id; ids are only unique within a tenant."""
    found = sorted(holders & scope(token, tenant_id))
    if not found:
        raise CoreFault(missing)
    if len(found) > 1:
        raise CoreFault(
            ErrorCode.VALIDATION_FAILED,
            "This id exists in more than one tenant of the token's scope; name one with tenantId.",
        )
    return found[0]


def full_view(token: Token, c: Clarification, directory: Directory) -> bool:
    if token.audience is Audience.CLARIFY:
        return True
    if token.principal is None:
        return False
    person = directory.person_in(tenant_id=c.tenant_id, person_id=token.principal)
    return person is not None and may_read(
        person, acl=c.document.acl, tenant_id=c.tenant_id
    ).allowed


def redacted(c: Clarification) -> Clarification:
    """Without anything taken from the document's text: span, question, title, labels, notes."""
    return c.model_copy(update={
        "span_excerpt": "",
        "question": "",
        "document": c.document.model_copy(update={"title": ""}),
        "candidates": [x.model_copy(update={"label": ""}) for x in c.candidates],
        "responses": [_without_note(r) for r in c.responses],
        "redacted": True,
    })


def redacted_summary(s: ClarificationSummary) -> ClarificationSummary:
    return s.model_copy(update={"document_title": "", "redacted": True})


def _without_note(r: ResponseRecord) -> ResponseRecord:
    if r.note is not None:
        r = r.model_copy(update={"note": None})
    if r.answer_custom is None or r.answer_custom.source_text is None:
        return r
    return r.model_copy(update={
        "answer_custom": r.answer_custom.model_copy(update={"source_text": None})
    })


@dataclass(frozen=True, slots=True)
class Asserted:
    """Who answers, with which rights, through which channel: from the verified caller."""

    responder: str
    rights: Role
    channel: ContractChannel
    message_ref: str | None


def asserted(token: Token, req: AnswerRequest) -> Asserted:
    """The responder assertion rule (spec §6, approval condition 2026-07-04), channel included."""
    if token.audience is Audience.CLARIFY:
        if req.responder is None or req.rights is None:
            raise CoreFault(
                ErrorCode.VALIDATION_FAILED,
                "A clarify-audience caller must name the responder and their rights.",
            )
        return Asserted(req.responder, req.rights, req.channel, req.message_ref)
    if token.audience is not None:
        raise CoreFault(ErrorCode.AUDIENCE_FORBIDDEN)
    foreign = req.responder is not None and req.responder != token.principal
    chat = req.channel not in _KEY_CHANNELS or req.message_ref is not None
    if req.rights is not None or foreign or chat:
        raise CoreFault(ErrorCode.RESPONDER_ASSERTION_FORBIDDEN)
    if token.principal is None or token.role is None:
        raise CoreFault(ErrorCode.PRINCIPAL_REQUIRED)
    return Asserted(token.principal, token.role, ContractChannel.CLI, None)

"""The read rule of the contract: may this person read this source? One allowlist, deny by default.

Both sides apply the same check: the bot before every delivery that carries span text (question
cards, digests, a steward's unredacted fallback), the core before it shows span text or a document
title to an API key. Tenant, then the source ACL's deny and allow lists, then workspace membership
with a role the ACL lists. Anything missing or unknown is a denial.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.core.models import Person, SourceAcl


@dataclass(frozen=True, slots=True)
class ReadDecision:
    """The read rule's answer for one person and one source: allowed or not, and why."""

    allowed: bool
    why: str  # a value-free explanation for the audit message


def may_read(person: Person, *, acl: SourceAcl | None, tenant_id: str) -> ReadDecision:
    if acl is None:
        return ReadDecision(False, "the source has no ACL")
    if person.tenant_id != tenant_id:
        return ReadDecision(False, "the person belongs to another tenant")
    if person.person_id in acl.deny_people:
        return ReadDecision(False, "the source ACL denies this person")
    if person.person_id in acl.allow_people:
        return ReadDecision(True, "the source ACL names this person")
    roles = {ms.role for ms in person.memberships if ms.workspace_id == acl.workspace_id}
    if not roles:
        return ReadDecision(False, "the person is not a member of the source's workspace")
    if roles.isdisjoint(acl.read_roles):
        return ReadDecision(False, "the person's workspace role may not read this source")
    return ReadDecision(True, "the person's workspace role may read this source")

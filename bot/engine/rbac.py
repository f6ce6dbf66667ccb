"""The RBAC gate: may this person read this span? One allowlist policy, deny by default.

The same check guards every delivery that carries span text (question cards, digests, a steward's
unredacted fallback): tenant, then the source ACL's deny and allow lists, then workspace membership
with a role the ACL lists. Anything missing or unknown is a denial.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.core import models as m


@dataclass(frozen=True, slots=True)
class Verdict:
    allowed: bool
    why: str  # a value-free explanation for the audit message


def may_read(person: m.Person, *, acl: m.SourceAcl | None, tenant_id: str) -> Verdict:
    if acl is None:
        return Verdict(False, "the source has no ACL")
    if person.tenant_id != tenant_id:
        return Verdict(False, "the person belongs to another tenant")
    if person.person_id in acl.deny_people:
        return Verdict(False, "the source ACL denies this person")
    if person.person_id in acl.allow_people:
        return Verdict(True, "the source ACL names this person")
    roles = {ms.role for ms in person.memberships if ms.workspace_id == acl.workspace_id}
    if not roles:
        return Verdict(False, "the person is not a member of the source's workspace")
    if roles.isdisjoint(acl.read_roles):
        return Verdict(False, "the person's workspace role may not read this source")
    return Verdict(True, "the person's workspace role may read this source")


def role_in(person: m.Person, workspace_id: str) -> m.Role | None:
    """The person's highest role in a workspace, or None when not a member."""
    roles = [ms.role for ms in person.memberships if ms.workspace_id == workspace_id]
    return max(roles, key=lambda r: r.rank) if roles else None


def may_confirm(person: m.Person, c: m.Clarification) -> bool:
    """Whether the person's answer could count toward the quorum: a verified enterprise
    identity (others are refused as unverified) whose role in the clarification's workspace
    (the rights the bot asserts) reaches the policy's lowest required role."""
    role = role_in(person, c.workspace.workspace_id)
    lowest = min((r.rank for r in c.quorum_policy.required_roles), default=m.Role.EDITOR.rank)
    return person.verified_enterprise_identity and role is not None and role.rank >= lowest

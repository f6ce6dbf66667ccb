"""The RBAC gate: may this person read this span? One allowlist policy, deny by default.

The check itself lives in ``bot.core.access`` because the core applies the very same rule to its
reads; the engine uses it before every delivery that carries span text.
"""

from __future__ import annotations

from bot.core.access import ReadDecision, may_read
from bot.core.models import Clarification, Person, Role

__all__ = ["ReadDecision", "may_read", "role_in"]


def role_in(person: Person, workspace_id: str) -> Role | None:
    """The person's highest role in a workspace, or None when not a member."""
    roles = [ms.role for ms in person.memberships if ms.workspace_id == workspace_id]
    return max(roles, key=lambda r: r.rank) if roles else None


def may_confirm(person: Person, c: Clarification) -> bool:
    """Whether the person's answer could count toward the quorum: a verified enterprise
    identity (others are refused as unverified) whose role in the clarification's workspace
    (the rights the bot asserts) reaches the policy's lowest required role."""
    role = role_in(person, c.workspace.workspace_id)
    lowest = min((r.rank for r in c.quorum_policy.required_roles), default=Role.EDITOR.rank)
    return person.verified_enterprise_identity and role is not None and role.rank >= lowest

"""Rules a tenant's clarify policy must satisfy, checked wherever a policy is loaded or changed.

Spec §3.7: critical-severity clarifications MUST NOT bind on a single response unless the tenant's
steward-override policy explicitly permits it. A policy binds a critical clarification on one
response when quorum is off or ``critical_required_confirmations`` is below two; such a policy is
refused unless it also sets ``allow_steward_override = true`` itself (a default is not explicit).
The core's scenario loader and the bot's settings both call ``critical_quorum_problem``.
"""

from __future__ import annotations

from dataclasses import dataclass

MIN_CRITICAL_CONFIRMATIONS = 2


@dataclass(frozen=True, slots=True)
class PolicyProblem:
    """The one key to change and what it must be, in words (no value is repeated)."""

    field: str
    allowed: str


def critical_quorum_problem(
    *,
    enabled: bool,
    critical_required_confirmations: int,
    allow_steward_override: bool,
    override_set_explicitly: bool,
) -> PolicyProblem | None:
    """None when the policy keeps §3.7, else the key that breaks it."""
    single = not enabled or critical_required_confirmations < MIN_CRITICAL_CONFIRMATIONS
    if not single or (allow_steward_override and override_set_explicitly):
        return None
    why = (
        "(spec §3.7: a critical clarification must not bind on a single response) unless "
        "allow_steward_override = true is set explicitly in the same table"
    )
    if not enabled:
        return PolicyProblem("enabled", f"true {why}")
    return PolicyProblem(
        "critical_required_confirmations", f"at least {MIN_CRITICAL_CONFIRMATIONS} {why}"
    )

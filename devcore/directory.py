"""The reference core's directory: tenants and their clarify policy, workspaces, people, tokens."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from datetime import timedelta

from pydantic import ValidationError

from bot.core.errors import ErrorCode
from bot.core.models import (
    AmbiguityKind,
    Audience,
    Person,
    PersonAliases,
    QuorumPolicy,
    ResolvedPerson,
    Role,
    Severity,
    SlackIdentity,
    TeamsIdentity,
)
from bot.core.policy import critical_quorum_problem
from devcore.faults import CoreFault


class PolicyRefused(ValueError):
    """A tenant policy breaks a spec rule; ``field`` is the key to change under ``quorum``."""

    def __init__(self, field: str, allowed: str) -> None:
        super().__init__(f"quorum.{field}: expected {allowed}")
        self.field = field
        self.allowed = allowed


@dataclass(frozen=True, slots=True)
class TenantPolicy:
    """The tenant's [clarify] tables as the core applies them (spec §8).

    Frozen and checked on construction, so every policy the core holds, including one changed
    with ``dataclasses.replace``, keeps spec §3.7 (see ``bot.core.policy``).
    """

    escalation_window_hours: float = 48
    max_candidates: int = 3
    default_severity: Severity = Severity.NORMAL
    quorum_enabled: bool = True
    critical_required_confirmations: int = 2
    required_roles: tuple[Role, ...] = (Role.EDITOR,)
    allow_steward_override: bool = True
    elevate: dict[AmbiguityKind, Severity] = field(default_factory=dict)
    # the tenant wrote allow_steward_override itself (§3.7 needs an explicit permission)
    override_set_explicitly: bool = False

    def __post_init__(self) -> None:
        problem = critical_quorum_problem(
            enabled=self.quorum_enabled,
            critical_required_confirmations=self.critical_required_confirmations,
            allow_steward_override=self.allow_steward_override,
            override_set_explicitly=self.override_set_explicitly,
        )
        if problem is not None:
            raise PolicyRefused(problem.field, problem.allowed)

    @property
    def escalation_window(self) -> timedelta:
        return timedelta(hours=self.escalation_window_hours)

    def severity_for(self, *, kind: AmbiguityKind, hint: Severity | None) -> Severity:
        base = hint or self.default_severity
        floor = self.elevate.get(kind, Severity.LOW)
        return base if base.rank >= floor.rank else floor

    def quorum_policy_for(self, severity: Severity) -> QuorumPolicy:
        required = 1
        if severity is Severity.CRITICAL and self.quorum_enabled:
            required = self.critical_required_confirmations
        return QuorumPolicy(
            required_confirmations=required,
            required_roles=list(self.required_roles),
            allow_steward_override=self.allow_steward_override,
        )


@dataclass(slots=True)
class Tenant:
    id: str
    name: str
    policy: TenantPolicy


@dataclass(slots=True)
class Workspace:
    id: str
    tenant_id: str
    name: str
    steward_id: str | None


@dataclass(slots=True)
class Token:
    """A bearer credential: a service token (audience, tenants) or an API key (principal)."""

    value: str
    audience: Audience | None
    tenants: frozenset[str]
    principal: str | None = None
    role: Role | None = None

    @property
    def is_api_key(self) -> bool:
        return self.audience is None


@dataclass(slots=True)
class Directory:
    """Everything here is keyed by tenant first: two tenants may use the same ids."""

    tenants: dict[str, Tenant] = field(default_factory=dict)
    workspaces: dict[tuple[str, str], Workspace] = field(default_factory=dict)
    people: dict[tuple[str, str], Person] = field(default_factory=dict)
    tokens: dict[str, Token] = field(default_factory=dict)
    dev_tokens: set[str] = field(default_factory=set)

    def tenant(self, tenant_id: str) -> Tenant:
        try:
            return self.tenants[tenant_id]
        except KeyError:
            raise CoreFault(ErrorCode.TENANT_SCOPE_MISMATCH) from None

    def person_in(self, *, tenant_id: str, person_id: str) -> Person | None:
        return self.people.get((tenant_id, person_id))

    def workspace_in(self, *, tenant_id: str, workspace_id: str) -> Workspace | None:
        return self.workspaces.get((tenant_id, workspace_id))

    def resolve(
        self, *, tenant_id: str, identity: SlackIdentity | TeamsIdentity
    ) -> ResolvedPerson:
        matches: list[tuple[Person, bool]] = []
        for (tenant, _), person in self.people.items():
            if tenant != tenant_id:
                continue
            verified = _match(person.aliases, identity)
            if verified is not None:
                matches.append((person, verified))
        if not matches:
            raise CoreFault(ErrorCode.PERSON_NOT_FOUND)
        if len(matches) > 1:
            raise CoreFault(ErrorCode.ALIAS_AMBIGUOUS)
        person, alias_verified = matches[0]
        return ResolvedPerson(
            person=person, verified=alias_verified and person.verified_enterprise_identity
        )


def _match(aliases: PersonAliases, identity: SlackIdentity | TeamsIdentity) -> bool | None:
    """Whether (and how verified) an alias matches the identity; None when none matches."""
    if isinstance(identity, SlackIdentity):
        for alias in aliases.slack:
            if alias.user_id != identity.user_id:
                continue
            same_org = (
                identity.enterprise_id is not None and alias.enterprise_id == identity.enterprise_id
            ) or (identity.team_id is not None and alias.team_id == identity.team_id)
            if same_org:
                return alias.verified
        return None
    for team_alias in aliases.teams:
        if (
            team_alias.aad_object_id == identity.aad_object_id
            and team_alias.tenant_id == identity.tenant_id
        ):
            return team_alias.verified
    return None


def identities(person: Person) -> list[SlackIdentity | TeamsIdentity]:
    """Every chat identity a person's aliases name, as the resolve route takes them."""
    found: list[SlackIdentity | TeamsIdentity] = []
    for alias in person.aliases.slack:
        with contextlib.suppress(ValidationError):  # a malformed alias is never routed to
            found.append(SlackIdentity(user_id=alias.user_id, team_id=alias.team_id,
                                       enterprise_id=alias.enterprise_id))
    for teams in person.aliases.teams:
        with contextlib.suppress(ValidationError):
            found.append(TeamsIdentity(aad_object_id=teams.aad_object_id,
                                       tenant_id=teams.tenant_id))
    return found

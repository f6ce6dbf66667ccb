"""Scenario files: tenants, workspaces, people with aliases and roles, tokens and clarifications.

A scenario is TOML on disk (see ``devcore/scenarios/acme.toml``) or the same shape as a JSON object
posted to ``/dev/v1/scenario``. Keys are snake_case; clarifications take the creation
request's fields.
"""

from __future__ import annotations

import tomllib
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bot.core import models as m
from devcore.directory import Directory, Tenant, TenantPolicy, Token, Workspace

DEFAULT_SCENARIO = "acme"


class ScenarioError(ValueError):
    """The scenario does not have the documented shape; the message names the place."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Quorum(_Strict):
    enabled: bool = True
    critical_required_confirmations: int = Field(default=2, ge=1, le=10)
    required_roles: list[m.Role] = [m.Role.EDITOR]
    allow_steward_override: bool = True


class _Severity(_Strict):
    default: m.Severity = m.Severity.NORMAL
    high_notifies_steward: bool = True
    elevate: dict[m.AmbiguityKind, m.Severity] = {}


class _Policy(_Strict):
    escalation_window_hours: float = Field(default=48, gt=0, le=8760)
    max_candidates: int = Field(default=3, ge=1, le=20)
    quorum: _Quorum = _Quorum()
    severity: _Severity = _Severity()


class _Tenant(_Strict):
    id: str
    name: str
    clarify: _Policy = _Policy()


class _Workspace(_Strict):
    id: str
    tenant: str
    name: str
    steward: str | None = None


class _MembershipIn(_Strict):
    workspace: str
    role: m.Role


class _SlackIn(_Strict):
    user_id: str
    team_id: str | None = None
    enterprise_id: str | None = None
    verified: bool = True


class _TeamsIn(_Strict):
    aad_object_id: str
    tenant_id: str
    verified: bool = True


class _Person(_Strict):
    id: str
    tenant: str
    display_name: str
    email: str | None = None
    upn: str | None = None
    locale: str = "en"
    time_zone: str = "UTC"
    verified: bool = True
    memberships: list[_MembershipIn] = []
    slack: list[_SlackIn] = []
    teams: list[_TeamsIn] = []


class _Token(_Strict):
    token: str = Field(min_length=8)
    audience: m.Audience | None = None
    tenants: list[str] = []
    tenant: str | None = None
    person: str | None = None
    role: m.Role | None = None


class _Dev(_Strict):
    tokens: list[str] = []


class Scenario(_Strict):
    name: str = "unnamed"
    description: str = ""
    tenants: list[_Tenant] = []
    workspaces: list[_Workspace] = []
    people: list[_Person] = []
    tokens: list[_Token] = []
    dev: _Dev = _Dev()
    clarifications: list[dict[str, Any]] = []


def parse_scenario(data: dict[str, Any]) -> tuple[Directory, list[m.CreateClarificationRequest]]:
    try:
        scenario = Scenario.model_validate(data)
        requests = [m.CreateClarificationRequest.model_validate(c) for c in scenario.clarifications]
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ScenarioError(f"scenario: {where}: {first['msg']}") from None
    return _directory(scenario), requests


def _directory(s: Scenario) -> Directory:
    d = Directory()
    for t in s.tenants:
        p = t.clarify
        d.tenants[t.id] = Tenant(
            id=t.id,
            name=t.name,
            policy=TenantPolicy(
                escalation_window_hours=p.escalation_window_hours,
                max_candidates=p.max_candidates,
                default_severity=p.severity.default,
                quorum_enabled=p.quorum.enabled,
                critical_required_confirmations=p.quorum.critical_required_confirmations,
                required_roles=tuple(p.quorum.required_roles),
                allow_steward_override=p.quorum.allow_steward_override,
                elevate=dict(p.severity.elevate),
            ),
        )
    for w in s.workspaces:
        _require(w.tenant in d.tenants, f"workspace {w.id}: unknown tenant")
        d.workspaces[w.id] = Workspace(
            id=w.id, tenant_id=w.tenant, name=w.name, steward_id=w.steward
        )
    for person in s.people:
        _require(person.tenant in d.tenants, f"person {person.id}: unknown tenant")
        d.people[person.id] = _person(person)
    for tok in s.tokens:
        d.tokens[tok.token] = _token(tok, d)
    d.dev_tokens.update(s.dev.tokens)
    return d


def _person(p: _Person) -> m.Person:
    return m.Person(
        person_id=p.id,
        tenant_id=p.tenant,
        display_name=p.display_name,
        locale=p.locale,
        time_zone=p.time_zone,
        verified_enterprise_identity=p.verified,
        aliases=m.PersonAliases(
            email=p.email,
            upn=p.upn,
            slack=[m.SlackAlias(**a.model_dump()) for a in p.slack],
            teams=[m.TeamsAlias(**a.model_dump()) for a in p.teams],
        ),
        memberships=[m.Membership(workspace_id=x.workspace, role=x.role) for x in p.memberships],
    )


def _token(t: _Token, d: Directory) -> Token:
    if t.audience is not None:
        _require(all(x in d.tenants for x in t.tenants), "token: unknown tenant")
        return Token(value=t.token, audience=t.audience, tenants=frozenset(t.tenants))
    _require(t.tenant in d.tenants, "api key: unknown tenant")
    assert t.tenant is not None
    if t.person is not None:
        _require(
            d.person_in(tenant_id=t.tenant, person_id=t.person) is not None,
            "api key: principal is not a person of its tenant",
        )
    return Token(
        value=t.token,
        audience=None,
        tenants=frozenset({t.tenant}),
        principal=t.person,
        role=t.role if t.person else None,
    )


def _require(ok: bool, message: str) -> None:
    if not ok:
        raise ScenarioError(f"scenario: {message}")


def read_scenario(path: Path | str | None = None) -> dict[str, Any]:
    """A scenario file as data: a path to a TOML file, a bundled name (``acme``), or the default."""
    if path is None or (isinstance(path, str) and not path.endswith(".toml") and "/" not in path):
        name = path or DEFAULT_SCENARIO
        bundled = resources.files("devcore.scenarios").joinpath(f"{name}.toml")
        if not bundled.is_file():
            known = sorted(p.name.removesuffix(".toml") for p in
                           resources.files("devcore.scenarios").iterdir()
                           if p.name.endswith(".toml"))
            raise ScenarioError(f"scenario: no bundled scenario named {name!r}; bundled: "
                                f"{', '.join(known)} (or give the path of a .toml file)")
        text = bundled.read_text("utf-8")
    else:
        try:
            text = Path(path).read_text("utf-8")
        except OSError as exc:
            raise ScenarioError(f"scenario: cannot read {str(path)!r} ({exc.strerror})") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(f"scenario: not valid TOML ({exc})") from None

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

from bot.core.models import (
    AmbiguityKind,
    Audience,
    CreateClarificationRequest,
    Membership,
    Person,
    PersonAliases,
    Role,
    Severity,
    SlackAlias,
    TeamsAlias,
)
from devcore.directory import Directory, PolicyRefused, Tenant, TenantPolicy, Token, Workspace
from devcore.issues import issues

DEFAULT_SCENARIO = "acme"


class ScenarioError(ValueError):
    """The scenario does not have the documented shape; the message names the place.

    ``str()`` is for the operator reading their own file (it may name an unknown key);
    ``details`` is the value-free form an HTTP caller gets: schema path, rule, fixed message.
    """

    def __init__(self, text: str, details: list[dict[str, Any]] | None = None) -> None:
        super().__init__(text)
        self.details = details or []


def _refuse(loc: list[str | int], rule: str, msg: str) -> ScenarioError:
    where = ".".join(str(p) for p in loc)
    return ScenarioError(f"scenario: {where}: {msg}", [{"loc": loc, "rule": rule, "msg": msg}])


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Quorum(_Strict):
    enabled: bool = True
    critical_required_confirmations: int = Field(default=2, ge=1, le=10)
    required_roles: list[Role] = [Role.EDITOR]
    allow_steward_override: bool = True


class _Severity(_Strict):
    default: Severity = Severity.NORMAL
    high_notifies_steward: bool = True
    elevate: dict[AmbiguityKind, Severity] = {}


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
    role: Role


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
    audience: Audience | None = None
    tenants: list[str] = []
    tenant: str | None = None
    person: str | None = None
    role: Role | None = None


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


def parse_scenario(data: dict[str, Any]) -> tuple[Directory, list[CreateClarificationRequest]]:
    scenario = _validated(Scenario, data, at=[])
    requests = [
        _validated(CreateClarificationRequest, c, at=["clarifications", i])
        for i, c in enumerate(scenario.clarifications)
    ]
    return _directory(scenario), requests


def _validated[T: BaseModel](model: type[T], data: object, *, at: list[str | int]) -> T:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in (*at, *first["loc"]))
        details = [{**d, "loc": [*at, *d["loc"]]} for d in issues(exc, model)]
        raise ScenarioError(f"scenario: {where}: {first['msg']}", details) from None


def _directory(s: Scenario) -> Directory:
    d = Directory()
    for i, t in enumerate(s.tenants):
        d.tenants[t.id] = Tenant(id=t.id, name=t.name, policy=_policy(t.clarify, at=i))
    for i, w in enumerate(s.workspaces):
        _require(w.tenant in d.tenants, ["workspaces", i, "tenant"], "unknown tenant")
        d.workspaces[(w.tenant, w.id)] = Workspace(
            id=w.id, tenant_id=w.tenant, name=w.name, steward_id=w.steward
        )
    for i, person in enumerate(s.people):
        _require(person.tenant in d.tenants, ["people", i, "tenant"], "unknown tenant")
        for j, ms in enumerate(person.memberships):
            _require(d.workspace_in(tenant_id=person.tenant, workspace_id=ms.workspace) is not None,
                     ["people", i, "memberships", j, "workspace"],
                     "not a workspace of the person's tenant")
        d.people[(person.tenant, person.id)] = _person(person)
    for i, w in enumerate(s.workspaces):
        if w.steward is not None:
            _require(d.person_in(tenant_id=w.tenant, person_id=w.steward) is not None,
                     ["workspaces", i, "steward"], "not a person of the workspace's tenant")
    for i, tok in enumerate(s.tokens):
        d.tokens[tok.token] = _token(tok, d, at=["tokens", i])
    d.dev_tokens.update(s.dev.tokens)
    return d


def _policy(p: _Policy, *, at: int) -> TenantPolicy:
    try:
        return TenantPolicy(
            escalation_window_hours=p.escalation_window_hours,
            max_candidates=p.max_candidates,
            default_severity=p.severity.default,
            quorum_enabled=p.quorum.enabled,
            critical_required_confirmations=p.quorum.critical_required_confirmations,
            required_roles=tuple(p.quorum.required_roles),
            allow_steward_override=p.quorum.allow_steward_override,
            elevate=dict(p.severity.elevate),
            override_set_explicitly="allow_steward_override" in p.quorum.model_fields_set,
        )
    except PolicyRefused as refused:
        loc: list[str | int] = ["tenants", at, "clarify", "quorum", refused.field]
        raise _refuse(loc, "policy", f"expected {refused.allowed}") from None


def _person(p: _Person) -> Person:
    return Person(
        person_id=p.id,
        tenant_id=p.tenant,
        display_name=p.display_name,
        locale=p.locale,
        time_zone=p.time_zone,
        verified_enterprise_identity=p.verified,
        aliases=PersonAliases(
            email=p.email,
            upn=p.upn,
            slack=[SlackAlias(**a.model_dump()) for a in p.slack],
            teams=[TeamsAlias(**a.model_dump()) for a in p.teams],
        ),
        memberships=[Membership(workspace_id=x.workspace, role=x.role) for x in p.memberships],
    )


def _token(t: _Token, d: Directory, *, at: list[str | int]) -> Token:
    if t.audience is not None:
        _require(all(x in d.tenants for x in t.tenants), [*at, "tenants"], "unknown tenant")
        return Token(value=t.token, audience=t.audience, tenants=frozenset(t.tenants))
    _require(t.tenant in d.tenants, [*at, "tenant"], "unknown tenant")
    assert t.tenant is not None
    if t.person is not None:
        _require(
            d.person_in(tenant_id=t.tenant, person_id=t.person) is not None,
            [*at, "person"],
            "the principal is not a person of the key's tenant",
        )
    return Token(
        value=t.token,
        audience=None,
        tenants=frozenset({t.tenant}),
        principal=t.person,
        role=t.role if t.person else None,
    )


def _require(ok: bool, loc: list[str | int], message: str) -> None:
    if not ok:
        raise _refuse(loc, "reference", message)


def read_scenario(path: Path | str | None = None) -> dict[str, Any]:
    """A scenario file as data: a path to a TOML file, a bundled name (``acme``), or the default."""
    if path is None or (isinstance(path, str) and not path.endswith(".toml") and "/" not in path):
        text = _bundled(path or DEFAULT_SCENARIO)
    else:
        try:
            text = Path(path).read_text("utf-8")
        except OSError as exc:
            raise ScenarioError(f"scenario: cannot read {str(path)!r} ({exc.strerror})") from None
    return _extended(_parsed(text), seen=set())


def _bundled(name: str) -> str:
    bundled = resources.files("devcore.scenarios").joinpath(f"{name}.toml")
    if not bundled.is_file():
        known = sorted(p.name.removesuffix(".toml") for p in
                       resources.files("devcore.scenarios").iterdir()
                       if p.name.endswith(".toml"))
        raise ScenarioError(f"scenario: no bundled scenario named {name!r}; bundled: "
                            f"{', '.join(known)} (or give the path of a .toml file)")
    return bundled.read_text("utf-8")


def _parsed(text: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(f"scenario: not valid TOML ({exc})") from None


def _extended(data: dict[str, Any], *, seen: set[str]) -> dict[str, Any]:
    """A scenario with ``extends = "<bundled name>"`` is that scenario with this one's changes:
    a person listed with a known ``id`` has the fields given here replaced (their zone or
    language, say); every other table of a list is added; any other key replaces the base's."""
    base_name = data.pop("extends", None)
    if base_name is None:
        return data
    if not isinstance(base_name, str) or "/" in base_name or base_name.endswith(".toml"):
        raise ScenarioError("scenario: extends: expected the name of a bundled scenario")
    if base_name in seen:
        raise ScenarioError("scenario: extends: the scenarios extend each other in a circle")
    base = _extended(_parsed(_bundled(base_name)), seen=seen | {base_name})
    for key, value in data.items():
        if key == "people" and isinstance(value, list):
            _merge_people(base.setdefault("people", []), value)
        elif isinstance(value, list) and isinstance(base.get(key), list):
            base[key] = [*base[key], *value]
        else:
            base[key] = value
    return base


def _merge_people(listed: list[dict[str, Any]], changes: list[Any]) -> None:
    known = {p.get("id"): p for p in listed if isinstance(p, dict)}
    for change in changes:
        person = known.get(change.get("id")) if isinstance(change, dict) else None
        if person is None:
            listed.append(change)
        else:
            person.update(change)

"""The scenario's people as the sandbox shows them: who each is in the local Slack (member id,
zone, language) and what they do (editor, viewer, steward of a workspace)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

DEFAULT_ZONE = "UTC"
DEFAULT_LOCALE = "en-GB"


@dataclass(frozen=True)
class SandboxPerson:
    person_id: str
    tenant: str
    name: str
    slack_id: str
    team_id: str
    enterprise_id: str | None
    email: str | None
    zone: str
    locale: str
    roles: tuple[tuple[str, str], ...]  # (workspace name, role)
    verified: bool

    @property
    def steward(self) -> bool:
        return any(role == "steward" for _, role in self.roles)

    def as_json(self) -> dict[str, Any]:
        return {"id": self.person_id, "tenant": self.tenant, "name": self.name,
                "slackId": self.slack_id, "zone": self.zone, "locale": self.locale,
                "roles": [{"workspace": w, "role": r} for w, r in self.roles],
                "steward": self.steward, "verified": self.verified}


def scenario_people(data: dict[str, Any]) -> list[SandboxPerson]:
    """Each person of the scenario with a Slack alias, in the scenario's order; a workspace's
    steward counts as its steward whatever their membership says."""
    names = {w["id"]: w.get("name", w["id"]) for w in data.get("workspaces", [])}
    stewards = {w["id"]: w.get("steward") for w in data.get("workspaces", [])}
    people = []
    for p in data.get("people", []):
        for alias in p.get("slack", [])[:1]:
            roles = {(m["workspace"], m["role"]) for m in p.get("memberships", [])}
            roles |= {(w, "steward") for w, s in stewards.items() if s == p["id"]}
            people.append(SandboxPerson(
                person_id=p["id"], tenant=p["tenant"], name=p.get("display_name", p["id"]),
                slack_id=alias["user_id"], team_id=alias["team_id"],
                enterprise_id=alias.get("enterprise_id"), email=p.get("email"),
                zone=p.get("time_zone") or DEFAULT_ZONE, locale=p.get("locale") or DEFAULT_LOCALE,
                roles=tuple(sorted((names.get(w, w), r) for w, r in roles)),
                verified=bool(alias.get("verified", p.get("verified", True)))))
    return people


def unreachable_in_slack(data: dict[str, Any], tenant: str) -> list[dict[str, str]]:
    """The tenant's people the local Slack cannot hold, and why: the bot skips them with a
    reason code the core records (no chat alias here)."""
    return [{"id": p["id"], "name": p.get("display_name", p["id"]),
             "why": "no Slack account in the scenario: the bot cannot ask them here"}
            for p in data.get("people", []) if p.get("tenant") == tenant and not p.get("slack")]

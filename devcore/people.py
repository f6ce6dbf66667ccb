"""A people file: the scenario's people mapped to real Slack and Teams ids.

The bundled people have made-up chat ids, so the reference core could never resolve a click from
a real workspace to one of them. ``clarify-bot devcore --people FILE`` reads a small TOML keyed by
person id and replaces that person's chat aliases before the scenario loads, so an operator can be
Sarah (say) in their own workspace and see her cards::

    [p-sarah.slack]
    user_id = "U012ABCDEF"          # your member id (Slack profile → ⋮ → Copy member ID)
    team_id = "T012ABCDE"           # your workspace id
    # enterprise_id = "E012ABCDE"   # Enterprise Grid only

    [p-sarah.teams]
    aad_object_id = "…"             # your Entra object id (a GUID)
    tenant_id = "…"                 # your Entra tenant id (a GUID)

Every problem names the person and the field, never the value (the file holds no secret, but an
error line should not have to be judged). A person in several tenants needs ``tenant = "…"``.
"""

from __future__ import annotations

import copy
import re
import tomllib
from pathlib import Path
from typing import Any

from devcore.scenario import ScenarioError

_GUID = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
# field → (pattern, what is expected); shapes as Slack and Entra issue them
_SLACK: dict[str, tuple[str, str]] = {
    "user_id": (r"^[UW][A-Z0-9]{2,31}$", "a Slack member id such as U012ABCDEF"),
    "team_id": (r"^T[A-Z0-9]{2,31}$", "a Slack workspace (team) id such as T012ABCDE"),
    "enterprise_id": (r"^E[A-Z0-9]{2,31}$", "a Slack Enterprise Grid id such as E012ABCDE"),
}
_TEAMS: dict[str, tuple[str, str]] = {
    "aad_object_id": (_GUID, "the person's Entra (AAD) object id, a GUID"),
    "tenant_id": (_GUID, "the Entra (AAD) tenant id, a GUID"),
}
_REQUIRED = {"slack": ("user_id", "team_id"), "teams": ("aad_object_id", "tenant_id")}
_FIELDS = {"slack": _SLACK, "teams": _TEAMS}


def _problem(where: str, message: str) -> ScenarioError:
    return ScenarioError(f"people file: {where}: {message}")


def read_people(path: Path | str) -> dict[str, Any]:
    """The people file as data; a file that cannot be read or parsed is a ScenarioError."""
    try:
        text = Path(path).read_text("utf-8")
    except OSError as exc:
        raise _problem(str(path), f"cannot be read ({exc.strerror})") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise _problem(str(path), f"not valid TOML ({exc})") from None


def apply_people(scenario: dict[str, Any], people: dict[str, Any]) -> dict[str, Any]:
    """A copy of the scenario whose mapped people carry the given chat ids instead of theirs.

    A mapped platform replaces all of that person's aliases on it (so the made-up one no longer
    resolves); an unmapped platform is left as it was. One real id given to two people of one
    tenant is refused: the core could not tell who clicked.
    """
    data = copy.deepcopy(scenario)
    listed: list[dict[str, Any]] = data.get("people", [])
    taken: dict[tuple[str, str, str], str] = {}
    if not people:
        raise _problem("(whole file)", "maps nobody; expected one [<person id>.slack] or "
                       "[<person id>.teams] table per person")
    for person_id, entry in people.items():
        if not isinstance(entry, dict):
            raise _problem(person_id, "expected a table with slack and/or teams")
        person = _person(listed, person_id, entry.get("tenant"))
        unknown = sorted(set(entry) - {"tenant", "slack", "teams"})
        if unknown:
            raise _problem(f"{person_id}.{unknown[0]}", "unknown key; expected slack, teams "
                           "or tenant")
        if "slack" not in entry and "teams" not in entry:
            raise _problem(person_id, "expected a slack and/or a teams table")
        for platform in ("slack", "teams"):
            if platform in entry:
                alias = _alias(person_id, platform, entry[platform])
                alias["verified"] = bool(person.get("verified", True))
                key = (person["tenant"], platform, alias["user_id" if platform == "slack"
                                                         else "aad_object_id"])
                if key in taken:
                    raise _problem(f"{person_id}.{platform}", f"the same id is already mapped "
                                   f"to {taken[key]}; one chat user can be one person only")
                taken[key] = person_id
                person[platform] = [alias]
    for person in listed:  # a real id mapped here must not still resolve to a made-up person
        for platform, id_key in (("slack", "user_id"), ("teams", "aad_object_id")):
            for alias in person.get(platform, []):
                owner = taken.get((person["tenant"], platform, alias.get(id_key, "")))
                if owner is not None and owner != person["id"]:
                    raise _problem(f"{owner}.{platform}", f"the id is the scenario's own alias "
                                   f"of {person['id']}; choose another")
    return data


def _person(listed: list[dict[str, Any]], person_id: str, tenant: Any) -> dict[str, Any]:
    found = [p for p in listed if p.get("id") == person_id
             and (tenant is None or p.get("tenant") == tenant)]
    if not found:
        known = ", ".join(sorted({str(p.get("id")) for p in listed}))
        where = f"{person_id} (tenant {tenant})" if tenant is not None else person_id
        raise _problem(where, f"no such person in the scenario; its people: {known}")
    if len(found) > 1:
        tenants = ", ".join(sorted(str(p.get("tenant")) for p in found))
        raise _problem(person_id, f"a person of several tenants ({tenants}); add "
                       "tenant = \"…\" to the entry")
    return found[0]


def _alias(person_id: str, platform: str, given: Any) -> dict[str, Any]:
    at = f"{person_id}.{platform}"
    fields = _FIELDS[platform]
    if not isinstance(given, dict):
        raise _problem(at, f"expected a table with {', '.join(fields)}")
    for key in given:
        if key not in fields:
            raise _problem(f"{at}.{key}", f"unknown key; expected {', '.join(fields)}")
    for key in _REQUIRED[platform]:
        if key not in given:
            raise _problem(f"{at}.{key}", f"missing; expected {fields[key][1]}")
    for key, value in given.items():
        pattern, expected = fields[key]
        if not isinstance(value, str) or not re.fullmatch(pattern, value):
            raise _problem(f"{at}.{key}", f"expected {expected}")
    return dict(given)

"""A question made on the sandbox's page, turned into the request ingestion would send the core
(``POST /v1/dev/clarifications``): a document in one workspace, two dates it could mean, the
people who wrote, were named in or own it, its severity, and who may read it."""

from __future__ import annotations

import itertools
from datetime import UTC, date, datetime
from typing import Any

from pydantic import ValidationError

from bot.core.models import CreateClarificationRequest

SEVERITIES = ("low", "normal", "high", "critical")
MAX_QUESTION = 500
MAX_LABEL = 200
_numbers = itertools.count(1)


class QuestionError(ValueError):
    """What is wrong with the form, naming the field, never its value."""


def question_request(form: dict[str, Any], *, tenant: str, workspaces: set[str],
                     people: set[str]) -> CreateClarificationRequest:
    """The create request for ``form`` (``workspace``, ``question``, ``severity``,
    ``candidates`` [{label, date}], ``authors``/``named``/``owners`` person ids, ``title`` of
    the document (optional), ``restricted``: only stewards may read the document)."""
    workspace = _text(form, "workspace", 100)
    if workspace not in workspaces:
        raise QuestionError("workspace: not one of the tenant's workspaces")
    severity = _text(form, "severity", 20)
    if severity not in SEVERITIES:
        raise QuestionError("severity: expected low, normal, high or critical")
    question = _text(form, "question", MAX_QUESTION)
    candidates = form.get("candidates")
    if not isinstance(candidates, list) or not 1 <= len(candidates) <= 4:
        raise QuestionError("candidates: expected one to four dates")
    inputs = [_candidate(c, at) for at, c in enumerate(candidates)]
    authority = {key: _people(form, key, people) for key in ("authors", "named", "owners")}
    if not any(authority.values()):
        raise QuestionError("authors: name at least one person to ask")
    number = next(_numbers)
    restricted = form.get("restricted") is True
    title = (_text(form, "title", MAX_QUESTION) if form.get("title")
             else f"Sandbox document {number}")
    roles = ["steward"] if restricted else ["viewer", "editor", "steward"]
    try:
        return CreateClarificationRequest.model_validate({
            "tenantId": tenant, "workspaceId": workspace, "target": f"fact-sandbox-{number}",
            "question": question, "kind": "relative_date" if len(inputs) > 1 else
            "low_confidence_extraction", "severityHint": severity,
            "detectorConfidence": 0.9, "appliedCandidateConfidence": 0.5,
            "candidates": inputs,
            "authority": {"authoredBy": authority["authors"], "named": authority["named"],
                          "ownedBy": authority["owners"]},
            "document": {"documentId": f"doc-sandbox-{number}",
                         "title": title,
                         "url": f"https://docs.example/sandbox/{number}",
                         "contentHash": f"sha256:sandbox{number:04d}",
                         "acl": {"workspaceId": workspace, "readRoles": roles}},
            "span": {"start": 0, "end": len(question), "text": question},
        })
    except ValidationError as exc:  # the first field at fault, by name
        where = ".".join(str(p) for p in exc.errors()[0]["loc"])
        raise QuestionError(f"{where}: not accepted by the core's request model") from None


def _text(form: dict[str, Any], key: str, longest: int) -> str:
    value = form.get(key)
    if not isinstance(value, str) or not value.strip():
        raise QuestionError(f"{key}: required")
    if len(value) > longest:
        raise QuestionError(f"{key}: at most {longest} characters")
    return value.strip()


def _candidate(given: object, at: int) -> dict[str, Any]:
    if not isinstance(given, dict):
        raise QuestionError(f"candidates.{at}: expected a label and a date")
    label = _text(given, "label", MAX_LABEL) if given.get("label") else f"reading {at + 1}"
    raw = given.get("date")
    try:
        day = date.fromisoformat(raw) if isinstance(raw, str) else None
    except ValueError:
        day = None
    if day is None:
        raise QuestionError(f"candidates.{at}.date: expected a date as YYYY-MM-DD")
    return {"label": label, "validFrom": datetime(day.year, day.month, day.day, tzinfo=UTC)}


def _people(form: dict[str, Any], key: str, people: set[str]) -> list[str]:
    given = form.get(key) or []
    if not isinstance(given, list) or not all(isinstance(p, str) for p in given):
        raise QuestionError(f"{key}: expected a list of person ids")
    if any(p not in people for p in given):
        raise QuestionError(f"{key}: names someone who is not in the tenant")
    return list(dict.fromkeys(given))

"""Audit event ids: one per event, the same for a replay of it.

Every construction of an ``AuditEvent`` in bot/, adapters/ and clarify_bot/ is found in the
source (so a new one cannot be added without deciding what tells its occurrences apart); each
event type the code emits gets distinct ids for distinct occurrences and one id for a replay;
an event outside any clarification without an occurrence is refused. The Slack refusals are
then checked through the adapter: two refused callbacks have two ids, a resent one the same."""

from __future__ import annotations

import ast
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from slack_bolt.request.async_request import AsyncBoltRequest

from adapters.slack.refusals import INSTALL_REFUSALS, OTHER, code
from bot.audit import AuditEvent, occurrence_of
from bot.core.models import ReasonCode
from tests.slack.conftest import Stack, payload_of
from tests.slack.test_slack_security import delivered

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("bot", "adapters", "clarify_bot")
AT = datetime(2026, 7, 4, 9, 0, tzinfo=UTC)
TYPE_NAME = re.compile(r"^[a-z]+(_[a-z]+)+$|^(skipped|digested|delivery|escalated)$")
# what a helper that builds the event is called with: (helper, position of the type argument)
HELPERS = {"event": 1, "_event": 2, "_audit": 2}


def constructions() -> list[tuple[str, ast.Call]]:
    """Every ``AuditEvent(...)`` call in the packages, with its file and line."""
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.Call) and _name(node.func) == "AuditEvent":
                    found.append((f"{path.relative_to(ROOT)}:{node.lineno}", node))
    return found


def emitted_types() -> set[str]:
    """Every event type the packages emit: literal ``type=`` values of the constructions and
    the literal types handed to the helpers that build them (trail.event, _event, _audit)."""
    types: set[str] = set()
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not isinstance(node, ast.Call):
                    continue
                name = _name(node.func)
                values: list[ast.expr] = []
                if name == "AuditEvent":
                    values = [k.value for k in node.keywords if k.arg == "type"]
                elif name in HELPERS and len(node.args) > HELPERS[name]:
                    values = [node.args[HELPERS[name]]]
                    # _audit(c, card, "reminder_sent" if … else …): both branches
                    if isinstance(values[0], ast.IfExp):
                        values = [values[0].body, values[0].orelse]
                types |= {v.value for v in values if isinstance(v, ast.Constant)
                          and isinstance(v.value, str) and TYPE_NAME.match(v.value)}
    return types


def _name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def test_every_construction_names_its_occurrence() -> None:
    sites = constructions()
    assert len(sites) >= 12  # the scan finds them (installs, callbacks, engine, answers)
    missing = [where for where, call in sites
               if not any(k.arg == "occurrence" for k in call.keywords)]
    assert missing == []


def test_the_scan_finds_every_kind_of_event() -> None:
    types = emitted_types()
    assert {"slack_install_refused", "slack_installed", "callback_refused", "skipped",
            "delivery", "escalated", "steward_unreachable", "dead_letter_reported",
            "answer_forwarded", "answer_refused", "answer_parked", "decline_refused",
            "reminder_sent", "reminder_skipped", "digest_sent"} <= types


def _event(type_: str, *, occurrence: str | None, clarification_id: str = "clr-1",
           **more: Any) -> AuditEvent:
    return AuditEvent(type=type_, at=AT, clarification_id=clarification_id, message="m",
                      occurrence=occurrence, **more)


@pytest.mark.parametrize("type_", sorted(emitted_types()))
@pytest.mark.parametrize("scope", ["clr-1", "-"])
def test_distinct_occurrences_get_distinct_ids_and_a_replay_the_same(type_: str,
                                                                     scope: str) -> None:
    one = _event(type_, occurrence=occurrence_of("a"), clarification_id=scope,
                 person_id="p-sarah", attempt=1)
    replay = _event(type_, occurrence=occurrence_of("a"), clarification_id=scope,
                    person_id="p-sarah", attempt=1)
    other = _event(type_, occurrence=occurrence_of("b"), clarification_id=scope,
                   person_id="p-sarah", attempt=1)
    assert one.event_id == replay.event_id != other.event_id
    assert one.event_id.startswith(f"bot.{type_}.")
    # and the rest of its identity (here the person) still tells events apart
    assert one.event_id != _event(type_, occurrence=occurrence_of("a"), clarification_id=scope,
                                  person_id="p-ben", attempt=1).event_id


def test_an_event_outside_a_clarification_must_name_its_occurrence() -> None:
    with pytest.raises(ValueError, match="occurrence"):
        _event("callback_refused", occurrence=None, clarification_id="-")
    assert "occurrence" in _event("callback_refused", occurrence="x",
                                  clarification_id="-").line()


def test_an_occurrence_quotes_nothing() -> None:
    made = occurrence_of("slack", "U0SARAH", "xoxb-secret-token")
    assert "U0SARAH" not in made and "xoxb" not in made and len(made) == 24


@pytest.mark.parametrize(("raw", "expected"), [
    ("access_denied", "access_denied"), ("invalid_state", "invalid_state"),
    ("<script>alert(1)</script>", OTHER), ("", OTHER), (None, OTHER),
    ("ACCESS_DENIED", OTHER), ("access_denied ", OTHER), ("x" * 10_000, OTHER)])
def test_install_refusal_codes_come_from_a_closed_list(raw: object, expected: str) -> None:
    assert code(raw) == expected and code(raw) in INSTALL_REFUSALS


async def test_refused_callbacks_get_their_own_ids_and_a_resent_one_the_same(
        stack: Stack) -> None:
    """Through the Slack adapter (bolt's Socket Mode path): two different refused callbacks
    are two events; the same callback delivered again is the same event."""
    cid, card = await delivered(stack, "U0SARAH", authority={"authored_by": ["p-sarah"]})

    async def over_socket(**kwargs: Any) -> None:
        payload = await payload_of(stack, "U0SARAH", card, "clarify.answer.1", **kwargs)
        await stack.adapter.kit.app.async_dispatch(AsyncBoltRequest(body=payload,
                                                                    mode="socket_mode"))
        return payload

    first = await over_socket(team_id="T0NOBODY", enterprise_id=None)
    await stack.adapter.kit.app.async_dispatch(AsyncBoltRequest(body=first, mode="socket_mode"))
    await over_socket(team_id="T0NOBODY2", enterprise_id=None)
    refused = stack.sink.of("callback_refused")
    assert [ev.reason_code for ev in refused] == [ReasonCode.TENANT_SCOPE_MISMATCH] * 3
    ids = [ev.event_id for ev in refused]
    assert ids[0] == ids[1] != ids[2]

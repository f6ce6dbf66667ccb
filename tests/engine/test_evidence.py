"""bot/engine/evidence.py: where a clarification stands, read from its record's evidence first
and its state word second, and how many confirmations its quorum still needs.

Each row of ``STANDINGS`` is one record as the core may answer it (read through the tolerant
reader, so unknown words read as the models say) and where the bot takes it to stand; the
engine's tests over HTTP (``test_engine_evidence.py``) check what a job then does.
"""

from __future__ import annotations

from typing import Any

import pytest

from bot.core.models import Clarification
from bot.core.tolerance import read_python
from bot.engine import evidence
from bot.engine.evidence import Standing
from tests.core.conftest import T0, clarification

B = Standing


def response(person: str, index: int, status: str, **more: Any) -> dict[str, Any]:
    return {"responseId": f"r-{person}-{index}-{status}", "responder": person,
            "rightsAtAnswerTime": "editor", "answerIndex": index, "channel": "slack",
            "responseTx": T0, "bindingStatus": status, **more}


def record(*, state: str = "open", quorum: dict[str, Any] | None = None,
           responses: tuple[dict[str, Any], ...] = (), required: int = 1,
           severity: str = "high", **more: Any) -> Clarification:
    body = clarification()
    body["candidates"] = [{"index": 0, "label": "a", "validFrom": T0},
                          {"index": 1, "label": "b", "validTo": T0}]
    body.update(state=state, severity=severity, responses=list(responses), **more)
    body["quorumPolicy"]["requiredConfirmations"] = required
    body["quorum"] = quorum if quorum is not None else {"state": "pending"}
    return read_python(Clarification, body)


STANDINGS: list[tuple[str, Clarification, Standing]] = [
    ("open, nothing recorded", record(), B.OPEN),
    ("an unknown word, nothing recorded", record(state="withdrawn"), B.OPEN),
    ("an unknown word over a bound response", record(
        state="under_review", responses=(response("p-a", 0, "bound"),)), B.BOUND),
    ("an unknown word over a steward's override after a conflict", record(
        state="under_review", required=2, responses=(
            response("p-a", 0, "binding_candidate"), response("p-b", 1, "binding_candidate"),
            response("p-s", 0, "steward_override"))), B.BOUND),
    ("an unknown word and status, a bound interval", record(
        state="under_review", responses=(response("p-a", 0, "ratified"),),
        boundInterval={"validFrom": T0}), B.BOUND),
    ("a bound fact version alone", record(state="under_review", boundFactVersionTx=T0),
     B.BOUND),
    ("a satisfied quorum alone", record(state="under_review", quorum={"state": "satisfied"}),
     B.BOUND),
    ("answered, no evidence", record(state="answered"), B.BOUND),
    ("conflicted, no evidence", record(state="conflicted"), B.CONFLICTED),
    ("a conflicted quorum under an unknown word", record(
        state="under_review", quorum={"state": "conflicted"}), B.CONFLICTED),
    ("binding-capable answers disagree under an unknown word", record(
        state="under_review", required=2, responses=(
            response("p-a", 0, "binding_candidate"),
            response("p-b", 1, "binding_candidate"))), B.CONFLICTED),
    ("a changed mind is no disagreement", record(
        state="under_review", required=2, responses=(
            response("p-a", 1, "binding_candidate"),
            response("p-a", 0, "binding_candidate"),
            response("p-b", 0, "binding_candidate"))), B.OPEN),
    ("an answer recorded as superseded is no disagreement", record(
        state="partially_confirmed", required=3, responses=(
            response("p-a", 1, "binding_candidate", supersededBy="r-later"),
            response("p-b", 0, "binding_candidate"))), B.OPEN),
    ("an attestation that differs is no disagreement", record(
        state="attested", required=2, responses=(
            response("p-a", 0, "binding_candidate"), response("p-v", 1, "attestation"))),
     B.OPEN),
    ("a late conflicting attestation leaves it bound", record(
        state="answered", responses=(
            response("p-a", 0, "bound"), response("p-b", 1, "conflicting"))), B.BOUND),
    ("bound evidence wins over a conflicted word", record(
        state="conflicted", responses=(response("p-s", 0, "steward_override"),)), B.BOUND),
]


@pytest.mark.parametrize(("record_", "stands"), [(c, s) for _, c, s in STANDINGS],
                         ids=[name for name, _, _ in STANDINGS])
def test_where_a_clarification_stands(record_: Clarification, stands: Standing) -> None:
    """The evidence decides first (bound, then conflicted), the state word only after it."""
    assert evidence.standing(record_) is stands
    assert evidence.settled(record_) is (stands is not Standing.OPEN)


@pytest.mark.parametrize(("quorum", "required", "responses", "remaining"), [
    ({"state": "pending", "required": 2, "confirmations": 1, "remaining": 1}, 2, (), 1),
    ({"state": "pending"}, 2, (), 2),  # derived from the policy
    ({"state": "pending"}, 2, (response("p-a", 0, "binding_candidate"),), 1),
    ({"state": "pending"}, 2, (response("p-a", 0, "ratified"),), 2),  # unknown: no confirmation
    ({"state": "pending", "required": 2}, 2, (), 2),  # a count left out: the policy's
    ({"state": "not_required"}, 1, (), 0),
])
def test_the_confirmations_still_needed(quorum: dict[str, Any], required: int,
                                        responses: tuple[dict[str, Any], ...],
                                        remaining: int) -> None:
    """The core's remaining count, else the policy's requirement less the confirmations on
    record; a status the bot does not know confirms nothing."""
    assert evidence.remaining(record(quorum=quorum, required=required,
                                     responses=responses)) == remaining


@pytest.mark.parametrize(("severity", "required", "quorum", "counts"), [
    ("critical", 1, "not_required", True), ("critical", 2, "pending", True),
    ("normal", 2, "pending", True),  # an unknown severity reads as normal: the quorum decides
    ("normal", 1, "pending", False), ("high", 2, "not_required", False),
])
def test_who_counts_toward_a_pass(severity: str, required: int, quorum: str,
                                  counts: bool) -> None:
    """A pass counts only confirmers for a critical question or a quorum of several."""
    c = record(severity=severity, required=required, quorum={"state": quorum})
    assert evidence.counts_confirmers(c) is counts


def test_the_confirmation_so_far_follows_the_count_not_the_status_word() -> None:
    """The core's confirmedBy names the confirmation whatever its status word says; without
    it, a status the bot does not know is an answer recorded, not a confirmation."""
    counted = record(required=2, quorum={"state": "pending", "confirmedBy": ["p-a"]},
                     responses=(response("p-a", 1, "ratified"),))
    found = evidence.confirmation(counted)
    assert found is not None and found.certain and found.responders == ("p-a",)
    assert found.interval.valid_to is not None  # candidate 1's interval
    unknown = record(required=2, responses=(response("p-a", 1, "ratified"),))
    found = evidence.confirmation(unknown)
    assert found is not None and not found.certain and found.responders == ("p-a",)
    assert evidence.named(unknown) == ["p-a"]
    attested = record(required=2, responses=(response("p-v", 1, "attestation"),))
    assert evidence.confirmation(attested) is None and evidence.named(attested) == []

"""Unknown is not absent: a binding status or a ranked person's relation the bot does not know
reads as the vocabulary's ``UNKNOWN`` (never as a word that means something else), is counted,
and ``unknown`` stays out of the published contract."""

from __future__ import annotations

import pytest

from bot.core import models
from bot.core.models import AuthorityRelation, BindingStatus, Clarification, ClarificationState
from bot.core.openapi import build_openapi
from bot.core.tolerance import read_python
from bot.metrics import REGISTRY
from tests.core.conftest import T0, clarification


def _counted(model: str) -> float:
    return REGISTRY.value("clarify_core_tolerated_total", kind="unknown_value", model=model)


def test_an_unknown_binding_status_is_neither_a_confirmation_nor_an_attestation() -> None:
    """A newer core's status reads as UNKNOWN: the quorum derived from the record counts no
    confirmation for it, and it is counted by enum."""
    body = clarification()
    body["quorumPolicy"]["requiredConfirmations"] = 2
    body["quorum"] = {"state": "pending"}
    body["responses"] = [{"responseId": "r-1", "responder": "p-ana",
                          "rightsAtAnswerTime": "editor", "answerIndex": 0, "channel": "slack",
                          "responseTx": T0, "bindingStatus": "provisional"}]
    before = _counted("BindingStatus")
    c = read_python(Clarification, body)
    assert c.responses[0].binding_status is BindingStatus.UNKNOWN
    assert (c.quorum.confirmations, c.quorum.remaining, c.quorum.confirmed_by) == (0, 2, [])
    assert _counted("BindingStatus") == before + 1


def test_an_unknown_relation_keeps_its_ranked_person() -> None:
    """The entry is kept with the relation UNKNOWN (the card's neutral why line); the other
    entries keep their own relations."""
    body = clarification()
    body["relations"] = [{"personId": "p-ana", "relation": "reviewed_by"},
                         {"personId": "p-ben", "relation": "named"}]
    before = _counted("AuthorityRelation")
    c = read_python(Clarification, body)
    assert [(r.person_id, r.relation) for r in c.relations] == [
        ("p-ana", AuthorityRelation.UNKNOWN), ("p-ben", AuthorityRelation.NAMED)]
    assert _counted("AuthorityRelation") == before + 1


def test_a_binding_response_gives_the_bound_interval_whatever_the_state_word() -> None:
    """The bound interval and its time come from the binding response also under a state word
    the bot does not know (it reads as open)."""
    body = clarification()
    body["state"] = "under_review"
    body["responses"] = [{"responseId": "r-1", "responder": "p-ana",
                          "rightsAtAnswerTime": "editor", "answerIndex": 0, "channel": "slack",
                          "responseTx": T0, "bindingStatus": "bound"}]
    c = read_python(Clarification, body)
    assert c.state is ClarificationState.OPEN
    assert c.bound_interval is not None and c.bound_interval.valid_from is not None
    assert c.bound_fact_version_tx is not None


@pytest.mark.parametrize("enum", ["BindingStatus", "AuthorityRelation"])
def test_unknown_is_no_word_of_the_published_contract(enum: str) -> None:
    """The schema the bot publishes lists the contract's words only."""
    words = build_openapi()["components"]["schemas"][enum]["enum"]
    assert "unknown" not in words and len(words) == len(getattr(models, enum)) - 1

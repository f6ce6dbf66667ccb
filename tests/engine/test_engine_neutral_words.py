"""Unknown values keep a neutral sentence: a relation the bot does not know still says why the
person was asked, and a binding status it does not know still shows the answer so far on the
other asked people's cards (as the first confirmation when the quorum counts it, as an answer
recorded when only the status word would say).

The bot reads the reference core through a proxy that rewrites what the core answers (the
relation of every ranked person, the responses' binding statuses, the state word), over real
HTTP, on both contracts and both stores; Sarah's answer goes through the bot's answer path.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from adapters.slack.render import render
from bot.channels.recording import SentMessage, Updated
from bot.chat import Callback
from bot.metrics import REGISTRY
from cards.views import QuestionView
from devcore.demo import answer_now
from tests.engine.conftest import CODEC, Rig
from tests.engine.test_engine_evidence import all_of, unknown_state, unknown_statuses
from tests.support.rewriting_proxy import (  # noqa: F401 (the fixtures)
    Body,
    RewritingProxy,
    core_url_fixture,
    proxy_fixture,
    truth_url_fixture,
)

CONNECTED = "You were asked because you are connected to this document."
NAMED = "You were asked because you are named in this document."
FIRST = "First confirmation recorded: "
RECORDED = "An answer has been recorded: "


def shown(item: SentMessage | Updated) -> str:
    view = item.message if isinstance(item, SentMessage) else item.view
    return json.dumps(render(view, codec=CODEC), ensure_ascii=False)


def ranked_as(relation: str, *people: str) -> Callable[[Body], None]:
    """The core names ``relation`` as each of ``people``'s (on either contract)."""
    def rewrite(body: Body) -> None:
        body["relations"] = [{"personId": person, "relation": relation} for person in people]
    return rewrite


def tolerated(enum: str) -> float:
    return REGISTRY.value("clarify_core_tolerated_total", kind="unknown_value", model=enum)


@pytest.mark.parametrize(("word", "line"), [("reviewed_by", CONNECTED), ("named", NAMED)])
async def test_an_unknown_relation_keeps_a_neutral_why_line(
        rig: Rig, proxy: RewritingProxy, word: str, line: str) -> None:
    """A ranked person whose relation the bot does not know is told they are connected to the
    document; a known relation keeps its own sentence, and no other why line is shown."""
    proxy.clarification = ranked_as(word, "p-sarah")
    before = tolerated("AuthorityRelation")
    await rig.create(authority={"named": ["p-sarah"]}, severity="high")
    await rig.burst()
    [card] = rig.channel.to("p-sarah")
    text = shown(card)
    assert line in text
    assert text.count("You were asked because") == 1
    assert (tolerated("AuthorityRelation") > before) is (line == CONNECTED)


async def test_no_relation_named_means_no_why_line(rig: Rig, proxy: RewritingProxy) -> None:
    """A core that names no relation (the baseline leaves them out) gets no why line: unknown is
    not absent."""
    def none(body: Body) -> None:
        body.pop("relations", None)
    proxy.clarification = none
    await rig.create(authority={"named": ["p-sarah"]}, severity="high")
    await rig.burst()
    [card] = rig.channel.to("p-sarah")
    assert "You were asked because" not in shown(card)


@pytest.mark.parametrize("words", ["status", "status and state"])
async def test_an_unknown_binding_status_keeps_the_banner(
        rig: Rig, proxy: RewritingProxy, contract: str, words: str) -> None:
    """After Sarah's answer to a critical question, Ahmed's card shows it whatever binding
    status (and state word) the core names: as the first confirmation where the quorum counts
    her (the full contract's confirmedBy), as an answer recorded where only the unknown status
    would say (the baseline), never without a banner."""
    cid = await rig.create(authority={"named": ["p-sarah", "p-ahmed"]}, severity="critical")
    await rig.burst()
    [sarah] = rig.channel.to("p-sarah")
    [ahmed] = rig.channel.to("p-ahmed")
    proxy.clarification = (unknown_statuses if words == "status"
                           else all_of(unknown_statuses, unknown_state))
    assert isinstance(sarah.message, QuestionView)
    await answer_now(rig.engine.answers, Callback(
        platform="slack", tenant_id="acme", user_id="U0SARAH", team_id="T0ACME",
        enterprise_id="E0ACME", aad_tenant_id=None, clarification_id=cid,
        card_ref=sarah.message.card_ref, message_ref=sarah.ref, answer_index=0))
    await rig.engine.answers.followups.drain()
    [painted] = [u for u in rig.channel.updates if u.ref == ahmed.ref]
    assert isinstance(painted.view, QuestionView) and painted.view.banner is not None
    text = shown(painted)
    expected = FIRST if contract == "full" else RECORDED
    assert expected in text and "(Sarah Chen). Do you agree?" in text
    assert painted.view.banner.certain is (contract == "full")
    assert "clarify.answer.0" in text  # still answerable


def unknown_outcome(body: Body) -> None:
    """A newer core's word for what an answer did."""
    body["outcome"] = "bound_with_reason"


async def test_an_unknown_outcome_of_an_answer_that_bound_shows_it_bound(
        rig: Rig, proxy: RewritingProxy) -> None:
    """Sarah, an editor, answers a normal question and her answer binds it, but the core names
    the outcome with a word the bot does not know (read as the least it surely is, an
    attestation). The record she is shown follows the evidence (her response is the binding
    one): recorded as evidence, never "a steward or editor must confirm it"."""
    from cards.views import OutcomeKind, OutcomeView

    cid = await rig.create(authority={"named": ["p-sarah"]}, severity="high")
    await rig.burst()
    [sarah] = rig.channel.to("p-sarah")
    assert isinstance(sarah.message, QuestionView)
    proxy.inner.alter("POST /v1/clarifications/{clarificationId}/answer", unknown_outcome)
    await answer_now(rig.engine.answers, Callback(
        platform="slack", tenant_id="acme", user_id="U0SARAH", team_id="T0ACME",
        enterprise_id="E0ACME", aad_tenant_id=None, clarification_id=cid,
        card_ref=sarah.message.card_ref, message_ref=sarah.ref, answer_index=0))
    await rig.engine.answers.followups.drain()
    own = [u.view for u in rig.channel.updates if u.ref == sarah.ref]
    assert own and isinstance(own[-1], OutcomeView)
    assert own[-1].kind is OutcomeKind.RECORDED
    assert "must confirm it" not in shown([u for u in rig.channel.updates
                                           if u.ref == sarah.ref][-1])

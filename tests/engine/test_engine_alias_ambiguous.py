"""ALIAS_AMBIGUOUS in both directions, against the reference core over HTTP: one person with
several chat users, and one chat user claimed by several people, who is asked by nobody and
whose callbacks are refused with that code (not as unverified)."""

from __future__ import annotations

import pytest

from bot.answering.answers import AnswerStatus
from bot.chat import Callback
from bot.core import errors as e
from bot.core.models import ReasonCode, SlackAlias, SlackIdentity
from cards.outcome_text import outcome_text
from cards.views import OutcomeKind
from devcore.core import ReferenceCore
from devcore.demo import answer_now
from tests.engine.conftest import Rig

SHARED = SlackAlias(user_id="U0SARAH", team_id="T0ACME", enterprise_id="E0ACME", verified=True)


def share_sarahs_slack_user(core: ReferenceCore) -> None:
    """Ahmed's only Slack alias becomes Sarah's user: one chat user, two people."""
    core.directory.people[("acme", "p-ahmed")].aliases.slack[:] = [SHARED]


async def test_reference_core_refuses_to_resolve_a_chat_user_claimed_twice(
    rig: Rig, core: ReferenceCore
) -> None:
    """POST /v1/people/resolve answers 409 ALIAS_AMBIGUOUS for a user two people claim."""
    share_sarahs_slack_user(core)
    identity = SlackIdentity(user_id="U0SARAH", team_id="T0ACME", enterprise_id="E0ACME")
    with pytest.raises(e.AliasAmbiguous):
        await rig.bot.resolve_person(tenant_id="acme", identity=identity)


async def test_alias_ambiguous_shared_chat_user_is_asked_by_nobody(
    rig: Rig, core: ReferenceCore
) -> None:
    """Both people claiming one Slack user are skipped with ALIAS_AMBIGUOUS (audit and core
    trail); no card reaches that user; the next candidate is asked instead."""
    share_sarahs_slack_user(core)
    cid = await rig.create(authority={"authored_by": ["p-sarah", "p-ahmed", "p-priya"]},
                           severity="high")
    await rig.burst()
    assert [s.address.user_id for s in rig.channel.sent if s.key.kind == "question"] == [
        "U0PRIYA"]
    assert "U0SARAH" not in {s.address.user_id for s in rig.channel.sent}
    audited = {(ev.person_id, ev.reason_code) for ev in rig.events("skipped", cid)}
    assert audited == {("p-sarah", ReasonCode.ALIAS_AMBIGUOUS),
                       ("p-ahmed", ReasonCode.ALIAS_AMBIGUOUS)}
    c = await rig.bot.get_clarification(clarification_id=cid)
    trail = {(ev.person_id, ev.reason_code) for ev in c.events if ev.type == "skipped"}
    assert trail == audited
    assert c.asked == ["p-priya"]


async def test_alias_ambiguous_steward_gets_no_escalation(rig: Rig, core: ReferenceCore) -> None:
    """A steward whose Slack user someone else claims is not written to either: the
    escalation fails on record with ALIAS_AMBIGUOUS instead of reaching a shared account."""
    core.directory.people[("acme", "p-olga")].aliases.slack[:] = [
        SlackAlias(user_id="U0MARIA", team_id="T0ACME", enterprise_id="E0ACME")]
    cid = await rig.create(authority={"authored_by": ["p-tom"]})
    await rig.burst()
    assert rig.channel.sent == []
    (failed,) = rig.events("escalation_failed", cid)
    assert failed.reason_code is ReasonCode.ALIAS_AMBIGUOUS
    assert failed.skips[0].reason_code is ReasonCode.NO_READ_PERMISSION


async def test_callback_from_a_shared_chat_user_is_refused_as_ambiguous(
    rig: Rig, core: ReferenceCore
) -> None:
    """A click from a Slack user two people claim is refused with ALIAS_AMBIGUOUS (audit and
    core trail), not RESPONDER_NOT_AUTHORISED, nothing reaches the core's answers, and the card
    the person sees says the account is linked to more than one person."""
    cid = await rig.create(authority={"authored_by": ["p-sarah"]}, severity="high")
    await rig.burst()
    (card,) = [s for s in rig.channel.sent if s.key.kind == "question"]
    share_sarahs_slack_user(core)
    receipt = await answer_now(rig.engine.answers, Callback(
        platform="slack", tenant_id="acme", user_id="U0SARAH", team_id="T0ACME",
        enterprise_id="E0ACME", aad_tenant_id=None, clarification_id=cid,
        card_ref=card.message.card_ref, message_ref=card.ref, answer_index=0))  # type: ignore[union-attr]
    assert receipt.verdict is AnswerStatus.UNVERIFIED and receipt.result is None
    (note,) = rig.channel.notes  # told privately, next to the card clicked
    assert note.user_id == "U0SARAH" and note.view is not None
    assert note.view.kind is OutcomeKind.IDENTITY_SHARED
    assert "linked to more than one person" in outcome_text(note.view).headline
    (refused,) = rig.events("answer_refused", cid)
    assert refused.reason_code is ReasonCode.ALIAS_AMBIGUOUS
    c = await rig.bot.get_clarification(clarification_id=cid)
    assert c.responses == []
    codes = [ev.reason_code for ev in c.events if ev.type == "answer_refused"]
    assert codes == [ReasonCode.ALIAS_AMBIGUOUS]


async def test_callback_from_a_user_nobody_claims_says_it_is_linked_to_nobody(
    rig: Rig, core: ReferenceCore
) -> None:
    """A click from a Slack user of the tenant's workspace that no person has (the resolve's
    404) is refused RESPONDER_NOT_AUTHORISED, and the card says the account is linked to
    nobody in the directory, not that it is unverified."""
    cid = await rig.create(authority={"authored_by": ["p-sarah"]}, severity="high")
    await rig.burst()
    (card,) = [s for s in rig.channel.sent if s.key.kind == "question"]
    receipt = await answer_now(rig.engine.answers, Callback(
        platform="slack", tenant_id="acme", user_id="U0NOBODY", team_id="T0ACME",
        enterprise_id="E0ACME", aad_tenant_id=None, clarification_id=cid,
        card_ref=card.message.card_ref, message_ref=card.ref, answer_index=0))  # type: ignore[union-attr]
    assert receipt.verdict is AnswerStatus.UNVERIFIED
    (note,) = rig.channel.notes
    assert note.view is not None and note.view.kind is OutcomeKind.IDENTITY_UNKNOWN
    assert "not linked to anyone" in outcome_text(note.view).headline
    (refused,) = rig.events("answer_refused", cid)
    assert refused.reason_code is ReasonCode.RESPONDER_NOT_AUTHORISED
    c = await rig.bot.get_clarification(clarification_id=cid)
    assert c.responses == []

"""Unreachable quorum: a critical question with fewer eligible people than confirmations it needs
tells the steward in the same pass who was asked and how many confirmations are still missing,
and its last attempt later says who confirmed, never that nobody could be asked."""

from __future__ import annotations

from datetime import timedelta

from bot.core.models import AnswerRequest, ReasonCode, Role
from bot.core.models import Channel as ContractChannel
from cards.views import StewardEscalationView, StewardQuorumView
from tests.engine.conftest import Rig

WINDOW = timedelta(hours=48)


def quorum_notices(rig: Rig) -> list[StewardQuorumView]:
    return [s.message for s in rig.channel.to("p-maria")
            if isinstance(s.message, StewardQuorumView)]


async def test_quorum_unreachable_steward_told_in_the_same_pass(rig: Rig) -> None:
    """Two confirmations needed; Sarah can confirm, Lee (unverified) cannot, Olga has no alias:
    after one burst the steward's notice names Sarah and Lee as asked, one confirmation
    missing, Olga's skip reason; the event carries the skip as a field, in both trails."""
    cid = await rig.create(authority={"authored_by": ["p-sarah", "p-lee", "p-olga"]},
                           severity="critical")
    await rig.burst()
    asked = sorted(s.address.person_id for s in rig.channel.sent if s.key.kind == "question")
    assert asked == ["p-lee", "p-sarah"]
    (notice,) = quorum_notices(rig)
    assert notice.clarification_id == cid
    assert (notice.required, notice.missing) == (2, 1)
    assert notice.asked == ("Sarah Chen", "Lee Park")
    assert [(s.person, s.reason) for s in notice.skipped] == [
        ("Olga Ivanova", ReasonCode.NO_DELIVERY_ALIAS)]
    text = rig.rendered(next(s for s in rig.channel.sent if s.message is notice))
    assert "Asked: Sarah Chen and Lee Park" in text
    assert "one more confirmation is still missing" in text
    (event,) = rig.events("quorum_unreachable", cid)
    assert [(s.person_id, s.reason_code) for s in event.skips] == [
        ("p-olga", ReasonCode.NO_DELIVERY_ALIAS)]
    assert event.extra["missing"] == "1" and event.extra["asked"] == "p-sarah,p-lee"
    c = await rig.bot.get_clarification(clarification_id=cid)
    (core_event,) = [ev for ev in c.events if ev.type == "quorum_unreachable"]
    if rig.contract == "full":  # a baseline core's events carry one code, on the skips
        assert core_event.reason_codes == [ReasonCode.NO_DELIVERY_ALIAS]
    await rig.burst()
    assert len(quorum_notices(rig)) == 1  # once per clarification


async def test_quorum_reachable_sends_no_notice(rig: Rig) -> None:
    """Two editors who can both confirm: no unreachable-quorum notice."""
    await rig.create(authority={"authored_by": ["p-sarah", "p-olga", "p-ahmed"]},
                     severity="critical")
    await rig.burst()
    assert quorum_notices(rig) == [] and rig.events("quorum_unreachable") == []


async def test_escalation_after_unreachable_quorum_names_who_confirmed(rig: Rig) -> None:
    """Sarah confirms after the notice; one window later the job comes straight back as the
    steward escalation (no re-walk of the skipped), which says who confirmed and that more
    confirmations are needed, not that nobody could be asked."""
    cid = await rig.create(authority={"authored_by": ["p-sarah", "p-olga"]}, severity="critical")
    await rig.burst()
    (notice,) = quorum_notices(rig)
    assert notice.asked == ("Sarah Chen",) and notice.missing == 1
    await rig.bot.answer_clarification(clarification_id=cid, request=AnswerRequest(
        answer_index=0, responder="p-sarah", rights=Role.EDITOR, channel=ContractChannel.SLACK))
    await rig.later(WINDOW + timedelta(minutes=2))
    escalation = rig.channel.sent[-1].message
    assert isinstance(escalation, StewardEscalationView)
    assert escalation.confirmed == ("Sarah Chen",) and escalation.unanswered == ()
    text = rig.rendered(rig.channel.sent[-1])
    assert "Confirmed so far: Sarah Chen" in text
    assert "none of the people best placed to answer could be asked" not in text
    skips = [ev for ev in rig.events("skipped", cid) if ev.person_id == "p-olga"]
    assert len(skips) == 1  # the ranking was not walked again

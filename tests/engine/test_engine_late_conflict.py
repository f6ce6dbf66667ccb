"""After binding, a differing answer reaches the steward once per late responder (spec §12
clarify_post_binding_conflict), through the handler's idempotent delivery."""

from __future__ import annotations

from bot.core.models import (
    AnswerCustomInput,
    AnswerOutcome,
    AnswerRequest,
    AnswerResult,
    ClarificationState,
    Role,
)
from bot.core.models import (
    Channel as ContractChannel,
)
from bot.engine.stewards import LATE_CONFLICT_KIND
from tests.engine.conftest import Rig

SPAN = "The renewed term is effective next quarter."
QUESTION = "When does the Harbor Street lease renewal take effect?"


async def _answer(rig: Rig, cid: str, responder: str, *, index: int | None = None,
                  custom: AnswerCustomInput | None = None) -> AnswerResult:
    request = AnswerRequest(answer_index=index, answer_custom=custom, responder=responder,
                            rights=Role.EDITOR, channel=ContractChannel.CLI)
    receipt = await rig.bot.answer_clarification(clarification_id=cid, request=request)
    return receipt.result


def _late_notices(rig: Rig) -> list:
    return [s for s in rig.channel.to("p-maria") if s.key.kind == LATE_CONFLICT_KIND]


async def test_late_conflict_notice_is_sent_once_per_responder(rig: Rig) -> None:
    """Re-notifying for the same responder (even after a second, different late answer) sends
    nothing; another responder gets a notice of their own, each with one audit event."""
    cid = await rig.create(authority={"authored_by": ["p-ahmed"]})
    await _answer(rig, cid, "p-sarah", index=0)
    late = await _answer(rig, cid, "p-ahmed", index=1)
    assert late.outcome is AnswerOutcome.CONFLICTING_ATTESTATION
    c = await rig.bot.get_clarification(clarification_id=cid)
    await rig.engine.stewards.notify_late_conflict(c, "p-ahmed")
    await rig.engine.stewards.notify_late_conflict(c, "p-ahmed")
    again = await _answer(rig, cid, "p-ahmed", custom=AnswerCustomInput(
        valid_from="2027-01-01", valid_to="2027-02-01"))
    assert again.outcome is AnswerOutcome.CONFLICTING_ATTESTATION
    c = await rig.bot.get_clarification(clarification_id=cid)
    await rig.engine.stewards.notify_late_conflict(c, "p-ahmed")
    assert len(_late_notices(rig)) == 1

    await _answer(rig, cid, "p-olga", index=1)
    c = await rig.bot.get_clarification(clarification_id=cid)
    await rig.engine.stewards.notify_late_conflict(c, "p-olga")
    notices = _late_notices(rig)
    assert [n.message.responders for n in notices] == [  # type: ignore[union-attr]
        ("Ahmed Karimi",), ("Olga Ivanova",)]
    assert all(n.message.bound for n in notices)  # type: ignore[union-attr]
    assert len({n.key for n in notices}) == 2
    events = rig.events("steward_notified", cid)
    assert [ev.person_id for ev in events] == ["p-maria", "p-maria"]
    assert len({ev.event_id for ev in events}) == 2
    for notice in notices:
        text = rig.rendered(notice)
        assert "already bound" in text and SPAN not in text and QUESTION not in text
    assert c.state is ClarificationState.ANSWERED


async def test_no_late_notice_for_someone_who_never_answered(rig: Rig) -> None:
    """A responder with no response on the clarification gets the steward no notice."""
    cid = await rig.create(authority={"authored_by": ["p-ahmed"]})
    await _answer(rig, cid, "p-sarah", index=0)
    c = await rig.bot.get_clarification(clarification_id=cid)
    await rig.engine.stewards.notify_late_conflict(c, "p-ahmed")
    assert _late_notices(rig) == [] and rig.events("steward_notified", cid) == []

""""Not the right person" decided once for every platform (``bot.interaction.declines``), on the
engine's rig with no chat platform: who may decline a card, what a decline records (one skip
per person and clarification, on the core's trail and the audit), what the card shows, and
that the next candidate is asked at once where the core can start the next turn early."""

from __future__ import annotations

from datetime import timedelta

import pytest

from bot.chat import ChatUser
from bot.core.models import ClarificationState, ReasonCode
from bot.interaction.declines import Declined, DeclineStatus
from cards.views import OutcomeKind, OutcomeView
from tests.engine.conftest import Rig
from tests.support.answering import SLACK_IDS, card_of, click, consumers, queue

LEASE = timedelta(seconds=61)  # past the worker's lease (60 s), far inside the 48 h window


def user(person_id: str) -> ChatUser:
    return ChatUser(platform="slack", user_id=SLACK_IDS[person_id], team_id="T0ACME",
                    enterprise_id="E0ACME")


async def decline(rig: Rig, who: str, card_for: str, cid: str, *,
                  tenant: str | None = "acme") -> Declined:
    """``who`` presses "Not the right person" on the card sent to ``card_for``."""
    card = card_of(rig, card_for, cid)
    return await rig.engine.interactions.declines.decline(
        user(who), tenant=tenant, clarification_id=cid,
        card_ref=card.message.card_ref, paint=True)  # type: ignore[union-attr]


async def declined_skips(rig: Rig, cid: str) -> list[tuple[str | None, int | None]]:
    c = await rig.bot.get_clarification(clarification_id=cid)
    return [(ev.person_id, ev.attempt) for ev in c.events
            if ev.type == "skipped" and ev.reason_code is ReasonCode.CANDIDATE_DECLINED]


def audited_skips(rig: Rig) -> list[str | None]:
    return [ev.person_id for ev in rig.sink.of("skipped")
            if ev.reason_code is ReasonCode.CANDIDATE_DECLINED]


async def ahmed_then_sarah(rig: Rig) -> str:
    cid = await rig.create(authority={"authored_by": ["p-ahmed"], "named": ["p-sarah"]})
    await rig.burst()
    return cid


@pytest.mark.full_contract  # the expedite extension starts the next turn at once
async def test_a_decline_records_one_skip_paints_the_card_and_asks_the_next_at_once(
        rig: Rig) -> None:
    cid = await ahmed_then_sarah(rig)
    await rig.later(LEASE)  # the lease ran out: the job waits out the escalation window
    assert rig.channel.to("p-sarah") == []
    got = await decline(rig, "p-ahmed", "p-ahmed", cid)
    assert (got.status, got.recorded) == (DeclineStatus.PASSED_ON, True)
    assert isinstance(got.view, OutcomeView) and got.view.kind is OutcomeKind.PASSED_ON
    ahmed = card_of(rig, "p-ahmed", cid)
    assert [u.view for u in rig.channel.updates if u.ref == ahmed.ref] == [got.view]
    assert await declined_skips(rig, cid) == [("p-ahmed", 0)]
    assert audited_skips(rig) == ["p-ahmed"]
    await rig.burst()  # no clock movement: the next turn is due now
    assert card_of(rig, "p-sarah", cid)


async def test_pressing_again_records_nothing_more(rig: Rig) -> None:
    cid = await ahmed_then_sarah(rig)
    first = await decline(rig, "p-ahmed", "p-ahmed", cid)
    again = await decline(rig, "p-ahmed", "p-ahmed", cid)
    assert (first.recorded, again.recorded) == (True, False)
    assert again.status is DeclineStatus.PASSED_ON and again.view is not None
    assert again.view.kind is first.view.kind  # type: ignore[union-attr]
    await rig.engine.interactions.declines.tasks.drain()
    # (a baseline core's trail leaves the attempt out)
    assert [person for person, _ in await declined_skips(rig, cid)] == ["p-ahmed"]
    assert audited_skips(rig) == ["p-ahmed"]
    await rig.later(LEASE)
    assert len([s for s in rig.channel.to("p-sarah") if s.key.clarification_id == cid]) == 1


async def test_a_decline_of_someone_elses_card_is_refused_and_records_nothing(rig: Rig) -> None:
    cid = await ahmed_then_sarah(rig)
    got = await decline(rig, "p-sarah", "p-ahmed", cid)
    assert got.status is DeclineStatus.NOT_ALLOWED and got.view is None
    assert [ev.reason_code for ev in rig.sink.of("decline_refused")] == [
        ReasonCode.RESPONDER_NOT_AUTHORISED]
    assert await declined_skips(rig, cid) == [] and audited_skips(rig) == []
    assert rig.channel.updates == []  # his card as it was
    await rig.later(LEASE)
    assert rig.channel.to("p-sarah") == []


async def test_a_decline_from_a_workspace_mapped_to_no_tenant_is_refused(rig: Rig) -> None:
    cid = await ahmed_then_sarah(rig)
    got = await decline(rig, "p-ahmed", "p-ahmed", cid, tenant=None)
    assert got.status is DeclineStatus.NOT_ALLOWED
    assert [ev.reason_code for ev in rig.sink.of("decline_refused")] == [
        ReasonCode.TENANT_SCOPE_MISMATCH]
    assert await declined_skips(rig, cid) == []


async def test_a_decline_of_a_settled_question_passes_nothing_on(rig: Rig) -> None:
    """Ahmed answered (an author's answer binds a normal question); pressing "Not the right
    person" afterwards shows it moved on and records no skip."""
    cid = await ahmed_then_sarah(rig)
    await queue(rig, click(rig, "p-ahmed", cid, 0))
    await consumers(rig).run_burst()
    await rig.engine.answers.followups.drain()
    c = await rig.bot.get_clarification(clarification_id=cid)
    assert c.state is ClarificationState.ANSWERED
    got = await decline(rig, "p-ahmed", "p-ahmed", cid)
    assert got.status is DeclineStatus.MOVED_ON and got.recorded is False
    assert got.view is not None and got.view.kind is OutcomeKind.MOVED_ON
    assert await declined_skips(rig, cid) == [] and audited_skips(rig) == []

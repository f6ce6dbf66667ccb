"""A question card rebuilt later says what it said when sent, so that what a person sees is true:
when the question moves on, and that it was reminded once it was, as long as the question still
waits on the person; a card that no longer waits on them (settled, answered, past its move-on time)
says neither.

On the injected clock (Monday 6 July 2026, 09:00 UTC) with the reference core over HTTP and a
memory or Redis store: a critical question asks Sarah (London) and Ahmed (Berlin) at once, the
card refresher repaints the cards as the core's state changes (``refresh_now``: what the answer
path's follow-ups and the job handler call), and the recording channel keeps every repaint.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta

import pytest

from adapters.slack.render import render
from bot.channels.recording import SentMessage, Updated
from bot.core.models import AnswerRequest, Role
from bot.core.models import Channel as ContractChannel
from cards.views import OutcomeView, QuestionView
from tests.engine.conftest import CODEC, Rig, with_hours

# 09:00 UTC + the 60 s lease + 8 h, in Ahmed's zone (Berlin); he is the ranking's last turn
AHMED_LINE = "Goes to the workspace steward on 6 July at 19:01."
REMINDER_LINE = "Reminder: your answer is still needed."


@pytest.fixture(autouse=True)
def _people_with_zones(request: pytest.FixtureRequest) -> None:
    if "contract" in request.fixturenames and request.getfixturevalue("contract") == "baseline":
        pytest.skip("the baseline contract has no time zones: the lines are timed in Berlin")


def painted(rig: Rig, ref: str) -> list[Updated]:
    return [u for u in rig.channel.updates if u.ref == ref]


def shown(card: SentMessage | Updated) -> str:
    """The card as Slack receives it: what the person reads."""
    view = card.message if isinstance(card, SentMessage) else card.view
    return json.dumps(render(view, codec=CODEC), ensure_ascii=False)


async def confirm(rig: Rig, cid: str, person_id: str) -> None:
    await rig.bot.answer_clarification(clarification_id=cid, request=AnswerRequest(
        answer_index=0, responder=person_id, rights=Role.EDITOR, channel=ContractChannel.SLACK))


async def test_a_card_repainted_while_it_waits_keeps_its_move_on_and_reminder_lines(
        make_rig: Callable[..., Rig]) -> None:
    rig = make_rig(clarify=with_hours(escalation_window_hours=8))
    cid = await rig.create(authority={"named": ["p-sarah", "p-ahmed"]}, severity="critical")
    await rig.burst()
    [ahmed] = rig.channel.to("p-ahmed")
    [sarah] = rig.channel.to("p-sarah")
    assert isinstance(ahmed.message, QuestionView) and ahmed.message.moves_on_to_steward
    assert AHMED_LINE in shown(ahmed)

    # Sarah's first confirmation: Ahmed's card gets the banner, and still says when it moves on
    await confirm(rig, cid, "p-sarah")
    assert await rig.engine.refresher.refresh_now(cid) == 2
    [banner] = painted(rig, ahmed.ref)
    assert isinstance(banner.view, QuestionView) and banner.view.banner is not None
    view = banner.view
    assert (view.moves_on_at, view.moves_on_to_steward, view.reminded) == (
        ahmed.message.moves_on_at, True, False)
    assert AHMED_LINE in shown(banner) and REMINDER_LINE not in shown(banner)
    # hers no longer waits on her: her outcome, no move-on line
    [own] = painted(rig, sarah.ref)
    assert isinstance(own.view, OutcomeView) and "⏳" not in shown(own)

    # his one reminder (75 % of the window, 17:01 in Berlin), then another repaint: both lines
    await rig.later(timedelta(hours=6, minutes=1))
    reminded = painted(rig, ahmed.ref)[-1]
    assert isinstance(reminded.view, QuestionView) and reminded.view.reminded
    await rig.engine.refresher.refresh_now(cid)
    again = painted(rig, ahmed.ref)[-1]
    assert again is not reminded and isinstance(again.view, QuestionView)
    assert again.view.banner is not None and again.view.reminded
    assert AHMED_LINE in shown(again) and REMINDER_LINE in shown(again)

    # his confirmation settles it: his card says what it bound, and neither line
    await confirm(rig, cid, "p-ahmed")
    await rig.engine.refresher.refresh_now(cid)
    settled = painted(rig, ahmed.ref)[-1]
    assert isinstance(settled.view, OutcomeView)
    assert "⏳" not in shown(settled) and REMINDER_LINE not in shown(settled)


async def test_a_card_repainted_after_its_move_on_time_says_no_move_on_line(
        make_rig: Callable[..., Rig]) -> None:
    """Past the moment the card said, the line would be false: a repaint leaves it out (the
    card stays answerable: a late confirmation still counts)."""
    rig = make_rig(clarify=with_hours(escalation_window_hours=8))
    cid = await rig.create(authority={"named": ["p-sarah", "p-ahmed"]}, severity="critical")
    await rig.burst()
    [ahmed] = rig.channel.to("p-ahmed")
    assert isinstance(ahmed.message, QuestionView) and ahmed.message.moves_on_at is not None
    await confirm(rig, cid, "p-sarah")
    rig.clock.set(ahmed.message.moves_on_at)  # no worker pass: only the repaint
    await rig.engine.refresher.refresh_now(cid)
    [late] = painted(rig, ahmed.ref)
    assert isinstance(late.view, QuestionView) and late.view.banner is not None
    assert late.view.moves_on_at is None and "⏳" not in shown(late)

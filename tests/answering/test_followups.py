"""What follows a settled answer (``bot.answering.followups``), on the engine's rig with no chat
platform: the answering person's own card shows the outcome (found in the store's card records
for that person, never the message the callback names), everyone else's card is repainted, and
a chat identity that answers for nobody is told privately, next to what they clicked."""

from __future__ import annotations

from dataclasses import replace

from bot.channels.recording import Updated
from bot.chat import Callback
from cards.views import OutcomeKind, OutcomeView, QuestionView
from tests.engine.conftest import Rig
from tests.support.answering import card_of, click, consumers, queue, responses


async def answered(rig: Rig, cb: Callback) -> None:
    """The answer queued, forwarded, and everything that follows it shown."""
    await queue(rig, cb)
    await consumers(rig).run_burst()
    await rig.engine.answers.followups.drain()


def updates_of(rig: Rig, ref: str) -> list[Updated]:
    return [u for u in rig.channel.updates if u.ref == ref]


async def test_the_answering_persons_own_card_shows_the_outcome(rig: Rig) -> None:
    cid = await rig.create(authority={"named": ["p-sarah"]}, severity="high")
    await rig.burst()
    await answered(rig, click(rig, "p-sarah", cid, 0))
    assert await responses(rig, cid) == [("p-sarah", 0)]
    [own] = updates_of(rig, card_of(rig, "p-sarah", cid).ref)
    assert isinstance(own.view, OutcomeView) and own.view.clarification_id == cid
    assert own.view.kind is not OutcomeKind.PENDING
    assert rig.channel.notes == []  # the card shows it: no note beside it


async def test_the_outcome_goes_to_her_card_not_to_the_message_the_callback_names(
        rig: Rig) -> None:
    """A callback naming another message (a copied button, a forged value) never paints that
    message: the outcome goes to the card the store holds for the answering person."""
    cid = await rig.create(authority={"named": ["p-sarah"]}, severity="high")
    await rig.burst()
    other = "slack-msg-someone-elses"
    await answered(rig, replace(click(rig, "p-sarah", cid, 0), message_ref=other))
    assert updates_of(rig, other) == []
    [own] = updates_of(rig, card_of(rig, "p-sarah", cid).ref)
    assert isinstance(own.view, OutcomeView)


async def test_everyone_elses_card_is_repainted_with_what_she_answered(rig: Rig) -> None:
    """Sarah's answer to a critical question (a quorum of two): Ahmed's card is repainted as a
    question, with a banner saying what she answered; hers shows her outcome."""
    cid = await rig.create(authority={"named": ["p-sarah", "p-ahmed"]}, severity="critical")
    await rig.burst()
    await answered(rig, click(rig, "p-sarah", cid, 0))
    [painted] = updates_of(rig, card_of(rig, "p-ahmed", cid).ref)
    assert isinstance(painted.view, QuestionView) and painted.view.banner is not None
    assert isinstance(updates_of(rig, card_of(rig, "p-sarah", cid).ref)[-1].view, OutcomeView)


async def test_an_identity_that_answers_for_nobody_is_told_privately(rig: Rig) -> None:
    """A tap from a chat account linked to no person: nothing reaches the core, no card is
    painted, and a private note beside the clicked message says why."""
    cid = await rig.create(authority={"named": ["p-sarah"]}, severity="high")
    await rig.burst()
    stranger = replace(click(rig, "p-sarah", cid, 0), user_id="U0NOBODY")
    await answered(rig, stranger)
    assert await responses(rig, cid) == []
    assert rig.channel.updates == []
    [note] = rig.channel.notes
    assert (note.near, note.user_id) == (stranger.message_ref, "U0NOBODY")
    assert note.view is not None and note.view.kind is OutcomeKind.IDENTITY_UNKNOWN

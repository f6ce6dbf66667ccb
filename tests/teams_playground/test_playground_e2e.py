"""End to end against Microsoft's Teams emulator (the Agents Playground): the bot reached over
real HTTP, people pressing the cards' ``Action.Execute`` buttons as Teams reports them.

Skipped only while ``adapters/teams/mount.py`` does not exist; from then on they run (and in CI a
missing Playground fails them).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from bot.core.models import ClarificationState, QuorumState
from cards.actions import ActionCodec, ActionKind, ActionRef
from tests.support.card_text import teams_block_text
from tests.teams_playground import playground as pg
from tests.teams_playground.conftest import (
    ACTION_KEY,
    AHMED,
    SARAH,
    TeamsStack,
    needs_the_teams_adapter,
)

# slow: the Agents Playground (Node)
pytestmark = [needs_the_teams_adapter(), pytest.mark.slow]

CODEC = ActionCodec(ACTION_KEY.encode())
QUESTION = "When does the Harbor Street lease renewal take effect?"
# The Playground states "en-US" as the person's locale in every activity it sends (hard-coded in
# @microsoft/m365agentsplayground 0.2.28), so Sarah's cards carry US dates (docs/cards.md)
PLAYGROUND_LOCALE = "en-US"
FIRST = "July 1 – September 30"  # candidate 0 as the en-US cards write it
QUORUM = "This clarification affects a high-stakes date and requires two confirmations."
END_BEFORE_START = "The end date must be on or after the start date."


def _nodes(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _nodes(value)
    elif isinstance(node, list):
        for item in node:
            yield from _nodes(item)


def executes(card: Any) -> list[dict[str, Any]]:
    """Every Action.Execute of a card, in order, also those inside "Something else…"."""
    return [n for n in _nodes(card) if n.get("type") == "Action.Execute"]


def button(message: pg.Posted, clarification_id: str | None, kind: ActionKind, *,
           candidate: int | None = None) -> dict[str, Any]:
    """The Action.Execute of ``message`` for that question and kind (and candidate)."""
    for action in executes(message.cards):
        ref = CODEC.decode_teams_data(action["data"])
        if ref.kind is kind and (clarification_id is None
                                 or ref.clarification_id == clarification_id) \
                and (candidate is None or ref.candidate == candidate):
            return action
    raise AssertionError(f"no {kind.name} button for {clarification_id} in the card")


async def press(person: pg.Playground, message: pg.Posted, action: dict[str, Any],
                inputs: dict[str, str] | None = None) -> tuple[int, str]:
    """Teams' invoke for a pressed button (its data plus the card's input values)."""
    status, body = await person.invoke(message, action["verb"],
                                       {**action["data"], **(inputs or {})})
    return status, json.dumps(body, ensure_ascii=False)


async def shows(person: pg.Playground, message: pg.Posted, words: str, *,
                also: str = "") -> None:
    """Waits until the person sees ``words`` in the message (updated in their Playground), or
    in the card the invoke answered with (``also``)."""
    await person.wait_for(lambda: words in message.text or words in also,
                          f"{words!r} in the card")


async def test_playground_listens_on_loopback_only(make_teams_stack: Any) -> None:
    """The Playground binds every interface by default; preloaded, it listens on 127.0.0.1."""
    stack: TeamsStack = await make_teams_stack()
    sarah = await stack.person(SARAH)
    assert pg.listening_addresses(sarah.port) == {"0100007F"}  # 127.0.0.1, nothing else


async def test_a_proactive_question_card_arrives(make_teams_stack: Any) -> None:
    """A question for Sarah reaches her Teams chat as an Adaptive Card with Action.Execute
    buttons, unprompted."""
    stack: TeamsStack = await make_teams_stack()
    sarah = await stack.person(SARAH)
    cid = await stack.create(authority={"authored_by": ["p-sarah"]})
    card = await sarah.card_with(QUESTION)
    (content,) = card.cards
    assert content["type"] == "AdaptiveCard" and content["version"] == "1.5"
    assert await stack.kept_locale(SARAH) == PLAYGROUND_LOCALE  # kept from her "hi"
    assert FIRST in card.text and "Something else…" in card.text
    assert button(card, cid, ActionKind.ANSWER, candidate=0)["verb"] == "clarify.answer"


async def test_a_click_updates_the_card(make_teams_stack: Any) -> None:
    """Pressing a date records Sarah's answer at the core and replaces her card's buttons with
    what the answer did."""
    stack: TeamsStack = await make_teams_stack()
    sarah = await stack.person(SARAH)
    cid = await stack.create(authority={"authored_by": ["p-sarah"]})
    card = await sarah.card_with(QUESTION)
    status, answered = await press(sarah, card, button(card, cid, ActionKind.ANSWER,
                                                       candidate=0))
    assert status == 200
    (record,) = await stack.until_recorded(cid, 1)
    assert (record.responder, record.answer_index) == ("p-sarah", 0)
    await shows(sarah, card, "Recorded as evidence", also=answered)
    assert "clarify.answer" not in card.text or "Recorded as evidence" in answered


async def test_a_critical_question_needs_two_people(make_teams_stack: Any) -> None:
    """Both editors get the card; Sarah's tap is one of two confirmations (Ahmed's card shows
    it and stays answerable); Ahmed's binds, and both cards say so."""
    stack: TeamsStack = await make_teams_stack()
    sarah, ahmed = await stack.person(SARAH), await stack.person(AHMED)
    cid = await stack.create(authority={"authored_by": ["p-sarah"], "named": ["p-ahmed"]},
                             severity="critical")
    hers, his = await sarah.card_with(QUESTION), await ahmed.card_with(QUESTION)
    assert QUORUM in hers.text and QUORUM in his.text

    status, answered = await press(sarah, hers, button(hers, cid, ActionKind.ANSWER,
                                                       candidate=0))
    assert status == 200
    await stack.until_recorded(cid, 1)
    await shows(sarah, hers, "First confirmation recorded", also=answered)
    # Ahmed's card is repainted outside any click of his, in his Teams locale all the same
    await shows(ahmed, his, f"First confirmation recorded: {FIRST} (Sarah Chen)")
    button(his, cid, ActionKind.ANSWER, candidate=0)  # still answerable
    c = await stack.bot.get_clarification(clarification_id=cid)
    assert c.state is ClarificationState.PARTIALLY_CONFIRMED

    status, answered = await press(ahmed, his, button(his, cid, ActionKind.ANSWER,
                                                      candidate=0))
    assert status == 200
    await stack.until_recorded(cid, 2)
    await shows(ahmed, his, "Recorded as binding evidence", also=answered)
    await shows(sarah, hers, "Recorded as binding evidence")
    c = await stack.bot.get_clarification(clarification_id=cid)
    assert (c.state, c.quorum.state) == (ClarificationState.ANSWERED, QuorumState.SATISFIED)


async def test_something_else_with_a_valid_and_an_invalid_range(make_teams_stack: Any) -> None:
    """An end before the start comes back at once as the form with the field's error and
    nothing reaches the core; a valid range is recorded as a custom interval."""
    stack: TeamsStack = await make_teams_stack()
    sarah = await stack.person(SARAH)
    cid = await stack.create(authority={"authored_by": ["p-sarah"]})
    card = await sarah.card_with(QUESTION)
    submit = button(card, cid, ActionKind.CUSTOM_SUBMIT)

    status, refused = await press(sarah, card, submit, {"custom.0.from": "2026-09-30",
                                                        "custom.0.to": "2026-08-15"})
    assert status == 200
    await shows(sarah, card, END_BEFORE_START, also=refused)
    assert await stack.responses(cid) == []

    status, answered = await press(sarah, card, submit, {
        "custom.0.from": "2026-08-15", "custom.0.to": "2026-09-30",
        "custom.0.note": "Letter, page 2"})
    assert status == 200
    (record,) = await stack.until_recorded(cid, 1)
    assert record.answer_index is None and record.answer_custom is not None
    assert (record.answer_custom.valid_from, record.answer_custom.valid_to) == (
        "2026-08-15", "2026-10-01")  # the end is kept exclusive
    await shows(sarah, card, "August 15 – September 30", also=answered)  # en-US, as she reads


async def test_the_digest_with_its_next_page(make_teams_stack: Any) -> None:
    """Past the threshold, twelve questions wait for one digest card (each card under 28 KB):
    ten there and a "Show the next questions" button; pressing it replaces the card with the
    page of the other two, which are answerable in place."""
    stack: TeamsStack = await make_teams_stack(digest_threshold=1)
    sarah = await stack.person(SARAH)
    ids = [await stack.create(authority={"authored_by": ["p-sarah"]})]
    await sarah.card_with(QUESTION)  # the first one directly; the rest wait for the window
    ids += [await stack.create(authority={"authored_by": ["p-sarah"]}) for _ in range(12)]
    await stack.waiting_in_digest(ids[1:], "p-sarah")
    await stack.later(timedelta(minutes=31))
    digest = await sarah.card_with("12 questions need a quick answer")
    assert "2 more questions are waiting." in digest.text
    assert "Show the next questions" in digest.text
    assert len(json.dumps(digest.cards[0]).encode()) < 28 * 1024
    on_first_page = _asked(digest)
    assert len(on_first_page) == 10 and on_first_page < set(ids[1:])  # in the order digested

    next_page = button(digest, None, ActionKind.DIGEST_NEXT)
    assert CODEC.decode_teams_data(next_page["data"]) == ActionRef(
        kind=ActionKind.DIGEST_NEXT, card_ref=CODEC.decode_teams_data(next_page["data"]).card_ref,
        offset=10)
    status, answered = await press(sarah, digest, next_page)  # as soon as the card shows
    assert status == 200
    page = digest  # the next page replaces the digest card in place
    assert "2 questions need a quick answer; one tap each is enough." in _lines(page), answered
    rest = _asked(page)
    assert rest == set(ids[1:]) - on_first_page
    last = sorted(rest)[-1]
    status, _ = await press(sarah, page, button(page, last, ActionKind.ANSWER, candidate=0))
    assert status == 200
    (record,) = await stack.until_recorded(last, 1)
    assert record.responder == "p-sarah"


def _lines(message: pg.Posted) -> list[str]:
    """The text blocks of the message's cards, whole (so "2 questions" is not "12 questions")."""
    return [teams_block_text(n) for n in _nodes(message.cards)
            if n.get("type") in ("TextBlock", "RichTextBlock")]


def _asked(message: pg.Posted) -> set[str | None]:
    """The questions a card asks (those it has answer buttons for)."""
    return {CODEC.decode_teams_data(a["data"]).clarification_id
            for a in executes(message.cards) if a["verb"] == "clarify.answer"}

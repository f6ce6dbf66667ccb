"""Every Adaptive Card the bot renders stays under 28 KB as the Agents SDK sends it, and a digest
too long for one card pages through every question with its "Show the next questions" action."""

from __future__ import annotations

import inspect
import json
from dataclasses import replace

import aiohttp
import pytest

from cards import fixtures, teams
from cards import platform_limits as limits
from cards.actions import ActionCodec, ActionKind
from cards.preview import rendered_states
from cards.views import DigestView
from tests.cards.test_cards_extremes import RTL, WORST, _worst_payloads

LIMIT = 28 * 1024


def test_card_size_is_counted_as_the_sdk_sends_it() -> None:
    """The connector client posts with aiohttp's ``json=``, i.e. ``json.dumps`` with defaults:
    non-ASCII escaped, spaces after separators. That is the size the limit is checked on."""
    default = inspect.signature(aiohttp.ClientSession.__init__).parameters["json_serialize"]
    assert default.default is json.dumps
    card = {"type": "AdaptiveCard", "body": [{"type": "TextBlock", "text": "عقد 👩🏽‍💼"}]}
    assert limits.card_bytes(card) == len(json.dumps(card).encode())
    compact = len(json.dumps(card, ensure_ascii=False, separators=(",", ":")).encode())
    assert limits.card_bytes(card) > compact


@pytest.mark.parametrize("state", rendered_states(), ids=lambda s: s["name"])
def test_every_gallery_card_fits_teams(state: dict) -> None:
    """Each state of the gallery, as sent, is under 28 KB."""
    assert limits.card_bytes(state["teams"]) < LIMIT


def test_longest_texts_fit_teams(codec: ActionCodec) -> None:
    """The longest inputs of every card kind (RTL, emoji, 60 candidates, 200 items) fit."""
    sizes = {name: limits.card_bytes(card) for name, (_, card) in _worst_payloads(codec).items()}
    assert {name: size for name, size in sizes.items() if size >= LIMIT} == {}


def _next_offset(card: dict, codec: ActionCodec) -> int | None:
    more = [item for item in card["body"] if item.get("id") == "digest.more"]
    if not more:
        return None
    action = more[0]["items"][1]["actions"][0]
    assert action["type"] == "Action.Execute" and action["verb"] == teams.DIGEST_NEXT_VERB
    ref = codec.decode_teams_data(action["data"])
    assert ref.kind is ActionKind.DIGEST_NEXT
    return ref.offset


def _pages(view: DigestView, codec: ActionCodec) -> list[dict]:
    """Follows the next-page action the way the bot does: the questions from the offset on."""
    pages, offset = [], 0
    while True:
        page = replace(view, questions=view.questions[offset:], offset=offset)
        card = teams.render_digest(page, codec=codec)
        pages.append(card)
        following = _next_offset(card, codec)
        if following is None:
            return pages
        assert following > offset, "a page must show at least one question"
        offset = following


@pytest.mark.parametrize("view", [
    fixtures.OVERFLOW,
    DigestView(digest_ref="dig_x", viewer=RTL,
               questions=tuple(replace(WORST, card_ref=f"d{n}") for n in range(30))),
], ids=["overflow", "worst"])
def test_digest_pages_through_every_question(view: DigestView, codec: ActionCodec) -> None:
    """Every page is under 28 KB and answerable in place; together the pages show each
    question exactly once, in order."""
    shown: list[str] = []
    for card in _pages(view, codec):
        assert limits.card_bytes(card) < LIMIT
        assert limits.teams_card_problems(card) == []
        slots = [item for item in card["body"] if item.get("id", "").startswith("q")]
        assert slots
        for slot in slots:
            tokens = [a["data"]["t"] for s in slot["items"] if s["type"] == "ActionSet"
                      for a in s["actions"] if a["type"] == "Action.Execute"]
            shown.append(codec.decode(tokens[0]).card_ref)
    assert shown == [q.card_ref for q in view.questions]


def test_overflow_digest_offers_the_next_page(codec: ActionCodec) -> None:
    """Fourteen questions: the first card shows ten and a button for the remaining four."""
    first = teams.render_digest(fixtures.OVERFLOW, codec=codec)
    assert _next_offset(first, codec) == teams.DIGEST_MAX_QUESTIONS
    assert "4 more questions" in json.dumps(first)

"""Every state validates, in every language of the gallery (German and French texts are longer
than English ones): Block Kit through slack_sdk.models and our limit checks, Adaptive Cards
through Microsoft's renderer and the 28 KB / Universal Actions rules."""

from __future__ import annotations

import pytest

from cards import platform_limits as limits
from cards.fixtures import LOCALES
from cards.preview import rendered_states

RENDERED = [{**state, "name": f"{language}/{state['name']}"}
            for language, locale in LOCALES.items() for state in rendered_states(locale)]


@pytest.mark.parametrize("state", RENDERED, ids=[s["name"] for s in RENDERED])
def test_block_kit_is_valid(state: dict, slack_validator) -> None:
    """Each Slack payload passes slack_sdk.models validation and the platforms' published
    limits (cards/platform_limits.py)."""
    slack_validator(state["slack"])


@pytest.mark.parametrize("state", RENDERED, ids=[s["name"] for s in RENDERED])
def test_adaptive_card_rules(state: dict) -> None:
    """Each Teams card is version 1.5, uses Action.Execute with verbs and fits 28 KB."""
    assert limits.teams_card_problems(state["teams"]) == []


@pytest.mark.slow
def test_adaptive_cards_pass_the_official_renderer(adaptive_validator) -> None:
    """Microsoft's adaptivecards renderer parses, validates and renders every card cleanly."""
    report = adaptive_validator({s["name"]: s["teams"] for s in RENDERED})
    assert set(report) == {s["name"] for s in RENDERED}
    assert {name: problems for name, problems in report.items() if problems} == {}


@pytest.mark.slow
def test_the_renderer_check_can_fail(adaptive_validator) -> None:
    """The validator reports an unknown property, an unknown element and a bad enum value; a
    ``lang`` that is no language code is reported, a valid one never (however many cards)."""
    report = adaptive_validator({"bad": {
        "type": "AdaptiveCard", "version": "1.5",
        "body": [{"type": "TextBlock", "txt": "x"}, {"type": "Fancy"},
                 {"type": "TextBlock", "text": "x", "color": "Purple"}]}})
    assert len(report["bad"]) == 3
    text = [{"type": "TextBlock", "text": "x"}]
    langs = {f"{n}": {"type": "AdaptiveCard", "version": "1.5", "lang": lang, "body": text}
             for n, lang in enumerate(["en", "de", "fr", "en-US", "en", "de"])}
    report = adaptive_validator(langs)
    assert report["3"] == ['parse: InvalidPropertyValue: Invalid value "en-US" for property '
                           '"lang".']
    assert [name for name, problems in report.items() if problems] == ["3"]


def test_limit_checks_can_fail() -> None:
    """Our own limit checks catch an over-long button, too many blocks and rich text longer
    than a section may be."""
    button = {"type": "button", "action_id": "a", "text": {"type": "plain_text", "text": "x" * 76}}
    message = {"text": "t", "blocks": [{"type": "actions", "elements": [button]}] * 51}
    assert len(limits.slack_message_problems(message)) >= 2
    words = [{"type": "text", "text": "x" * 2000}, {"type": "text", "text": "y" * 1001}]
    rich = {"type": "rich_text", "block_id": "r",
            "elements": [{"type": "rich_text_section", "elements": words}]}
    assert limits.slack_message_problems({"text": "t", "blocks": [rich]}) == [
        "block 0 rich text: 3001 > 3000"]
    card = {"type": "AdaptiveCard", "version": "1.5",
            "body": [{"type": "TextBlock", "text": "x" * 30_000}],
            "refresh": {"userIds": ["u"] * 61}}
    assert len(limits.teams_card_problems(card)) == 2

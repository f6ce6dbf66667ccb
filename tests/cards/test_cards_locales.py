"""Each person's own date format (CLDR through Babel) on the buttons, in the texts and in the
custom form, on both platforms; languages without a catalog read English with their dates."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from cards import fixtures, overrides, preview, slack, teams, text
from cards.fixtures import localised
from cards.views import CustomFormView, OutcomeView, OverrideFormView, QuestionView, Viewer
from tests.support.card_text import teams_block_text

# locale -> (button, outcome sentence's answer and recording date, custom form's dates line)
FORMATS = {
    "en-US": ("June 12 (signature)", "June 12", "Jul 4, 2026",
              "Dates the document gives: June 12 (signature) and July 3 (countersignature)"),
    "en-GB": ("12 June (signature)", "12 June", "4 Jul 2026",
              "Dates the document gives: 12 June (signature) and 3 July (countersignature)"),
    "de-DE": ("12. Juni (signature)", "12. Juni", "04.07.2026",
              "Im Dokument genannte Daten: 12. Juni (signature) und 3. Juli (countersignature)"),
    "fr-FR": ("12 juin (signature)", "12 juin", "4 juil. 2026",
              "Dates indiquées dans le document\u00a0: 12 juin (signature) et 3 juillet "
              "(countersignature)"),
    # no catalog for Spanish: English words, Spanish dates (docs/cards.md)
    "es-ES": ("12 de junio (signature)", "12 de junio", "4 jul 2026",
              "Dates the document gives: 12 de junio (signature) and 3 de julio "
              "(countersignature)"),
}


def _slack_buttons(message: dict) -> list[str]:
    return [e["text"]["text"] for b in message["blocks"] if b["type"] == "actions"
            for e in b["elements"]]


def _teams_titles(card: dict) -> list[str]:
    found: list[str] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if node.get("type", "").startswith("Action.") and "title" in node:
                found.append(node["title"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)
    walk(card)
    return found


@pytest.mark.parametrize("locale", FORMATS)
def test_buttons_carry_the_person_date_format(locale: str, codec) -> None:
    button = FORMATS[locale][0]
    view: QuestionView = localised(fixtures.QUESTION, locale)
    assert _slack_buttons(slack.render_question(view, codec=codec))[0] == button
    assert _teams_titles(teams.render_question(view, codec=codec))[0] == button
    # a date outside the year asked carries its year, in the locale's long form
    critical: QuestionView = localised(fixtures.CRITICAL, locale)
    second = _slack_buttons(slack.render_question(critical, codec=codec))[1]
    assert "2027" in second and "31" in second


@pytest.mark.parametrize("locale", FORMATS)
def test_texts_carry_the_person_date_format(locale: str) -> None:
    """The outcome sentence (the spec's words, in English) names the answer and the day it was
    recorded in the person's format, on both platforms."""
    _, day, recorded, _ = FORMATS[locale]
    view: OutcomeView = localised(fixtures.OUTCOMES["outcome_recorded"], locale)
    sentence = f"✓ Recorded as evidence: {day}, confirmed by Sarah, {recorded}."
    assert slack.render_outcome(view)["blocks"][0]["text"]["text"] == sentence
    assert teams_block_text(teams.render_outcome(view)["body"][0]) == sentence


@pytest.mark.parametrize("locale", FORMATS)
def test_custom_form_carries_the_person_date_format(locale: str, codec) -> None:
    """The "Something else…" form lists the document's dates as the buttons read them."""
    line = FORMATS[locale][3]
    form = CustomFormView(question=localised(fixtures.QUESTION, locale))
    modal = slack.render_custom_modal(form, codec=codec)
    found = [b for b in modal["blocks"] if b["block_id"] == "custom.found"]
    assert found[0]["elements"][0]["text"] == line
    card = teams.render_custom_form(form, codec=codec)
    assert line in [teams_block_text(element) for element in card["body"]]


def test_a_german_card_reads_german_but_for_the_spec_words(codec) -> None:
    """German words around German dates; the spec's sentences and button stay English, and
    the words inside them ("until", "and", "two") follow the sentence, not the person."""
    view: QuestionView = localised(fixtures.AWAITING_SECOND, "de-DE")
    message = slack.render_question(view, codec=codec)
    lines = [e["text"] for b in message["blocks"] if b["type"] == "context"
             for e in b["elements"]]
    assert "⚠️ This clarification affects a high-stakes date and requires two confirmations." \
        in lines
    assert ("☑️ First confirmation recorded: until 31. Dezember (Sarah). Do you agree?"
            in lines)
    assert "🙋 Sie werden gefragt, weil Sie in diesem Dokument genannt sind." in lines
    assert _slack_buttons(message)[:3] == ["bis 31. Dezember (termination clause)",
                                           "bis 31. März 2027 (notice letter)",
                                           "Something else…"]
    binding = localised(fixtures.OUTCOMES["outcome_binding"], "de-DE")
    assert slack.render_outcome(binding)["text"] == (
        "✓ Recorded as binding evidence: 12. Juni, confirmed by Sarah and Ahmed, 04.07.2026.")


# locale -> the move-on line of fixtures.REMINDED (13:00 UTC on 6 July, the person in London):
# the day in CLDR's "MMMMd" and the time in CLDR's short format (en-US's has U+202F before PM)
MOVES_ON = {
    "en-US": "Moves on to the next person on July 6 at 2:00\u202fPM.",
    "en-GB": "Moves on to the next person on 6 July at 14:00.",
    "de-DE": "Geht am 6. Juli um 14:00 an die nächste Person weiter.",
    "fr-FR": "Passe à la personne suivante le 6 juillet à 14:00.",
    "es-ES": "Moves on to the next person on 6 de julio at 14:00.",
}


def _slack_lines(message: dict) -> list[str]:
    return [e["text"] for b in message["blocks"] if b["type"] == "context"
            for e in b["elements"]]


def _teams_texts(card: dict) -> list[str]:
    return [teams_block_text(e) for e in card["body"] if teams_block_text(e)]


@pytest.mark.parametrize("locale", MOVES_ON)
def test_reminder_carries_the_person_day_and_time_format(locale: str, codec) -> None:
    """The reminded card's move-on line and the nudge name the day and the time in the
    person's format and zone, on both platforms; the nudge ends with the card's line."""
    line = MOVES_ON[locale]
    card: QuestionView = localised(fixtures.REMINDED, locale)
    assert f"⏳ {line}" in _slack_lines(slack.render_question(card, codec=codec))
    assert f"⏳ {line}" in _teams_texts(teams.render_question(card, codec=codec))
    nudge = localised(fixtures.NUDGE, locale)
    slack_nudge, teams_nudge = slack.render_reminder(nudge), teams.render_reminder(nudge)
    assert slack_nudge["text"].endswith(f" {line}")
    assert _slack_lines(slack_nudge)[0].endswith(f" {line}")
    assert _teams_texts(teams_nudge)[0].endswith(f" {line}")
    # another zone moves the time, not the format: 13:00 UTC is 15:00 in Berlin
    berlin = replace(card, viewer=replace(card.viewer, time_zone="Europe/Berlin"))
    shifted = line.replace("2:00\u202fPM", "3:00\u202fPM").replace("14:00", "15:00")
    assert f"⏳ {shifted}" in _slack_lines(slack.render_question(berlin, codec=codec))


# the viewer's locale -> the card's "lang": the language of the locale as the dates read it
CARD_LANGUAGES = {"en": "en", "en-US": "en", "en_GB": "en", "de-AT": "de", "de_DE": "de",
                  "fr-CA": "fr", "es-ES": "es", "ar": "ar", "not-a-locale!": "en", "": "en"}


@pytest.mark.parametrize(("locale", "lang"), CARD_LANGUAGES.items())
def test_every_adaptive_card_states_the_viewers_language(locale: str, lang: str,
                                                         codec) -> None:
    """Each Teams card (every state, and the override's confirmation form) says in its
    top-level ``lang`` which language it is for; the show-card inside says nothing of its
    own."""
    for state in preview.rendered_states(locale):
        card = state["teams"]
        assert card["type"] == "AdaptiveCard" and card["lang"] == lang, state["name"]
        assert _nested_langs(card) == [], state["name"]
    form = OverrideFormView(clarification_id="clr_1", card_ref="dlv_1",
                            candidate=fixtures.SIGNATURE, document=fixtures.MSA,
                            viewer=Viewer(locale=locale))
    assert overrides.teams_form(form, codec=codec)["lang"] == lang


def _nested_langs(card: dict) -> list[object]:
    found: list[object] = []

    def walk(node: object, top: bool) -> None:
        if isinstance(node, dict):
            if not top and "lang" in node:
                found.append(node["lang"])
            for value in node.values():
                walk(value, False)
        elif isinstance(node, list):
            for item in node:
                walk(item, False)

    walk(card, True)
    return found


# locale -> the move-on line of a card built on 30 December 2026 (London) whose question moves
# on on 2 January 2027, 09:30 UTC: the day in CLDR's long date format, year and all
NEXT_YEAR = {
    "en-US": "Moves on to the next person on January 2, 2027 at 9:30\u202fAM.",
    "en-GB": "Moves on to the next person on 2 January 2027 at 09:30.",
    "de-DE": "Geht am 2. Januar 2027 um 09:30 an die nächste Person weiter.",
    "fr-FR": "Passe à la personne suivante le 2 janvier 2027 à 09:30.",
}


@pytest.mark.parametrize("locale", NEXT_YEAR)
def test_a_move_on_day_in_another_year_names_the_year(locale: str, codec) -> None:
    """The year is shown when the move-on day falls in another year than the card's (and the
    nudge's) own day, in the person's zone; in the same year it is left out."""
    built = datetime(2026, 12, 30, 16, 0, tzinfo=UTC)
    moves_on = datetime(2027, 1, 2, 9, 30, tzinfo=UTC)
    card: QuestionView = localised(replace(fixtures.REMINDED, asked_at=built,
                                           moves_on_at=moves_on), locale)
    line = NEXT_YEAR[locale]
    assert f"⏳ {line}" in _slack_lines(slack.render_question(card, codec=codec))
    assert f"⏳ {line}" in _teams_texts(teams.render_question(card, codec=codec))
    nudge = localised(replace(fixtures.NUDGE, as_of=built, moves_on_at=moves_on), locale)
    assert slack.render_reminder(nudge)["text"].endswith(f" {line}")
    assert _teams_texts(teams.render_reminder(nudge))[0].endswith(f" {line}")
    # built on 2 January itself, the same move-on day needs no year
    same = replace(card, asked_at=datetime(2027, 1, 2, 8, 0, tzinfo=UTC))
    assert "2027" not in " ".join(_slack_lines(slack.render_question(same, codec=codec)))


def test_the_year_is_the_persons_in_their_zone() -> None:
    """31 December 23:30 UTC is already 1 January in Berlin: a card built then, moving on later
    that day there, names no year; in London (still 31 December) it does."""
    built = datetime(2026, 12, 31, 23, 30, tzinfo=UTC)
    card = replace(fixtures.REMINDED, asked_at=built,
                   moves_on_at=datetime(2027, 1, 1, 9, 0, tzinfo=UTC))
    berlin = replace(card, viewer=replace(card.viewer, locale="en-GB",
                                          time_zone="Europe/Berlin"))
    london = replace(card, viewer=replace(card.viewer, locale="en-GB",
                                          time_zone="Europe/London"))
    assert text.moves_on_text(berlin) == "Moves on to the next person on 1 January at 10:00."
    assert text.moves_on_text(london) == "Moves on to the next person on 1 January 2027 at 09:00."

"""A person passed over for being away, as the steward reads it (docs/delivery.md, "Away"): on the
escalation card and in the dead-letter digest, on Slack and Teams, in English, German and French,
with the return day where the steward is."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from bot.core.models import ReasonCode
from cards import fixtures, slack_stewards, teams
from cards.steward_text import skip_text
from cards.views import DeadLetterDigestView, DeadLetterItem, SkippedCandidate, Viewer

# 23:30 UTC on 13 December: the 14th in Berlin, still the 13th in New York
BACK = datetime(2026, 12, 13, 23, 30, tzinfo=UTC)
AWAY = SkippedCandidate("Sarah Chen", ReasonCode.PERSON_AWAY, until=BACK)


@pytest.mark.parametrize(("locale", "zone", "line"), [
    ("en-GB", "Europe/Berlin",
     "Sarah Chen was away until 14 December 2026, so the next person was asked."),
    ("en-US", "America/New_York",
     "Sarah Chen was away until December 13, 2026, so the next person was asked."),
    ("de-DE", "Europe/Berlin",
     "Sarah Chen war bis 14. Dezember 2026 abwesend, daher wurde die nächste Person gefragt."),
    ("fr-FR", "Europe/Paris",
     "Sarah Chen n’était pas disponible jusqu’au 14 décembre 2026 : la question est passée à "
     "la personne suivante."),
])
def test_the_return_day_in_the_stewards_zone_and_language(locale: str, zone: str,
                                                         line: str) -> None:
    assert skip_text(AWAY, Viewer(locale=locale, time_zone=zone)) == line


def test_without_a_return_date_it_says_away() -> None:
    shown = skip_text(replace(AWAY, until=None), Viewer(locale="de-DE"))
    assert shown == "Sarah Chen war abwesend, daher wurde die nächste Person gefragt."


def test_both_platforms_show_it_on_the_escalation_and_the_dead_letter_digest() -> None:
    viewer = Viewer(locale="en-GB", time_zone="Europe/Berlin")
    escalation = replace(fixtures.ESCALATION, skipped=(AWAY,), viewer=viewer)
    digest = DeadLetterDigestView(items=(DeadLetterItem(
        clarification_id="clr_1", document=fixtures.LEASE, severity=fixtures.ESCALATION.severity,
        skipped=(AWAY,)),), viewer=viewer)
    said = "was away until 14 December 2026"
    for rendered in (slack_stewards.render_steward_escalation(escalation),
                     slack_stewards.render_dead_letter_digest(digest),
                     teams.render_steward_escalation(escalation),
                     teams.render_dead_letter_digest(digest)):
        assert said in json.dumps(rendered, ensure_ascii=False)

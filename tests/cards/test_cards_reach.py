"""The steward's reach report in chat (cards/reach.py): the weekly message and its detail on
both platforms, the App Home's Queue/Reach tabs, names as text, the platforms' limits, the
three languages and a cause the bot does not know."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest
from slack_sdk.models.views import View

from bot.core.models import Severity
from cards import attention, fixtures, reach, reach_text, render, slack, teams
from cards import platform_limits as limits
from cards.catalog import catalog_for
from cards.reach_views import (
    REACH_CAUSES,
    REACH_NAMES_MAX,
    ReachCauseView,
    ReachDetailView,
    ReachReportView,
    ReachTimingView,
    ReachTotals,
    ReachWorkspaceView,
)
from cards.views import AttentionView, Viewer
from tests.support.card_text import slack_literal, slack_markup, teams_block_text

REPORT, CLEAR, DETAIL, QUEUE = (fixtures.REACH_REPORT, fixtures.REACH_REPORT_CLEAR,
                                fixtures.REACH_DETAIL, fixtures.QUEUE)


def slack_words(payload: dict) -> list[str]:
    """Every text Slack shows as it is (plain text, rich text)."""
    return slack_literal(payload)


def slack_all(payload: dict) -> str:
    return "\n".join(slack_literal(payload))


def teams_words(card: dict) -> list[str]:
    return [teams_block_text(node) for node in limits.walk(card) if teams_block_text(node)]


def teams_all(card: dict) -> str:
    return "\n".join(teams_words(card))


def home(view: ReachDetailView, queue: AttentionView = QUEUE) -> dict:
    return attention.render_slack_home(queue, reach=view)


def test_weekly_report_shows_the_figures_given() -> None:
    """The week's days, the six counts, the share bound before the first escalation, the
    median in working and wall hours, the top causes as "<cause>: N people, M questions" and
    how many more causes there are, on both platforms; the notification says how many
    questions."""
    message, card = slack.render_reach_report(REPORT), teams.render_reach_report(REPORT)
    expected = ["Reach this week", "29 Jun\u2009–\u20095 Jul 2026, in the workspaces you steward",
                "Questions: 42", "Asked: 39", "Bound: 31", "Still open: 6", "Escalated: 4",
                "Nobody left to ask: 2", "Bound before the first escalation: 87%",
                "Median time to a bound answer: 3.5 h working time (26.5 h in all)",
                "22 people could not be reached:",
                "• No chat account known: 3 people, 5 questions",
                "• Teams app not installed: 2 people, 3 questions",
                "• May not read the document: 2 people, 2 questions",
                "…and 2 more causes."]
    for line in expected:
        assert line in slack_all(message), line
        assert line in teams_words(card), line
    assert message["text"] == "Reach this week: 42 questions in the workspaces you steward."


def test_weekly_report_lists_at_most_the_top_causes_and_counts_the_rest() -> None:
    """Given more causes than the message lists, the first REACH_TOP_CAUSES are listed and
    the rest join ``more_causes`` in the count."""
    view = replace(REPORT, causes=fixtures.UNREACHED, more_causes=1)
    shown = slack_all(slack.render_reach_report(view))
    assert "Blocked the bot or removed the app" not in shown
    assert "…and 3 more causes." in shown
    assert "…and 3 more causes." in teams_all(teams.render_reach_report(view))


def test_names_are_only_in_the_detail() -> None:
    """The weekly message shows counts only, even when the view it is given carries names;
    the detail names the people of each cause (and counts the rest)."""
    named = replace(REPORT, causes=fixtures.UNREACHED[:3])
    names = [name for cause in fixtures.UNREACHED[:3] for name in cause.names]
    for rendered in (json.dumps(slack.render_reach_report(named), ensure_ascii=False),
                     json.dumps(teams.render_reach_report(named), ensure_ascii=False)):
        assert not [name for name in names if name in rendered]
    detail = [slack_all(home(DETAIL)), teams_all(reach.render_teams_reach_detail(DETAIL))]
    for shown in detail:
        assert "Who: Ahmed Haddad, Marta Nowak and Jonas Weber" in shown
        assert "Who: Aiko Tanaka, Bruno Costa" in shown and "Jan Novak and 4 more people" in shown
        assert "Fix: Grant the person read access to the document." in shown
        assert "14 people, 2 questions" in shown
        assert "Sarah Okafor: 14" in shown
        assert ("Cards, reminders and digests a person got in a week: median 3, 95th "
                "percentile 11.") in shown
        assert ("• critical: 4 bound; median 5 h working time (30 h in all); 90th percentile "
                "12 h working time (70 h in all)") in shown
        assert "Legal (Slack)" in shown and "Facilities (Teams)" in shown
        assert "Finance (nobody asked)" in shown


def test_the_button_opens_the_detail_by_action_id_and_verb() -> None:
    """One button: on Slack ``reach.open`` with the value "reach" (no token: the click is
    decided from the verified person); on Teams an ``Action.Execute`` with the verb "reach"
    and no data."""
    message = slack.render_reach_report(REPORT)
    buttons = [e for b in message["blocks"] if b["type"] == "actions" for e in b["elements"]]
    assert reach.REACH_OPEN_ACTION == slack.REACH_OPEN_ACTION == "reach.open"
    assert [(b["action_id"], b["value"], b["text"]["text"]) for b in buttons] == [
        ("reach.open", "reach", "See who and how to fix it")]
    card = teams.render_reach_report(REPORT)
    actions = [n for n in limits.walk(card) if str(n.get("type", "")).startswith("Action.")]
    assert reach.REACH_VERB == "reach"
    assert actions == [{"type": "Action.Execute", "title": "See who and how to fix it",
                        "verb": "reach", "data": {}}]


def test_a_week_where_everyone_was_reached_says_so() -> None:
    """No cause, nobody unreached: a reassuring line instead of the causes."""
    line = "Everyone the questions went to could be reached: nothing to fix this week."
    assert line in slack_words(slack.render_reach_report(CLEAR))
    assert line in teams_words(teams.render_reach_report(CLEAR))
    assert "could not be reached" not in slack_all(slack.render_reach_report(CLEAR))


def test_render_with_dispatches_the_weekly_report(codec) -> None:
    """Channels send the weekly report like any other card view."""
    assert render.render_with(slack, REPORT, codec=codec, platform="slack") == (
        slack.render_reach_report(REPORT))
    assert render.render_with(teams, REPORT, codec=codec, platform="teams") == (
        teams.render_reach_report(REPORT))


# ---------------------------------------------------------------- the App Home's tabs


def _tabs(payload: dict) -> list[tuple[str, str, str | None]]:
    block = payload["blocks"][0]
    assert (block["type"], block["block_id"]) == ("actions", "home.tabs")
    return [(e["action_id"], e["text"]["text"], e.get("style")) for e in block["elements"]]


def test_a_stewards_home_has_two_tabs_the_shown_one_primary() -> None:
    """The queue: "Queue" is the primary button and the queue follows; with the reach detail,
    "Reach" is and the detail follows instead of the queue."""
    queue = attention.render_slack_home(QUEUE)
    assert attention.HOME_QUEUE_ACTION == "home.queue"
    assert attention.HOME_REACH_ACTION == "home.reach"
    assert _tabs(queue) == [("home.queue", "Queue", "primary"), ("home.reach", "Reach", None)]
    assert queue["blocks"][1]["block_id"] == "queue.title"
    detail = home(DETAIL)
    assert _tabs(detail) == [("home.queue", "Queue", None), ("home.reach", "Reach", "primary")]
    assert detail["blocks"][1]["block_id"] == "reach.title"
    assert not any(b["block_id"].startswith("queue.") for b in detail["blocks"])
    assert detail["type"] == "home"


def test_anyone_elses_home_has_no_tabs() -> None:
    """A person who stewards nothing gets the queue's "nothing for you here", unchanged, even
    when a reach view is given."""
    nobody = AttentionView(viewer=Viewer(), steward=False)
    for payload in (attention.render_slack_home(nobody),
                    attention.render_slack_home(nobody, reach=DETAIL)):
        assert [b["block_id"] for b in payload["blocks"]] == ["queue.title", "queue.intro"]


def test_the_detail_for_a_non_steward_and_when_unreadable() -> None:
    """Nothing for a person who stewards no workspace; "try again" when the record or the
    core cannot be read; no figures, no names in either."""
    cases = {
        "Nothing for you here": ReachDetailView(viewer=Viewer(), steward=False),
        "cannot be read just now": ReachDetailView(viewer=Viewer(), steward=True,
                                                   unavailable=True, causes=DETAIL.causes),
    }
    for words, view in cases.items():
        blocks = reach.render_slack_reach_detail_blocks(view)
        card = reach.render_teams_reach_detail(view)
        for shown in (slack_all({"blocks": blocks}), teams_all(card)):
            assert words in shown
            assert "Questions:" not in shown and "Ahmed" not in shown


def test_an_empty_week_says_nothing_went_out() -> None:
    view = ReachDetailView(viewer=Viewer(), steward=True, start=fixtures.WEEK[0],
                           end=fixtures.WEEK[1])
    line = "No questions went out in the workspaces you steward in these days."
    assert line in slack_all(home(view))
    assert line in teams_words(reach.render_teams_reach_detail(view))


def test_the_ephemeral_note_points_to_the_reach_tab() -> None:
    assert "Reach tab" in reach.reach_note_text(Viewer())
    assert reach.reach_note_text(Viewer(locale="de-DE")) != reach.reach_note_text(Viewer())


# ---------------------------------------------------------------- text from outside


MARKED = "*Ana* _Bo_ <!here> & <b>x</b> [a](https://evil.example) # {{DATE(x)}}"
PLATFORM = "*x* <!y> & _z_"  # a platform the bot does not know, shown as it came


def _marked() -> tuple[ReachReportView, ReachDetailView]:
    cause = ReachCauseView(MARKED, people=2, questions=1, names=(MARKED, "Tom"))
    report = replace(REPORT, causes=(cause,))
    detail = replace(DETAIL, causes=(cause, *DETAIL.causes),
                     busiest=((MARKED, 7),),
                     workspaces=(ReachWorkspaceView(MARKED, PLATFORM, ReachTotals(questions=1)),))
    return report, detail


def test_names_workspaces_and_causes_with_marks_are_text_on_slack() -> None:
    """Asterisks, underscores, angle brackets and ampersands in a name, a workspace, a
    platform or a cause code are shown as typed in plain or rich text, never in mrkdwn."""
    report, detail = _marked()
    for payload in (slack.render_reach_report(report), home(detail)):
        assert not any(MARKED in t or "<!here>" in t for t in slack_markup(payload))
        assert any(MARKED in t for t in slack_literal(payload))
    shown = slack_all(home(detail))
    assert f"{MARKED} ({PLATFORM})" in shown  # the workspace and its platform
    assert f"Who: {MARKED} and Tom" in shown
    assert f"{MARKED}: 7" in shown


def test_names_workspaces_and_causes_with_marks_are_text_on_teams() -> None:
    """On Teams they are TextRuns (never markdown), and the card function is defused."""
    report, detail = _marked()
    literal = MARKED.replace("{{", "{\u2060{")
    for card in (teams.render_reach_report(report), reach.render_teams_reach_detail(detail)):
        assert not [n for n in limits.walk(card) if n.get("type") == "TextBlock"
                    and "Ana" in n.get("text", "")]
        assert any(literal in t for t in teams_words(card))
        assert "{{DATE" not in json.dumps(card, ensure_ascii=False)


# ---------------------------------------------------------------- limits


def _crowded() -> ReachDetailView:
    """Every cause (and two the bot does not know) with 500 long names, 200 workspaces with
    long names, 500 people interrupted most."""
    long = "Ä" * 300
    causes = tuple(ReachCauseView(code, people=500, questions=900,
                                  names=tuple(f"{long} {n}" for n in range(500)), more=37)
                   for code in (*REACH_CAUSES, "x" * 500, "y"))
    workspaces = tuple(ReachWorkspaceView(f"{'W' * 300}{n}", "slack" if n % 2 else "teams",
                                          fixtures.WEEK_TOTALS) for n in range(200))
    timings = tuple(ReachTimingView(s, bound=10, median_hours=1.5, p90_hours=None)
                    for s in Severity)
    return replace(DETAIL, causes=causes, workspaces=workspaces, timings=timings,
                   busiest=tuple((f"{long} {n}", 500 - n) for n in range(500)))


def _slack_home_problems(payload: dict) -> list[str]:
    """Slack's limits for a Home view, and its models taking it unchanged."""
    view = View(**payload)
    view.validate_json()
    assert view.to_dict() == payload
    return limits.slack_modal_problems(payload)


def test_the_slack_home_keeps_its_limits_with_500_names_and_200_workspaces() -> None:
    """At most 100 blocks (the tabs included), 3,000 characters a block, valid for Slack's
    models; each cause names at most REACH_NAMES_MAX people and counts the rest, and so do
    the people interrupted most; every workspace is listed or counted in the last line."""
    payload = home(_crowded())
    assert len(payload["blocks"]) <= limits.SLACK_MODAL_BLOCKS
    assert _slack_home_problems(payload) == []
    shown = slack_all(payload)
    # each cause: 500 names and 37 more, of which at most REACH_NAMES_MAX named (fewer when
    # long names fill the line), the rest counted
    counted = [int(n) for n in re.findall(r"Who: [^\n]* and (\d+) more people", shown)]
    assert len(counted) == len(REACH_CAUSES) + 2
    assert all(0 < 537 - n <= REACH_NAMES_MAX for n in counted)
    assert shown.count("Ä" * 99) <= (len(REACH_CAUSES) + 2) * REACH_NAMES_MAX + 10
    assert "…and 490 more people." in shown  # the people interrupted most: 10 named
    listed = shown.count("W" * 99)
    assert listed == 200 or f"…and {200 - listed} more workspaces." in shown


def test_workspaces_past_the_homes_blocks_are_counted() -> None:
    """A thousand workspaces do not fit a Home view: those that do are listed, the rest
    counted in the last block, within 100 blocks."""
    many = replace(_crowded(), workspaces=_crowded().workspaces * 5)
    payload = home(many)
    assert len(payload["blocks"]) == limits.SLACK_MODAL_BLOCKS
    assert _slack_home_problems(payload) == []
    listed = slack_all(payload).count("W" * 99)
    assert 200 < listed < 1000
    assert payload["blocks"][-1]["block_id"] == "reach.workspaces.more"
    assert slack_all(payload).endswith(
        f"…and {1000 - listed} more workspaces. `clarify-bot report` lists them all.")


def test_the_teams_detail_stays_under_28_kb_with_500_names_and_200_workspaces() -> None:
    card = reach.render_teams_reach_detail(_crowded())
    assert limits.card_bytes(card) <= limits.TEAMS_CARD_BYTES
    assert limits.teams_card_problems(card) == []
    last = teams_block_text(card["body"][-1])
    assert "more workspaces" in last or "does not fit here" in last


def test_a_weekly_report_with_many_long_causes_keeps_its_limits(slack_validator) -> None:
    crowded = _crowded()
    view = replace(REPORT, causes=crowded.causes, more_causes=200, unreached=10**6,
                   totals=replace(REPORT.totals, questions=10**7))
    slack_validator(slack.render_reach_report(view))
    card = teams.render_reach_report(view)
    assert limits.teams_card_problems(card) == []
    # the 200 more, and those of the view's causes the message does not list
    assert f"…and {200 + len(crowded.causes) - 3} more causes." in teams_all(card)


@pytest.mark.slow
def test_the_crowded_cards_pass_the_official_renderer(adaptive_validator) -> None:
    crowded = _crowded()
    cards = {"detail": reach.render_teams_reach_detail(crowded),
             "report": teams.render_reach_report(replace(REPORT, causes=crowded.causes))}
    assert {name: found for name, found in adaptive_validator(cards).items() if found} == {}


# ---------------------------------------------------------------- languages


@pytest.mark.parametrize("locale", ["de-DE", "fr-FR"])
def test_german_and_french_read_their_own_words(locale: str) -> None:
    """Every word of the report and the detail is the catalog's (the title, the labels, each
    cause's label and fix, the tabs, the note), and differs from the English."""
    english, other = catalog_for("en"), catalog_for(locale)
    keys = ["reach.title", "reach.detail_title", "reach.open", "reach.note", "home.tab_queue",
            "reach.label.asked", "reach.label.median", "reach.all_reached", "reach.empty",
            "reach.not_steward", "reach.unavailable"]
    keys += [f"reach.{kind}.{code}" for code in REACH_CAUSES for kind in ("cause", "fix")]
    assert [k for k in keys if other.text(k) == english.text(k)] == []
    report = fixtures.localised(REPORT, locale)
    for rendered in (slack_all(slack.render_reach_report(report)),
                     teams_all(teams.render_reach_report(report))):
        assert other.text("reach.title") in rendered
        assert other.text("reach.cause.no_alias") in rendered
        assert "Reach this week" not in rendered and "people" not in rendered
    detail = fixtures.localised(DETAIL, locale)
    for rendered in (slack_all(home(detail)),
                     teams_all(reach.render_teams_reach_detail(detail))):
        assert other.text("reach.fix.no_read_permission") in rendered
        assert "Fix:" not in rendered and "Who:" not in rendered


NUMBERS = {  # locale -> (a median of 3.5 h, a share of 0.87, 12,345 questions)
    "en": ("3.5 h working time", "87%", "12,345"),
    "en-US": ("3.5 h working time", "87%", "12,345"),
    "de-DE": ("3,5 Std. Arbeitszeit", "87\u00a0%", "12.345"),
    "fr-FR": ("3,5\u00a0h ouvrées", "87\u00a0%", "12\u202f345"),
}


@pytest.mark.parametrize("locale", NUMBERS)
def test_numbers_follow_the_persons_locale(locale: str) -> None:
    hours, share, count = NUMBERS[locale]
    view = fixtures.localised(replace(REPORT, totals=replace(REPORT.totals, questions=12345)),
                              locale)
    shown = slack_all(slack.render_reach_report(view))
    assert hours in shown and share in shown and count in shown
    assert count in teams_all(teams.render_reach_report(view))


# ---------------------------------------------------------------- causes


def test_every_cause_has_a_label_and_a_fix() -> None:
    for locale in ("en", "de", "fr"):
        viewer = Viewer(locale=locale)
        for code in REACH_CAUSES:
            assert reach_text.cause_label(code, viewer) != code
            assert (reach_text.fix_text(code, viewer) or "").strip()


def test_a_cause_the_bot_does_not_know_is_shown_as_it_came() -> None:
    """An unknown cause code is its own label (one clean line), with its counts and names
    and no fix, on both platforms."""
    unknown = ReachCauseView("carrier_pigeon\nlost", people=2, questions=3, names=("Ana",))
    report = replace(REPORT, causes=(unknown,))
    assert "• carrier_pigeon lost: 2 people, 3 questions" in slack_all(
        slack.render_reach_report(report))
    assert "• carrier_pigeon lost: 2 people, 3 questions" in teams_words(
        teams.render_reach_report(report))
    detail = replace(DETAIL, causes=(unknown,))
    for shown in (slack_all(home(detail)), teams_all(reach.render_teams_reach_detail(detail))):
        assert "carrier_pigeon lost" in shown and "Who: Ana" in shown
        assert "2 people, 3 questions" in shown and "Fix:" not in shown


def test_unknown_hours_say_so() -> None:
    timing = ReachTimingView(Severity.LOW, bound=0, median_hours=None, p90_hours=None)
    assert reach_text.timing_text(timing, Viewer()) == (
        "low: 0 bound; median not known yet; 90th percentile not known yet")
    assert "Median time" not in slack_all(slack.render_reach_report(
        replace(REPORT, totals=ReachTotals(questions=1))))
    names = ReachCauseView("no_alias", people=REACH_NAMES_MAX + 1, questions=1,
                           names=tuple(f"P{n}" for n in range(REACH_NAMES_MAX + 1)))
    assert (reach_text.names_text(names, Viewer()) or "").endswith("P9 and one more person")


def test_the_slack_note_points_a_steward_to_the_home_and_refuses_anyone_else() -> None:
    from cards.reach import REACH_HOME_LINK_ACTION, render_slack_reach_note

    link = "slack://app?team=T0ACME&id=A0CLARIFY&tab=home"
    steward = render_slack_reach_note(ReachDetailView(viewer=Viewer(locale="de"), steward=True),
                                      link)
    (button,) = [e for b in steward["blocks"] if b["type"] == "actions" for e in b["elements"]]
    assert (button["action_id"], button["url"]) == (REACH_HOME_LINK_ACTION, link)
    assert button["text"]["text"] != "Open the Reach tab"  # German
    without = render_slack_reach_note(ReachDetailView(viewer=Viewer(), steward=True), None)
    assert [b["type"] for b in without["blocks"]] == ["section"]
    other = render_slack_reach_note(ReachDetailView(viewer=Viewer(), steward=False), link)
    assert "slack://" not in json.dumps(other) and "Nothing for you here" in other["text"]

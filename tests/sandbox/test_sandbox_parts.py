"""The sandbox's own decisions, without a browser: where its clock starts and how it moves, the
scenario's people as the local Slack holds them, and a question from the page's form."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from clarify_bot.sandbox.clock import ClockMoveError, next_morning, start_time, target
from clarify_bot.sandbox.people import scenario_people
from clarify_bot.sandbox.questions import QuestionError, question_request
from devcore.scenario import ScenarioError, read_scenario

SATURDAY_NIGHT = datetime(2026, 12, 5, 22, 30, tzinfo=UTC)


def test_the_clock_starts_on_the_next_working_afternoon() -> None:
    assert start_time(SATURDAY_NIGHT) == datetime(2026, 12, 7, 14, 0, tzinfo=UTC)
    monday_morning = datetime(2026, 12, 7, 9, 0, tzinfo=UTC)
    assert start_time(monday_morning) == datetime(2026, 12, 7, 14, 0, tzinfo=UTC)
    monday_evening = datetime(2026, 12, 7, 15, 0, tzinfo=UTC)
    assert start_time(monday_evening) == datetime(2026, 12, 8, 14, 0, tzinfo=UTC)


def test_the_next_working_morning_is_in_the_persons_zone_and_skips_the_weekend() -> None:
    friday_evening = datetime(2026, 12, 11, 17, 0, tzinfo=UTC)  # 18:00 in Berlin
    assert next_morning(friday_evening, "Europe/Berlin") == datetime(2026, 12, 14, 7, 1,
                                                                     tzinfo=UTC)
    # New York's Friday morning is still ahead at 05:00 UTC
    assert next_morning(datetime(2026, 12, 11, 5, 0, tzinfo=UTC), "America/New_York") == \
        datetime(2026, 12, 11, 13, 1, tzinfo=UTC)


def test_moves_go_forward_by_what_they_say() -> None:
    window = timedelta(hours=48)
    assert target(SATURDAY_NIGHT, "window", zone="UTC", window=window) == \
        SATURDAY_NIGHT + timedelta(hours=48, minutes=5)
    assert target(SATURDAY_NIGHT, "hour", zone="UTC", window=window) == \
        SATURDAY_NIGHT + timedelta(hours=1)
    assert target(SATURDAY_NIGHT, "morning", zone="Europe/Berlin", window=window) == \
        datetime(2026, 12, 7, 7, 1, tzinfo=UTC)
    with pytest.raises(ClockMoveError):
        target(SATURDAY_NIGHT, "back", zone="UTC", window=window)


def test_the_scenarios_people_carry_their_zone_language_and_roles() -> None:
    people = {p.person_id: p for p in scenario_people(read_scenario("sandbox"))}
    assert "p-olga" not in people  # no chat alias: the local Slack cannot hold her
    assert people["p-tom"].locale == "de-DE" and people["p-maria"].locale == "fr-FR"
    assert people["p-priya"].zone == "America/New_York"
    assert people["p-maria"].steward and not people["p-sarah"].steward
    assert people["p-lee"].verified is False
    assert people["p-sarah"].slack_id == "U0SARAH" and people["p-sarah"].team_id == "T0ACME"


FORM = {"workspace": "acme-legal", "severity": "critical", "question": "When does it end?",
        "candidates": [{"label": "as written", "date": "2027-03-31"}, {"date": "2027-06-30"}],
        "authors": ["p-sarah"], "named": ["p-ahmed"]}


def test_a_question_from_the_form_is_what_ingestion_sends() -> None:
    made = question_request(dict(FORM, restricted=True), tenant="acme",
                            workspaces={"acme-legal"}, people={"p-sarah", "p-ahmed"})
    assert made.tenant_id == "acme" and made.workspace_id == "acme-legal"
    assert [c.label for c in made.candidates] == ["as written", "reading 2"]
    assert made.candidates[1].valid_from == datetime(2027, 6, 30, tzinfo=UTC)
    assert [str(r.value) for r in made.document.acl.read_roles] == ["steward"]
    assert made.authority.authored_by == ["p-sarah"] and made.authority.named == ["p-ahmed"]
    assert made.document.title.startswith("Sandbox document")
    titled = question_request(dict(FORM, title="*Bold* <b>?</b>"), tenant="acme",
                              workspaces={"acme-legal"}, people={"p-sarah", "p-ahmed"})
    assert titled.document.title == "*Bold* <b>?</b>"  # as given: text, whatever it holds
    other = question_request(FORM, tenant="acme", workspaces={"acme-legal"},
                             people={"p-sarah", "p-ahmed"})
    assert other.target != made.target and len(other.document.acl.read_roles) == 3


@pytest.mark.parametrize(("change", "field"), [
    ({"workspace": "globex-legal"}, "workspace"),
    ({"severity": "urgent-secret"}, "severity"),
    ({"question": ""}, "question"),
    ({"question": "x" * 501}, "question"),
    ({"title": "x" * 501}, "title"),
    ({"candidates": [{"date": "31/03/2027-secret"}]}, "candidates.0.date"),
    ({"candidates": []}, "candidates"),
    ({"authors": ["p-secret-outsider"], "named": []}, "authors"),
    ({"authors": [], "named": []}, "authors"),
])
def test_a_bad_form_names_the_field_and_never_the_value(change: dict, field: str) -> None:
    with pytest.raises(QuestionError) as refused:
        question_request({**FORM, **change}, tenant="acme", workspaces={"acme-legal"},
                         people={"p-sarah", "p-ahmed"})
    assert str(refused.value).startswith(field + ":")
    assert "secret" not in str(refused.value)


def test_a_scenario_that_extends_another_changes_only_what_it_lists(tmp_path) -> None:
    base = read_scenario("acme")
    sandbox = read_scenario("sandbox")
    assert sandbox["name"] == "sandbox" and "extends" not in sandbox
    assert len(sandbox["people"]) == len(base["people"])
    assert len(sandbox["clarifications"]) == len(base["clarifications"])
    tom = next(p for p in sandbox["people"] if p["id"] == "p-tom")
    assert (tom["locale"], tom["time_zone"], tom["display_name"]) == (
        "de-DE", "Europe/Berlin", "Tom Becker")
    added = tmp_path / "more.toml"
    added.write_text('extends = "sandbox"\n[[people]]\nid = "p-new"\ntenant = "acme"\n'
                     'display_name = "New Person"\n', encoding="utf-8")
    more = read_scenario(added)
    assert [p["id"] for p in more["people"]][-1] == "p-new"
    assert next(p for p in more["people"] if p["id"] == "p-tom")["locale"] == "de-DE"
    circle = tmp_path / "bad.toml"
    circle.write_text('extends = "../acme.toml"\n', encoding="utf-8")
    with pytest.raises(ScenarioError, match="extends: expected the name"):
        read_scenario(circle)

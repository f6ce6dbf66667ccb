"""bench/org.py at the suite's size (``--quick``: 60 people, 3 days of questions and one after),
every run end to end through the real engine; its invariants are asserted, never its timings.
Also the company's model on its own: whose working time an answer waits for, and that one seed
draws one company, one stream of questions and one answer per card."""

from __future__ import annotations

import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import org  # noqa: E402
from org_model import Absence, Knobs, Person, company, reply  # noqa: E402

# the end-to-end tests share the --quick runs: some 10 s, in processes of their own
quick_runs = pytest.mark.slow


@pytest.fixture(scope="module")
def kept(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("org") / "quick.json"


@pytest.fixture(scope="module")
def quick(kept: Path) -> dict[str, Any]:
    return org.main(["--quick", "--jobs", "2", "--json", str(kept)])


def runs(summary: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {name: run for name, run in summary["runs"].items() if run is not None}


@quick_runs
def test_every_run_ran_and_met_the_same_company(quick: dict[str, Any]) -> None:
    names = [v.name for v in org.variants()]
    assert list(quick["runs"]) == names
    ran = runs(quick)
    assert set(ran) == {v.name for v in org.variants() if v.available}
    assert (quick["runs"]["no away"] is None) is (not org.AWAY)
    assert len({run["questions"] for run in ran.values()}) == 1
    assert all(run["questions"] > 0 and run["messages"]["card"] > 0 for run in ran.values())


@quick_runs
def test_a_kept_run_prints_its_table_again(quick: dict[str, Any], kept: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    org.main(["--table", str(kept)])
    shown = capsys.readouterr().out
    assert shown.startswith("| measure | all rules | no hours |")
    assert "| steward escalations |" in shown and "| skips: daily cap / away |" in shown


@quick_runs
def test_every_question_is_accounted_for(quick: dict[str, Any]) -> None:
    for run in runs(quick).values():
        assert sum(run["status"].values()) == run["questions"], run["name"]
        assert run["status"]["bound"] > 0, run["name"]
        assert run["dead_letters"] == run["status"]["dead_lettered"]


@quick_runs
def test_the_interruptions_counted_are_the_messages_the_channel_holds(
        quick: dict[str, Any]) -> None:
    for run in runs(quick).values():
        assert run["per_person"] == run["recorded_per_person"], run["name"]
        assert sum(run["messages"].values()) == sum(run["recorded_per_person"].values())
        assert run["escalations"] == run["messages"]["escalation"]


@quick_runs
def test_no_normal_card_outside_working_hours_while_the_hours_hold(
        quick: dict[str, Any]) -> None:
    for name, run in runs(quick).items():
        if name != "no hours":
            assert run["normal_outside_hours"] == 0, name
            assert run["reminders_outside_hours"] == 0, name


@quick_runs
def test_no_card_to_someone_away_while_away_aware(quick: dict[str, Any]) -> None:
    """Without away-awareness (a build without the setting, or its run switched off) the
    company has cards meet someone away; with it, no card, reminder or digest does (stewards'
    messages still go: nobody comes after the steward)."""
    ran = runs(quick)
    unaware = ran["no away"] if org.AWAY else ran["all rules"]
    assert unaware["to_someone_away"]["card"] > 0
    if not org.AWAY:
        pytest.skip("this build has no [clarify.away] setting")
    for name, run in ran.items():
        if name != "no away":
            assert run["to_someone_away"] == {**run["to_someone_away"], "card": 0,
                                              "reminder": 0, "digest": 0}, name
            assert run["away_asked"] > 0, name


@quick_runs
def test_a_disabled_rule_shows_in_its_run(quick: dict[str, Any]) -> None:
    ran = runs(quick)
    assert ran["no reminder"]["messages"]["reminder"] == 0
    assert ran["all rules"]["messages"]["reminder"] > 0
    assert ran["no caps"]["skips"].get("DAILY_CAP_EXCEEDED", 0) == 0
    assert ran["no digests"]["messages"]["digest"] == 0


def test_an_answer_waits_for_the_persons_own_working_time() -> None:
    """Two working hours from Friday 17:00 in Berlin: one on Friday, one on Monday, unless
    Monday is a day of their absence (then Tuesday)."""
    friday = datetime(2026, 11, 20, 16, 0, tzinfo=UTC)  # 17:00 in Berlin
    person = Person(index=0, person_id="p", user_id="U", zone="Europe/Berlin", locale="de-DE",
                    workspace="ws", steward=False, activity=1.0, answer_p=1.0,
                    median_hours=1.0, absence=None)
    assert person.later_by(friday, 2.0) == datetime(2026, 11, 23, 8, 0, tzinfo=UTC)
    away = Absence(begins=datetime(2026, 11, 22, 23, 0, tzinfo=UTC),
                   ends=datetime(2026, 11, 23, 23, 0, tzinfo=UTC), announced=False)
    gone = Person(**{**person.__dict__, "absence": away})
    assert gone.later_by(friday, 2.0) == datetime(2026, 11, 24, 8, 0, tzinfo=UTC)
    assert gone.away_at(datetime(2026, 11, 23, 12, 0, tzinfo=UTC)) is away
    tokyo = Person(**{**person.__dict__, "zone": "Asia/Tokyo"})
    assert not tokyo.works_on(datetime(2026, 11, 23).date())  # a public holiday there


def test_one_seed_draws_one_company_and_one_answer_per_card() -> None:
    knobs = Knobs(people=80, days=2.0, seed=3)
    first, again = company(knobs), company(knobs)
    assert first.questions == again.questions and first.people == again.people
    assert len(first.stewards) == 1 and first.questions
    severities = {q.severity for q in company(Knobs(people=400, days=5.0)).questions}
    assert severities == {"low", "normal", "high", "critical"}
    person = next(p for p in first.people if p.answer_p > 0)
    at = knobs.start + timedelta(hours=9)
    assert reply(first, person, 4, at, reminded=False) == reply(again, person, 4, at,
                                                                 reminded=False)
    never = next((p for p in company(Knobs(people=400)).people if p.answer_p == 0), None)
    assert never is not None and reply(first, never, 1, at, reminded=True) is None

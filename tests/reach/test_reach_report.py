"""The reach report's arithmetic on a known record, number by number."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bot.engine.hours import working_time
from bot.reach.log import Kind, ReachEntry
from bot.reach.report import cause_of, compute, nearest_rank
from bot.settings.clarify import HoursSettings
from clarify_bot.report_cli import as_csv, as_json, as_table, parse_since

T0 = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)  # a Monday (2025-W10)
H = timedelta(hours=1)
_n = iter(range(10_000))


def e(cid: str, person: str, kind: Kind, at: datetime, *, platform: str = "slack",
      severity: str = "normal", reason: str | None = None, cause: str | None = None,
      workspace: str = "ws-1", tenant: str = "acme", zone: str | None = None,
      group: str | None = None) -> ReachEntry:
    return ReachEntry(f"e{next(_n)}", at, tenant, workspace, platform, person, cid, kind,
                      severity, reason, cause, zone, group)


RECORD = [
    # c1: asked on Slack, bound after 2 h, never escalated
    e("c1", "p-a", Kind.ASKED, T0),
    e("c1", "p-a", Kind.ANSWERED, T0 + 2 * H),
    e("c1", "p-a", Kind.BOUND, T0 + 2 * H),
    # c2: p-b has no alias, p-c asked, escalated at 4 h, bound at 6 h (after the escalation)
    e("c2", "p-b", Kind.SKIPPED, T0, reason="NO_DELIVERY_ALIAS", platform="-",
      cause="no Slack or Teams alias"),
    e("c2", "p-c", Kind.ASKED, T0, severity="normal"),
    e("c2", "p-c", Kind.REMINDED, T0 + 3 * H),
    e("c2", "p-s", Kind.ESCALATED, T0 + 4 * H),
    e("c2", "p-c", Kind.BOUND, T0 + 6 * H),
    # c3 (high, Teams): p-d blocked the bot, dead-lettered; p-b no alias again
    e("c3", "p-d", Kind.SKIPPED, T0, platform="teams", severity="high",
      reason="DELIVERY_FAILED",
      cause="MessageWritesBlocked: the person blocked the bot or removed the app in Teams"),
    e("c3", "p-b", Kind.SKIPPED, T0, platform="-", severity="high",
      reason="NO_DELIVERY_ALIAS", cause="no alias"),
    e("c3", "p-s", Kind.DEAD_LETTERED, T0 + 8 * H, severity="high"),
    # c4 (high, Teams): p-e not installed on Teams, then reached on Slack: not failed
    e("c4", "p-e", Kind.SKIPPED, T0, platform="teams", severity="high",
      reason="NO_DELIVERY_ALIAS", cause="the Teams app is not installed for this person"),
    e("c4", "p-e", Kind.ASKED, T0 + H, platform="teams", severity="high"),
    e("c4", "p-e", Kind.BOUND, T0 + 5 * H, platform="teams", severity="high"),
    # c5 (ws-2): p-a in a digest (two questions, one digest), a daily-cap skip (no failure)
    e("c5", "p-a", Kind.DIGESTED, T0 + 24 * H, workspace="ws-2"),
    e("c6", "p-a", Kind.DIGESTED, T0 + 24 * H, workspace="ws-2"),
    e("c6", "p-f", Kind.SKIPPED, T0, workspace="ws-2", reason="DAILY_CAP_EXCEEDED"),
    # another tenant, left out by --tenant acme
    e("c9", "p-z", Kind.ASKED, T0, tenant="globex"),
]


def test_questions_per_workspace_and_platform() -> None:
    report = compute(RECORD, tenant="acme")
    rows = {(r.workspace, r.platform): r for r in report.rows}
    assert sorted(rows) == [("ws-1", "-"), ("ws-1", "slack"), ("ws-1", "teams"),
                            ("ws-2", "slack")]
    slack = rows[("ws-1", "slack")]
    assert (slack.questions, slack.asked, slack.bound, slack.open, slack.escalated,
            slack.dead_lettered) == (2, 2, 2, 0, 1, 0)
    assert slack.bound_before_escalation == 0.5  # c1 yes, c2 bound after its escalation
    never = rows[("ws-1", "-")]  # c3: nobody asked
    assert (never.questions, never.asked, never.open, never.dead_lettered) == (1, 0, 0, 1)
    assert never.bound_before_escalation is None
    assert (rows[("ws-1", "teams")].bound, rows[("ws-2", "slack")].open) == (1, 2)


def test_time_to_bound_by_severity() -> None:
    timings = {t.severity: t for t in compute(RECORD, tenant="acme").timings}
    assert (timings["normal"].bound, timings["normal"].median_seconds,
            timings["normal"].p90_seconds) == (2, 4 * 3600, 6 * 3600)
    assert (timings["high"].bound, timings["high"].median_seconds) == (1, 4 * 3600)


def test_unreached_by_cause_and_the_failed() -> None:
    report = compute(RECORD, tenant="acme")
    causes = {c.cause: (c.people, c.questions) for c in report.causes}
    assert causes == {"no_alias": (["p-b"], 2),
                      "blocked_or_uninstalled": (["p-d"], 1),
                      "app_not_installed": (["p-e"], 1)}
    assert report.causes[0].cause == "no_alias"  # the costliest first
    failed = {f.person_id: (f.cause, f.clarification_ids) for f in report.failed}
    assert failed == {"p-b": ("no_alias", ["c2", "c3"]),
                      "p-d": ("blocked_or_uninstalled", ["c3"])}  # p-e was reached after all


def test_interruptions_per_person_and_week() -> None:
    i = compute(RECORD, tenant="acme").interruptions
    # p-a: a card and one digest (two entries) = 2; p-c: a card and a reminder = 2; p-e: 1
    assert i.top == [("p-a", "2025-W10", 2), ("p-c", "2025-W10", 2), ("p-e", "2025-W10", 1)]
    assert (i.median, i.p95) == (2, 2)


def test_since_and_every_tenant() -> None:
    assert sum(r.questions for r in compute(RECORD).rows) == 7
    later = compute(RECORD, since=T0 + 24 * H)
    assert [(r.workspace, r.questions) for r in later.rows] == [("ws-2", 2)]


def test_causes_and_percentiles() -> None:
    assert cause_of("DELIVERY_FAILED", "account_inactive") == "deactivated"
    assert cause_of("NO_DELIVERY_ALIAS", "the Slack app was uninstalled from the person's "
                    "workspace") == "blocked_or_uninstalled"
    assert cause_of("TENANT_SCOPE_MISMATCH", None) == "tenant_scope"
    assert cause_of("NO_READ_PERMISSION", None) == "no_read_permission"
    assert cause_of("DAILY_CAP_EXCEEDED", None) is None
    assert nearest_rank([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 90) == 9
    assert nearest_rank([], 50) is None


def test_outputs() -> None:
    report = compute(RECORD, tenant="acme")
    assert json.loads(as_json(report, failed=True))["failed"][0]["person_id"] == "p-b"
    table = as_table(report, failed=False)
    assert "no_alias: 1 person, 2 questions; fix: identity sync" in table
    assert as_csv(report, failed=True).splitlines()[1:] == [
        "p-b,acme,ws-1,-,no_alias,c2 c3", "p-d,acme,ws-1,teams,blocked_or_uninstalled,c3"]
    assert "questions,ws-1,slack,,bound,2" in as_csv(report, failed=False)
    assert parse_since("7d", T0) == T0 - timedelta(days=7)
    assert parse_since("2025-03-01", T0) == datetime(2025, 3, 1, tzinfo=UTC)


FRIDAY = datetime(2025, 3, 7, tzinfo=UTC)  # New York springs forward on Sunday 9 March 2025
WORKDAYS = [
    # n1: asked Friday 16:00 in New York (EST), a digest to another zone later, bound Monday
    # 10:00 there (EDT): 2 h on Friday, 2 h on Monday; 65 h of wall time
    e("n1", "p-a", Kind.ASKED, FRIDAY + 21 * H, zone="America/New_York"),
    e("n1", "p-b", Kind.DIGESTED, FRIDAY + 22 * H, zone="Asia/Tokyo"),
    e("n1", "p-a", Kind.BOUND, FRIDAY + 3 * 24 * H + 14 * H),
    # n2: asked on Saturday, no zone kept (a version 1 row): the tenant's default, Berlin;
    # bound Monday 09:00 there: 1 h, 46 h of wall time
    e("n2", "p-c", Kind.ASKED, FRIDAY + 24 * H + 10 * H),
    e("n2", "p-c", Kind.BOUND, FRIDAY + 3 * 24 * H + 8 * H),
    # n3 (high): Monday 09:00-11:00 in Tokyo
    e("n3", "p-d", Kind.ASKED, FRIDAY + 3 * 24 * H, severity="high", zone="Asia/Tokyo"),
    e("n3", "p-d", Kind.BOUND, FRIDAY + 3 * 24 * H + 2 * H, severity="high"),
]
BERLIN_HOURS = working_time(HoursSettings(time_zone="Europe/Berlin"))


def test_time_to_bound_in_working_hours_and_wall_time() -> None:
    """Working hours are those of the person the first card went to, in the zone it was sent
    in (an entry without one: the tenant's default zone), over a weekend and a switch of the
    clocks; wall time beside them."""
    timings = {t.severity: t for t in compute(WORKDAYS, hours=BERLIN_HOURS).timings}
    normal, high = timings["normal"], timings["high"]
    assert (normal.bound, normal.median_working_seconds, normal.p90_working_seconds) == (
        2, 2.5 * 3600, 4 * 3600)
    assert (normal.median_seconds, normal.p90_seconds) == (55.5 * 3600, 65 * 3600)
    assert (high.median_working_seconds, high.median_seconds) == (2 * 3600, 2 * 3600)
    # without working hours given: wall time only
    (plain,) = [t for t in compute(WORKDAYS).timings if t.severity == "high"]
    assert (plain.median_seconds, plain.median_working_seconds,
            plain.p90_working_seconds) == (2 * 3600, None, None)


def test_outputs_show_working_hours_and_wall_time() -> None:
    report = compute(WORKDAYS, hours=BERLIN_HOURS)
    table = as_table(report, failed=False)
    assert ("  normal       2 bound  working median   2.5h  p90   4.0h  wall median  55.5h  "
            "p90  65.0h") in table
    (normal,) = [t for t in json.loads(as_json(report, failed=False))["timings"]
                 if t["severity"] == "normal"]
    assert normal == {"severity": "normal", "bound": 2, "median_seconds": 55.5 * 3600,
                      "p90_seconds": 65 * 3600, "median_working_seconds": 2.5 * 3600,
                      "p90_working_seconds": 4 * 3600}
    csv_rows = as_csv(report, failed=False).splitlines()
    assert "time_to_bound,,,normal,median_working_seconds,9000.0" in csv_rows
    assert "time_to_bound,,,normal,p90_working_seconds,14400.0" in csv_rows
    assert "time_to_bound,,,normal,median_seconds,199800.0" in csv_rows


def test_the_structured_cause_first_the_words_for_older_entries() -> None:
    """A skip's cause group (its adapter classified the refusal) decides; an entry without one
    (a row of reach schema 1, or a refusal no adapter classifies) is grouped by its words;
    the reason code still decides where it says it all."""
    uninstalled = "no Slack installation serves the person's workspace"
    assert cause_of("NO_DELIVERY_ALIAS", uninstalled, "app_not_installed") == "app_not_installed"
    assert cause_of("NO_DELIVERY_ALIAS", uninstalled) == "no_alias"  # the words cannot tell
    assert cause_of("DELIVERY_FAILED", "blocked by policy", "deactivated") == "deactivated"
    assert cause_of("DELIVERY_FAILED", "user_disabled", None) == "deactivated"
    assert cause_of("DELIVERY_FAILED", "user_disabled", "not_a_group") == "deactivated"
    assert cause_of("NO_READ_PERMISSION", None, "deactivated") == "no_read_permission"
    assert cause_of("DAILY_CAP_EXCEEDED", None, "deactivated") is None
    record = [
        e("s1", "p-g", Kind.SKIPPED, T0, reason="NO_DELIVERY_ALIAS", cause=uninstalled,
          group="app_not_installed"),
        e("s1", "p-h", Kind.SKIPPED, T0, reason="DELIVERY_FAILED", cause="user_disabled"),
        e("s2", "p-g", Kind.SKIPPED, T0, reason="NO_DELIVERY_ALIAS", cause=uninstalled,
          group="app_not_installed"),
    ]
    report = compute(record)
    assert [(c.cause, c.people, c.questions) for c in report.causes] == [
        ("app_not_installed", ["p-g"], 2), ("deactivated", ["p-h"], 1)]
    assert {f.person_id: f.cause for f in report.failed} == {
        "p-g": "app_not_installed", "p-h": "deactivated"}


def test_the_operations_guide_shows_what_the_report_prints() -> None:
    """docs/operations.md, "Reach report": its sample table and ``--failed`` are this record's
    report, as the CLI prints them (working hours in Berlin, the tenant's default)."""
    guide = (Path(__file__).parents[2] / "docs" / "operations.md").read_text(encoding="utf-8")
    section = guide[guide.index("## Reach report"):guide.index("## Logs and audit")]
    table, failed = re.findall(r"```\n(.*?)```", section, flags=re.S)[:2]
    report = compute(RECORD + WORKDAYS, tenant="acme", hours=BERLIN_HOURS)
    assert as_table(report, failed=False) == table
    assert as_table(report, failed=True) == failed

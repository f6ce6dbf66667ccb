"""The away rules themselves (``bot.engine.away``), without a core: what follows an away, when a
person is back, the steward's view of the skips, and the reach record's cause group."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from bot.audit import SkipPair
from bot.channel import Address, Away
from bot.channels.recording import RecordingChannel
from bot.clock import ManualClock
from bot.core.models import ReasonCode, Severity
from bot.engine.away import AwayCheck, Decision, Verdict, remember, said, steward_skips
from bot.engine.zones import PersonZone, Zones
from bot.reach.causes import FIXES, cause_of
from bot.settings import AwaySettings
from bot.settings.clarify import HoursSettings
from bot.store.memory import MemoryStore

MONDAY = datetime(2026, 7, 6, 9, 0, tzinfo=UTC)  # 10:00 in London
LONDON = PersonZone(ZoneInfo("Europe/London"))
SARAH = Address("slack", "p-sarah", "U0SARAH")


def check(*, hours: bool = True, away: Away | None = None) -> AwayCheck:
    channel = RecordingChannel()
    if away is not None:
        channel.away_for["p-sarah"] = away
    store = MemoryStore(clock=ManualClock(MONDAY))
    return AwayCheck({"slack": channel}, AwaySettings(),
                     Zones(store, {"slack": channel}, HoursSettings(enabled=hours)))


async def decide(away: AwayCheck, severity: Severity = Severity.NORMAL) -> Decision:
    return await away.decide(tenant_id="acme", severity=severity, address=SARAH, zone=LONDON,
                             now=MONDAY, moves_on_at=MONDAY + timedelta(hours=48, minutes=1))


async def test_not_away_is_asked() -> None:
    assert (await decide(check())).verdict is Verdict.ASK


async def test_back_before_the_move_on_is_held_till_the_first_working_hour_back() -> None:
    """Back on Monday at 21:00 in London: held till Tuesday 08:00 there; with the hours off,
    till the return itself."""
    away = Away(datetime(2026, 7, 6, 20, 0, tzinfo=UTC), "slack_status")
    held = await decide(check(away=away))
    assert (held.verdict, held.until) == (Verdict.HOLD, datetime(2026, 7, 7, 7, 0, tzinfo=UTC))
    plain = await decide(check(hours=False, away=away))
    assert (plain.verdict, plain.until) == (Verdict.HOLD, away.until)


async def test_back_after_the_move_on_or_never_said_is_passed_over() -> None:
    """Back Wednesday at 17:00 in London: after it moves on (Wednesday 09:01 UTC)."""
    late = Away(datetime(2026, 7, 8, 16, 0, tzinfo=UTC), "slack_status")
    assert (await decide(check(away=late))).verdict is Verdict.PASS
    assert (await decide(check(away=Away(None, "slack_dnd")))).verdict is Verdict.PASS
    # back half an hour before it moves on, in her hours: held all the same
    just = Away(datetime(2026, 7, 8, 8, 30, tzinfo=UTC), "slack_status")  # 09:30 London
    assert (await decide(check(away=just))).verdict is Verdict.HOLD


async def test_a_critical_question_passes_over_whoever_is_away() -> None:
    soon = Away(MONDAY + timedelta(minutes=30), "slack_dnd")
    decided = await decide(check(away=soon), Severity.CRITICAL)
    assert (decided.verdict, decided.critical) == (Verdict.PASS, True)


def test_the_trail_says_the_return_day_in_utc() -> None:
    assert said(Away(datetime(2026, 12, 14, 0, 30, tzinfo=ZoneInfo("Europe/Berlin")),
                     "slack_status")) == "was away until 13 December 2026"
    assert said(Away(None, "slack_status")) == "was away with no return date"


async def test_the_steward_reads_the_record_whatever_code_the_trail_holds() -> None:
    """The baseline core's trail holds DAILY_CAP_EXCEEDED for Sarah's away skip, this pass
    PERSON_AWAY: one line, away, with her return; Ahmed's genuine cap stays a cap."""
    store = MemoryStore(clock=ManualClock(MONDAY))
    back = MONDAY + timedelta(days=14)
    await remember(store, "clr-1", "p-sarah", Away(back, "slack_status"))
    shown = await steward_skips(store, "clr-1", [
        SkipPair("p-sarah", ReasonCode.DAILY_CAP_EXCEEDED),
        SkipPair("p-ahmed", ReasonCode.DAILY_CAP_EXCEEDED),
        SkipPair("p-sarah", ReasonCode.PERSON_AWAY)], {"p-sarah": "Sarah", "p-ahmed": "Ahmed"})
    assert [(s.person, s.reason, s.until) for s in shown] == [
        ("Sarah", ReasonCode.PERSON_AWAY, back), ("Ahmed", ReasonCode.DAILY_CAP_EXCEEDED, None)]


def test_the_reach_record_groups_them_as_away() -> None:
    assert "away" in FIXES
    assert cause_of("PERSON_AWAY", "Slack status; no return date") == "away"
    assert cause_of("DAILY_CAP_EXCEEDED", None, "away") == "away"  # the spec's code in place
    assert cause_of("DAILY_CAP_EXCEEDED", None) is None  # a cap is no failure to reach them

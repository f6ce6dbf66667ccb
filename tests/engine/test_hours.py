"""The pure working-hours rules, table by table (bot/engine/hours.py)."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from zoneinfo import ZoneInfo

import pytest

from bot.engine.hours import (
    WorkingHours,
    parse_days,
    working_point,
    working_seconds,
    working_time,
)
from bot.settings.clarify import HoursSettings

BERLIN = ZoneInfo("Europe/Berlin")
NEW_YORK = ZoneInfo("America/New_York")
TOKYO = ZoneInfo("Asia/Tokyo")
HOURS = WorkingHours()


def local(zone: ZoneInfo, *parts: int) -> datetime:
    return datetime(*parts, tzinfo=zone).astimezone(UTC)  # type: ignore[misc]


NEXT_OPEN = [
    # (zone, local "at", local expected next opening)
    ("Berlin 02:00 Tuesday -> 08:00", BERLIN, (2026, 12, 1, 2, 0), (2026, 12, 1, 8, 0)),
    ("Berlin 07:59:59 -> 08:00", BERLIN, (2026, 12, 1, 7, 59, 59), (2026, 12, 1, 8, 0)),
    ("Berlin 08:00 is open", BERLIN, (2026, 12, 1, 8, 0), (2026, 12, 1, 8, 0)),
    ("Berlin 17:59 is open", BERLIN, (2026, 12, 1, 17, 59), (2026, 12, 1, 17, 59)),
    ("Berlin 18:00 -> next day", BERLIN, (2026, 12, 1, 18, 0), (2026, 12, 2, 8, 0)),
    ("Friday 19:00 -> Monday 08:00", BERLIN, (2026, 12, 4, 19, 0), (2026, 12, 7, 8, 0)),
    ("Saturday noon -> Monday", BERLIN, (2026, 12, 5, 12, 0), (2026, 12, 7, 8, 0)),
    ("Sunday 23:59 -> Monday", BERLIN, (2026, 12, 6, 23, 59), (2026, 12, 7, 8, 0)),
    # Berlin springs forward on Sunday 29 March 2026 and falls back on Sunday 25 October 2026
    ("Berlin Friday before spring switch", BERLIN, (2026, 3, 27, 20, 0), (2026, 3, 30, 8, 0)),
    ("Berlin falls back, Sunday night", BERLIN, (2026, 10, 25, 2, 30), (2026, 10, 26, 8, 0)),
    # New York springs forward on Sunday 8 March 2026 and falls back on Sunday 1 November 2026
    ("New York 02:00 -> 08:00", NEW_YORK, (2026, 12, 1, 2, 0), (2026, 12, 1, 8, 0)),
    ("New York Friday 19:00 -> Monday", NEW_YORK, (2026, 3, 6, 19, 0), (2026, 3, 9, 8, 0)),
    ("New York after fall back", NEW_YORK, (2026, 10, 30, 18, 30), (2026, 11, 2, 8, 0)),
    ("Tokyo (no DST) 06:00 -> 08:00", TOKYO, (2026, 7, 1, 6, 0), (2026, 7, 1, 8, 0)),
]


@pytest.mark.parametrize(
    ("zone", "at", "expected"), [row[1:] for row in NEXT_OPEN], ids=[row[0] for row in NEXT_OPEN]
)
def test_next_open(zone: ZoneInfo, at: tuple[int, ...], expected: tuple[int, ...]) -> None:
    got = HOURS.next_open(local(zone, *at), zone)
    assert got == local(zone, *expected)
    assert got.tzinfo is UTC
    assert HOURS.open_at(got, zone)


def test_the_utc_offset_differs_across_a_switch_but_the_wall_time_does_not() -> None:
    before = HOURS.next_open(local(BERLIN, 2026, 3, 27, 20, 0), BERLIN)  # Monday 30 March, CEST
    friday = HOURS.next_open(local(BERLIN, 2026, 3, 26, 20, 0), BERLIN)  # Friday 27 March, CET
    assert before.hour == 6 and friday.hour == 7  # 08:00 local both days, UTC+2 then UTC+1
    assert before.astimezone(BERLIN).time() == friday.astimezone(BERLIN).time() == time(8, 0)


OPEN_AT = [
    ("Berlin Monday 08:00", BERLIN, (2026, 12, 7, 8, 0), True),
    ("Berlin Monday 07:59", BERLIN, (2026, 12, 7, 7, 59), False),
    ("Berlin Monday 18:00", BERLIN, (2026, 12, 7, 18, 0), False),
    ("Berlin Saturday 10:00", BERLIN, (2026, 12, 5, 10, 0), False),
    ("New York 09:00 is 15:00 Berlin", NEW_YORK, (2026, 12, 7, 9, 0), True),
    ("DST day: Berlin Monday 30 March 08:00", BERLIN, (2026, 3, 30, 8, 0), True),
]


@pytest.mark.parametrize(
    ("zone", "at", "expected"), [row[1:] for row in OPEN_AT], ids=[row[0] for row in OPEN_AT]
)
def test_open_at(zone: ZoneInfo, at: tuple[int, ...], expected: bool) -> None:
    assert HOURS.open_at(local(zone, *at), zone) is expected


def test_the_same_instant_is_open_in_one_zone_and_not_in_another() -> None:
    at = local(BERLIN, 2026, 12, 1, 9, 0)  # 03:00 in New York
    assert HOURS.open_at(at, BERLIN)
    assert not HOURS.open_at(at, NEW_YORK)
    assert HOURS.next_open(at, NEW_YORK) == local(NEW_YORK, 2026, 12, 1, 8, 0)


def test_custom_days_and_hours() -> None:
    weekend = WorkingHours(days=parse_days("sat-sun"), start=time(10), end=time(12))
    friday = local(BERLIN, 2026, 12, 4, 11, 0)
    assert not weekend.open_at(friday, BERLIN)
    assert weekend.next_open(friday, BERLIN) == local(BERLIN, 2026, 12, 5, 10, 0)
    assert parse_days("fri-mon") == frozenset({4, 5, 6, 0})
    assert parse_days("mon,wed") == frozenset({0, 2})


@pytest.mark.parametrize(
    "bad",
    [
        {"days": frozenset()},
        {"days": frozenset({7})},
        {"start": time(18), "end": time(8)},
        {"start": time(9), "end": time(9)},
    ],
)
def test_impossible_hours_are_refused(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        WorkingHours(**bad)  # type: ignore[arg-type]


def test_a_naive_time_is_refused() -> None:
    with pytest.raises(ValueError):
        HOURS.open_at(datetime(2026, 12, 1, 9, 0), BERLIN)


@pytest.mark.parametrize("bad", ["", "monday", "mon-xyz"])
def test_days_written_wrong(bad: str) -> None:
    with pytest.raises(ValueError):
        parse_days(bad)


H = 3600.0
WORKING = [
    # (zone, local start, local end, working hours between; 08:00-18:00 Monday to Friday)
    ("within a morning", BERLIN, (2026, 12, 1, 9, 0), (2026, 12, 1, 11, 30), 2.5),
    ("before the hours open", BERLIN, (2026, 12, 1, 6, 0), (2026, 12, 1, 8, 45), 0.75),
    ("across a night", BERLIN, (2026, 12, 1, 17, 0), (2026, 12, 2, 9, 0), 2),
    ("Friday afternoon to Monday morning", BERLIN, (2026, 12, 4, 16, 0), (2026, 12, 7, 10, 0),
     4),
    ("inside a weekend", BERLIN, (2026, 12, 5, 9, 0), (2026, 12, 6, 17, 0), 0),
    ("Saturday to Monday 08:30", BERLIN, (2026, 12, 5, 12, 0), (2026, 12, 7, 8, 30), 0.5),
    ("a whole week", BERLIN, (2026, 11, 30, 0, 0), (2026, 12, 7, 0, 0), 50),
    ("four weeks", BERLIN, (2026, 11, 30, 0, 0), (2026, 12, 28, 0, 0), 200),
    ("the end before the start", BERLIN, (2026, 12, 1, 12, 0), (2026, 12, 1, 10, 0), 0),
    # Berlin springs forward on Sunday 29 March 2026: 63 hours of wall time, two working
    ("over Berlin's spring switch", BERLIN, (2026, 3, 27, 17, 0), (2026, 3, 30, 9, 0), 2),
    ("over Berlin's fall back", BERLIN, (2026, 10, 23, 17, 0), (2026, 10, 26, 9, 0), 2),
    # New York springs forward on Sunday 8 March 2026: Friday 12:00 EST to Monday 12:00 EDT
    ("over New York's spring switch", NEW_YORK, (2026, 3, 6, 12, 0), (2026, 3, 9, 12, 0), 10),
    ("Tokyo's working day, from UTC", TOKYO, (2026, 7, 1, 7, 0), (2026, 7, 1, 19, 0), 10),
]


@pytest.mark.parametrize(("zone", "start", "end", "hours"),
                         [row[1:] for row in WORKING], ids=[row[0] for row in WORKING])
def test_working_seconds(zone: ZoneInfo, start: tuple[int, ...], end: tuple[int, ...],
                         hours: float) -> None:
    assert working_seconds(HOURS, zone, local(zone, *start), local(zone, *end)) == hours * H


def test_working_seconds_are_lived_seconds_on_a_switch_day() -> None:
    """Hours that hold the switch itself: Sunday 00:00-06:00 in Berlin is five hours on the
    spring-forward day and seven on the fall-back day, as a clock on the wall counts them."""
    night = WorkingHours(days=frozenset({6}), start=time(0, 0), end=time(6, 0))
    spring = working_seconds(night, BERLIN, local(BERLIN, 2026, 3, 28, 12, 0),
                             local(BERLIN, 2026, 3, 30, 0, 0))
    autumn = working_seconds(night, BERLIN, local(BERLIN, 2026, 10, 24, 12, 0),
                             local(BERLIN, 2026, 10, 26, 0, 0))
    assert (spring, autumn) == (5 * H, 7 * H)
    # an instant inside the repeated hour, the hours' end in it too: counted, never negative
    repeated = WorkingHours(days=frozenset({6}), start=time(1, 0), end=time(2, 30))
    second_pass = datetime(2026, 10, 25, 1, 10, tzinfo=UTC)  # 02:10 CET, after the switch
    assert working_seconds(repeated, BERLIN, second_pass,
                           second_pass + timedelta(hours=2)) == 20 * 60


def test_working_seconds_refuse_a_naive_time() -> None:
    with pytest.raises(ValueError):
        working_seconds(HOURS, BERLIN, datetime(2026, 12, 1, 9, 0),
                        datetime(2026, 12, 1, 10, 0, tzinfo=UTC))


def test_working_time_by_the_tenants_hours_in_the_persons_zone() -> None:
    """The tenant's own hours and default zone, else ``[clarify.hours]``; a person's zone when
    the entry names one (an IANA name), else the tenant's default."""
    settings = HoursSettings(time_zone="Europe/Berlin", tenants=(
        {"tenant": "globex", "days": "mon-sat", "start": "10:00", "end": "12:00",
         "time_zone": "Asia/Tokyo"},))  # type: ignore[arg-type]
    between = working_time(settings)
    start = local(BERLIN, 2026, 12, 4, 16, 0)  # a Friday, 16:00 in Berlin
    end = local(BERLIN, 2026, 12, 7, 10, 0)  # the Monday, 10:00 in Berlin
    assert between("acme", None, start, end) == 4 * H  # Berlin, the default's 08:00-18:00
    assert between("acme", "Europe/Berlin", start, end) == 4 * H
    assert between("acme", "Mars/Olympus", start, end) == 4 * H  # no zone: the default
    # New York: Friday 10:00 to 18:00, and the span ends at 04:00 on Monday: 8 h
    assert between("acme", "America/New_York", start, end) == 8 * H
    # globex: Monday to Saturday 10:00-12:00 in Tokyo; the span runs from Saturday 00:00 to
    # Monday 18:00 there: Saturday's two hours and Monday's
    assert between("globex", None, start, end) == 4 * H


@pytest.mark.parametrize("zone", [BERLIN, ZoneInfo("America/New_York"), ZoneInfo("Asia/Tokyo")])
@pytest.mark.parametrize("start", [(2026, 3, 27, 17, 30), (2026, 10, 23, 9, 0),
                                   (2026, 12, 5, 3, 0), (2026, 12, 7, 7, 59)])
@pytest.mark.parametrize("seconds", [0, 1, 30 * 60, 10 * H - 1, 10 * H, 27 * H + 17])
def test_working_point_is_the_inverse_of_working_seconds(
        zone: ZoneInfo, start: tuple[int, ...], seconds: int) -> None:
    """From any start (a weekend, a night, across a change of the clocks), the instant by which
    ``seconds`` of working time have passed is inside the hours and has exactly those seconds
    behind it."""
    begin = local(zone, *start)
    point = working_point(HOURS, zone, begin, seconds)
    assert HOURS.open_at(point, zone)
    assert working_seconds(HOURS, zone, begin, point) == seconds

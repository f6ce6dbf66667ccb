"""The pure working-hours rules, table by table (bot/engine/hours.py)."""

from __future__ import annotations

from datetime import UTC, datetime, time
from zoneinfo import ZoneInfo

import pytest

from bot.engine.hours import WorkingHours, parse_days

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

"""Where the sandbox's one clock, which the reference core and the bot both read, starts and where
a move takes it: by an hour, a day or a week, to the next working morning in a person's zone, or
past the escalation window (``clarify_bot.sandbox.world.Sandbox.move_clock`` moves it)."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from zoneinfo import ZoneInfo

WORKING_DAYS = range(0, 5)  # Monday to Friday, as the bot's default working hours
MORNING = time(8, 1)  # a minute into the default working day (08:00-18:00)
START = time(14, 0)  # UTC: inside working hours from New York (09:00) to Berlin (15:00)
STEPS = {"hour": timedelta(hours=1), "day": timedelta(days=1), "week": timedelta(days=7)}


class ClockMoveError(ValueError):
    """A move the sandbox does not know."""


def start_time(now: datetime) -> datetime:
    """Where the sandbox starts its clock: the first working day's 14:00 UTC at or after ``now``,
    so that the scenario's people from New York to Berlin are all inside their working hours and
    the first cards go out at once."""
    day = now.astimezone(UTC).date()
    while True:
        at = datetime.combine(day, START, tzinfo=UTC)
        if day.weekday() in WORKING_DAYS and at >= now:
            return at
        day += timedelta(days=1)


def next_morning(now: datetime, zone: str) -> datetime:
    """The next working morning after ``now`` in ``zone``."""
    tz = ZoneInfo(zone)
    day = now.astimezone(tz).date()
    while True:
        at = datetime.combine(day, MORNING, tzinfo=tz)
        if day.weekday() in WORKING_DAYS and at > now:
            return at.astimezone(UTC)
        day += timedelta(days=1)


def target(now: datetime, step: str, *, zone: str, window: timedelta) -> datetime:
    """Where ``step`` moves the clock from ``now``: ``hour``, ``day``, ``week`` (the stewards'
    weekly reach report comes on the Monday in between), ``morning`` (the next
    working morning in ``zone``) or ``window`` (past the escalation window, by five minutes)."""
    if step in STEPS:
        return now + STEPS[step]
    if step == "morning":
        return next_morning(now, zone)
    if step == "window":
        return now + window + timedelta(minutes=5)
    raise ClockMoveError("unknown clock step; expected hour, day, week, morning or window")

"""Injectable clocks: production reads the system clock, tests and the demo move a manual one.

Also what counts as a time zone name (``zone_named``): the settings check a tenant's default with
it, and a person's zone is decided with it (``bot.engine.zones.decide``).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from functools import cache
from typing import Protocol
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

# names the tz database's folder holds that name no place: the machine's own zone, the
# database's placeholder ("-00") and its POSIX rules
_NOT_PLACES = frozenset({"localtime", "Factory", "posixrules"})


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware in UTC."""
        ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


class ManualClock:
    """A clock that only moves when told to; never goes backwards."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2026, 7, 4, 9, 0, tzinfo=UTC)

    def now(self) -> datetime:
        return self._now

    def advance(self, delta: timedelta | float) -> datetime:
        step = delta if isinstance(delta, timedelta) else timedelta(seconds=delta)
        if step < timedelta(0):
            raise ValueError("a manual clock never goes backwards")
        self._now += step
        return self._now

    def set(self, when: datetime) -> datetime:
        if when.tzinfo is None:
            raise ValueError("the clock needs a timezone-aware time")
        if when < self._now:
            raise ValueError("a manual clock never goes backwards")
        self._now = when.astimezone(UTC)
        return self._now


class OffsetClock:
    """System time plus an offset that only grows: a served reference core's movable clock."""

    def __init__(self) -> None:
        self._offset = timedelta(0)

    def now(self) -> datetime:
        return datetime.now(UTC) + self._offset

    def advance(self, delta: timedelta | float) -> datetime:
        step = delta if isinstance(delta, timedelta) else timedelta(seconds=delta)
        if step < timedelta(0):
            raise ValueError("the clock never goes backwards")
        self._offset += step
        return self.now()

    def set(self, when: datetime) -> datetime:
        if when.tzinfo is None:
            raise ValueError("the clock needs a timezone-aware time")
        return self.advance(when - self.now())


def zone_named(name: object) -> ZoneInfo | None:
    """The IANA time zone ``name`` names (``Europe/Berlin``, ``Asia/Kathmandu``, ``UTC``), or
    None when it names none: not a string, empty, unknown (``Mars/Olympus``), a Windows zone
    name (``W. Europe Standard Time``), a file of the database that is no place, or a path."""
    if not isinstance(name, str) or name not in _zone_names():
        return None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        return None


@cache
def _zone_names() -> frozenset[str]:
    """The zones the tz database here names (read once: listing them walks its folder)."""
    return frozenset(available_timezones()) - _NOT_PLACES

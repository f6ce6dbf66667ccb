"""Injectable clocks: production reads the system clock, tests and the demo move a manual one."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Protocol


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

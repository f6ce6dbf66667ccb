"""Working hours: when a person may be asked, in their own time zone.

Pure: no I/O, no clock of its own. Every time in and out is aware; answers are in UTC. Local
times come from :mod:`zoneinfo`, so the days a zone moves its clocks are handled by the tz
database, not by fixed offsets.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from functools import lru_cache
from zoneinfo import ZoneInfo

from bot.clock import zone_named
from bot.settings.clarify import HoursSettings, TenantHours

WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


@dataclass(frozen=True, slots=True)
class WorkingHours:
    """The hours a person may be asked: on ``days`` (Monday=0 ... Sunday=6), ``start`` to ``end``.

    ``start`` is inside the hours and ``end`` is not. ``end`` must be after ``start`` (no shift
    across midnight); a time that does not exist on a day the clocks go forward is read as the
    tz database reads it (the earlier offset), so the hours still open that day.
    """

    days: frozenset[int] = frozenset(range(5))
    start: time = time(8, 0)
    end: time = time(18, 0)

    def __post_init__(self) -> None:
        if not self.days or not self.days <= frozenset(range(7)):
            raise ValueError("working days are a non-empty set of 0 (Monday) to 6 (Sunday)")
        if self.start.tzinfo is not None or self.end.tzinfo is not None:
            raise ValueError("working hours are local wall times, without a zone")
        if not self.start < self.end:
            raise ValueError("working hours end after they start, on the same day")

    def open_at(self, at: datetime, zone: ZoneInfo) -> bool:
        """Whether ``at`` (aware) falls in these hours, read in ``zone``."""
        local = _aware(at).astimezone(zone)
        return local.weekday() in self.days and self.start <= local.time() < self.end

    def next_open(self, at: datetime, zone: ZoneInfo) -> datetime:
        """``at`` itself (in UTC) when open, else the next start of the hours, in UTC."""
        at = _aware(at)
        if self.open_at(at, zone):
            return at.astimezone(UTC)
        day = at.astimezone(zone).date()
        for offset in range(8):
            candidate = day + timedelta(days=offset)
            if candidate.weekday() not in self.days:
                continue
            opening = datetime.combine(candidate, self.start, tzinfo=zone).astimezone(UTC)
            if opening > at:
                return opening
        raise AssertionError("a week always holds a working day")  # pragma: no cover

    def closes_at(self, at: datetime, zone: ZoneInfo) -> datetime:
        """The end of the working period that ``at`` is in (``at`` must be open), in UTC:
        after ``at`` also when the period ends in an hour the clocks repeat and ``at`` is in
        that hour's second pass."""
        at = _aware(at)
        local = at.astimezone(zone)
        closes = datetime.combine(local.date(), self.end, tzinfo=zone).astimezone(UTC)
        if closes <= at:
            closes = datetime.combine(local.date(), self.end, tzinfo=zone).replace(
                fold=1).astimezone(UTC)
        return closes


def _periods(hours: WorkingHours, zone: ZoneInfo, start: datetime
             ) -> Iterator[tuple[datetime, datetime]]:
    """The working periods from ``start`` on, as (opens, closes) in UTC; the first opens at
    ``start`` itself when that is inside the hours."""
    at = _aware(start).astimezone(UTC)
    while True:
        opens = hours.next_open(at, zone)
        at = hours.closes_at(opens, zone)
        yield opens, at


def working_seconds(hours: WorkingHours, zone: ZoneInfo, start: datetime, end: datetime
                    ) -> float:
    """The seconds of ``hours`` (read in ``zone``) between ``start`` and ``end`` (aware; 0 when
    ``end`` is not after ``start``): each working period that overlaps the span counts for
    its overlap, so nights, days off and weekends count nothing. Real elapsed seconds, each
    day's hours read at that day's offset (the tz database's): a span across a change of the
    clocks counts the hours each side of it as they were lived."""
    end = _aware(end).astimezone(UTC)
    total = 0.0
    for opens, closes in _periods(hours, zone, start):
        if opens >= end:
            return total
        total += (min(closes, end) - opens).total_seconds()
    raise AssertionError("the periods never end")  # pragma: no cover


def working_point(hours: WorkingHours, zone: ZoneInfo, start: datetime, seconds: float
                  ) -> datetime:
    """The instant inside ``hours`` (read in ``zone``) by which ``seconds`` of working time
    have passed since ``start`` (aware), counted as ``working_seconds`` counts them: the
    inverse of ``working_seconds(hours, zone, start, ·)``. An instant that would fall on a
    period's close falls at the next period's opening instead, so it is always in the hours."""
    left = max(seconds, 0.0)
    for opens, closes in _periods(hours, zone, start):
        span = (closes - opens).total_seconds()
        if left < span:
            return opens + timedelta(seconds=left)
        left -= span
    raise AssertionError("the periods never end")  # pragma: no cover


# (tenant, IANA zone name or None, start, end) -> working seconds
WorkingTime = Callable[[str, str | None, datetime, datetime], float]


def working_time(settings: HoursSettings) -> WorkingTime:
    """``working_seconds`` by the tenant's working hours (``of_tenant``), read in the zone
    named (the person's), or, when it names no IANA zone (None: not known), in the tenant's
    default zone. The reach report's working hours (``bot.reach.report.compute``); whether
    the hours hold people's questions back (``enabled``) does not change them."""

    def between(tenant: str, zone: str | None, start: datetime, end: datetime) -> float:
        hours, default = of_tenant(settings, tenant)
        where = zone_named(zone) or zone_named(default) or ZoneInfo("UTC")
        return working_seconds(hours, where, start, end)

    return between


def parse_days(text: str) -> frozenset[int]:
    """``"mon-fri"``, ``"mon,wed,fri"`` or ``"sat-sun"`` to weekday numbers (Monday=0)."""
    days: set[int] = set()
    for part in text.lower().replace(" ", "").split(","):
        if not part:
            continue
        first, _, last = part.partition("-")
        if first not in WEEKDAYS or (last and last not in WEEKDAYS):
            raise ValueError("working days are written like mon-fri or mon,wed,fri")
        lo, hi = WEEKDAYS.index(first), WEEKDAYS.index(last or first)
        span = range(lo, hi + 1) if lo <= hi else [*range(lo, 7), *range(0, hi + 1)]
        days.update(span)
    if not days:
        raise ValueError("working days are written like mon-fri or mon,wed,fri")
    return frozenset(days)


def _aware(at: datetime) -> datetime:
    if at.tzinfo is None or at.utcoffset() is None:
        raise ValueError("working hours are read from an aware time")
    return at


def of_tenant(settings: HoursSettings, tenant: str) -> tuple[WorkingHours, str]:
    """The tenant's working hours (``[[clarify.hours.tenants]]``, else ``[clarify.hours]``) and
    the name of its default time zone."""
    table: HoursSettings | TenantHours = next(
        (t for t in settings.tenants if t.tenant == tenant), settings)
    return _parsed(table.days, table.start, table.end), table.time_zone


@lru_cache(maxsize=256)
def _parsed(days: str, start: str, end: str) -> WorkingHours:
    """The hours a settings table writes (validated at start-up), parsed once: every card's
    hours check asks for them."""
    return WorkingHours(days=parse_days(days), start=time.fromisoformat(start),
                        end=time.fromisoformat(end))

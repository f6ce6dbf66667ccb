"""Free-form answer normalisation: a person's dates or words to a structured interval, or nothing.

Spec §3.10: a free-form answer binds only once normalised into a valid interval; anything that
cannot be safely normalised is refused (422, nothing recorded), never coerced. What is accepted:

- ``validFrom`` / ``validTo``: calendar dates ``YYYY-MM-DD`` only (years 1900-2200; an exclusive
  ``validTo`` may be 2201-01-01, the end of a range that reaches the last day of 2200). No times,
  ISO week dates (``2026-W27-1``), ordinal dates (``2026-183``) or compact forms (``20260612``).
- ``sourceText`` alone (no dates): one of the textual forms below, case and spacing free:
  a day (``2026-06-12``, ``12 June 2026``, ``12th Jun 2026``, ``June 12, 2026``), which is a
  point (``validFrom`` alone, like a candidate's signature date); a month (``2026-06``), which is
  ``[first day, first day of the next month)``; a quarter (``Q3 2026``), likewise.
- The interval is half-open, ``validTo`` exclusive, so it must be non-empty: ``validTo`` after
  ``validFrom``. Equal or reversed ends are refused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime

_MONTHS = {
    name: i
    for i, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}
_DAY_MONTH_YEAR = re.compile(r"^([0-9]{1,2})(?:st|nd|rd|th)?\s+([a-z]+)\.?,?\s+([0-9]{4})$")
_MONTH_DAY_YEAR = re.compile(r"^([a-z]+)\.?\s+([0-9]{1,2})(?:st|nd|rd|th)?,?\s+([0-9]{4})$")
_YEAR_MONTH = re.compile(r"^([0-9]{4})-([0-9]{2})$")
_QUARTER = re.compile(r"^q([1-4])\s+([0-9]{4})$")
_MIN_YEAR, _MAX_YEAR = 1900, 2200


class NotNormalisable(ValueError):
    """The answer cannot be turned into a valid interval."""


@dataclass(frozen=True, slots=True)
class Span:
    valid_from: datetime | None
    valid_to: datetime | None


def _midnight(d: date, *, end: bool = False) -> datetime:
    """Midnight UTC of a day in 1900-2200; an exclusive end may also be the day after 2200."""
    if not _MIN_YEAR <= d.year <= _MAX_YEAR and not (end and d == date(_MAX_YEAR + 1, 1, 1)):
        raise NotNormalisable("year out of range")
    return datetime(d.year, d.month, d.day, tzinfo=UTC)


_CALENDAR_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


def parse_point(text: str, *, end: bool = False) -> datetime:
    """A calendar date ``YYYY-MM-DD`` as midnight UTC; any other form is refused."""
    if not _CALENDAR_DATE.fullmatch(text):
        raise NotNormalisable("not a calendar date")
    try:
        return _midnight(date.fromisoformat(text), end=end)
    except ValueError as exc:
        raise NotNormalisable("not a calendar date") from exc


def _month_start(year: int, month: int) -> datetime:
    return _midnight(date(year, month, 1))


def _next_month(year: int, month: int) -> datetime:
    return _midnight(date(year + month // 12, month % 12 + 1, 1), end=True)


def _words(text: str) -> Span:
    raw = " ".join(text.strip().lower().split())
    if not raw:
        raise NotNormalisable("empty")
    try:
        return Span(parse_point(raw), None)
    except NotNormalisable:
        pass
    try:
        if m := _DAY_MONTH_YEAR.match(raw):
            day, month, year = int(m[1]), _MONTHS[m[2]], int(m[3])
            return Span(_midnight(date(year, month, day)), None)
        if m := _MONTH_DAY_YEAR.match(raw):
            month, day, year = _MONTHS[m[1]], int(m[2]), int(m[3])
            return Span(_midnight(date(year, month, day)), None)
        if m := _YEAR_MONTH.match(raw):
            year, month = int(m[1]), int(m[2])
            return Span(_month_start(year, month), _next_month(year, month))
        if m := _QUARTER.match(raw):
            quarter, year = int(m[1]), int(m[2])
            first = 3 * (quarter - 1) + 1
            return Span(_month_start(year, first), _next_month(year, first + 2))
    except (KeyError, ValueError) as exc:
        raise NotNormalisable("not a date") from exc
    raise NotNormalisable("not a recognised date form")


def normalise_custom(
    *, valid_from: str | None, valid_to: str | None, source_text: str | None
) -> Span:
    """The interval a free-form answer stands for; raises NotNormalisable."""
    if valid_from is None and valid_to is None:
        if source_text is None:
            raise NotNormalisable("no dates and no text")
        return _words(source_text)
    start = parse_point(valid_from) if valid_from is not None else None
    end = parse_point(valid_to, end=True) if valid_to is not None else None
    if start is not None and end is not None and end <= start:
        raise NotNormalisable("the interval is empty: validTo is exclusive")
    return Span(start, end)

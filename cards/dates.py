"""Dates (and the numbers beside them) as people read them: babel formatting in the viewer's
locale and time zone.

Instants (when an answer was recorded) are shown in the viewer's time zone. Validity bounds
that fall exactly on midnight UTC are calendar dates (the core stores a date that way) and are
shown as that date everywhere; converting them would turn 12 June into 11 June in America.
"""

from __future__ import annotations

import functools
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from babel import Locale, UnknownLocaleError
from babel.dates import format_date, format_interval, format_skeleton
from babel.lists import format_list
from babel.numbers import format_decimal, format_percent

# The spec's examples ("12 June", "4 Jul 2026") are British English; a bare "en" (the core's
# default) renders that way, while "en-US" from Slack or Teams gets "June 12".
DEFAULT_LOCALE = "en_GB"
_BARE_ALIASES = {"en": "en_GB"}


@functools.lru_cache(maxsize=256)
def resolve_locale(tag: str | None) -> Locale:
    """A babel Locale for a tag like ``en-US``; unknown or malformed tags give the default.
    Remembered per tag: a burst of cards asks for the same few again and again."""
    normalised = (tag or "").replace("-", "_").strip()
    normalised = _BARE_ALIASES.get(normalised, normalised)
    try:
        return Locale.parse(normalised or DEFAULT_LOCALE)
    except (UnknownLocaleError, ValueError, TypeError):
        return Locale.parse(DEFAULT_LOCALE)


def resolve_zone(name: str | None) -> ZoneInfo:
    """The ZoneInfo for an IANA name; unknown names give UTC."""
    try:
        return ZoneInfo(name or "UTC")
    except (ZoneInfoNotFoundError, ValueError):
        return ZoneInfo("UTC")


def calendar_day(moment: datetime, zone: str | None) -> date:
    """The day a validity bound names, as seen by a viewer in ``zone``."""
    aware = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    in_utc = aware.astimezone(UTC)
    if in_utc.time() == time(0, 0):
        return in_utc.date()
    return aware.astimezone(resolve_zone(zone)).date()


def last_day(end: datetime, zone: str | None) -> date:
    """The last day inside a range whose end is exclusive: a bound at midnight UTC is the first
    day no longer valid (the core's intervals are half-open), so the day before is shown."""
    aware = end if end.tzinfo else end.replace(tzinfo=UTC)
    if aware.astimezone(UTC).time() == time(0, 0):
        return aware.astimezone(UTC).date() - timedelta(days=1)
    return calendar_day(end, zone)


def instant_day(moment: datetime, zone: str | None) -> date:
    """The day an instant falls on in the viewer's time zone."""
    aware = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    return aware.astimezone(resolve_zone(zone)).date()


@functools.lru_cache(maxsize=4096)
def day_label(day: date, *, locale: str | None, reference_year: int | None = None) -> str:
    """ "12 June", or "12 June 2027" when the year differs from the reference year. Remembered
    (a pure function of its arguments): babel's formatting is most of a card's dates' cost."""
    if reference_year is not None and day.year != reference_year:
        return full_day(day, locale=locale)
    return format_skeleton("MMMMd", day, locale=resolve_locale(locale))


def full_day(day: date, *, locale: str | None) -> str:
    """ "14 December 2026": a day with its year, in the locale's long form."""
    return format_date(day, "long", locale=resolve_locale(locale))


def short_date(day: date, *, locale: str | None) -> str:
    """ "4 Jul 2026": the date an answer was recorded."""
    return format_date(day, "medium", locale=resolve_locale(locale))


def day_span(start: date, end: date, *, locale: str | None) -> str:
    """ "29 Jun – 5 Jul 2026": a range of days, both included, by the locale's CLDR interval
    format (one day alone when they are the same)."""
    first, last = min(start, end), max(start, end)
    return format_interval(first, last, "yMMMd", locale=resolve_locale(locale))


def number_label(value: float, *, locale: str | None) -> str:
    """ "1,234", "1.234,5", "1 234,5": a count or an amount (at most one decimal) in the
    locale's digits and separators."""
    return format_decimal(value, "#,##0.#", locale=resolve_locale(locale))


def percent_label(share: float, *, locale: str | None) -> str:
    """ "83%", "83 %": a share (0-1) as a whole percent in the locale's format."""
    return format_percent(share, locale=resolve_locale(locale))


def names_list(names: list[str] | tuple[str, ...], *, locale: str | None) -> str:
    """ "Sarah and Ahmed", joined by the locale's rules."""
    if not names:
        return ""
    return format_list(list(names), locale=resolve_locale(locale))


def is_right_to_left(locale: str | None) -> bool:
    return resolve_locale(locale).character_order == "right-to-left"


def card_language(locale: str | None) -> str:
    """The language an Adaptive Card states (its ``lang``: ISO 639-1 where the language has such
    a code) for a viewer's locale as read here: ``de-AT`` -> "de", ``en-US`` -> "en"; an
    unknown or malformed tag is the default's, "en"."""
    return resolve_locale(locale).language

"""Dates as the spec shows them, in the viewer's locale and time zone."""

from __future__ import annotations

from datetime import UTC, date, datetime

from cards import dates


def test_spec_formats_for_the_default_locale() -> None:
    """Bare "en" renders the spec's examples: "12 June" and "4 Jul 2026"."""
    assert dates.day_label(date(2026, 6, 12), locale="en", reference_year=2026) == "12 June"
    assert dates.short_date(date(2026, 7, 4), locale="en") == "4 Jul 2026"


def test_other_locales_use_their_own_order() -> None:
    """en-US and de get their own day/month order and month names."""
    assert dates.day_label(date(2026, 6, 12), locale="en-US") == "June 12"
    assert dates.day_label(date(2026, 6, 12), locale="de_DE") == "12. Juni"


def test_year_shown_only_when_it_differs() -> None:
    """A date outside the reference year carries its year."""
    assert dates.day_label(date(2027, 3, 31), locale="en", reference_year=2026) == "31 March 2027"


def test_calendar_dates_do_not_shift_with_the_time_zone() -> None:
    """A validity bound at midnight UTC is the same calendar day in Los Angeles."""
    bound = datetime(2026, 6, 12, tzinfo=UTC)
    assert dates.calendar_day(bound, "America/Los_Angeles") == date(2026, 6, 12)


def test_instants_use_the_viewer_time_zone() -> None:
    """An answer recorded late on 4 July UTC was recorded on 5 July in Tokyo."""
    moment = datetime(2026, 7, 4, 22, 0, tzinfo=UTC)
    assert dates.instant_day(moment, "Asia/Tokyo") == date(2026, 7, 5)
    assert dates.instant_day(moment, "Europe/London") == date(2026, 7, 4)
    # A bound with a time of day is an instant too.
    assert dates.calendar_day(moment, "Asia/Tokyo") == date(2026, 7, 5)


def test_bad_locale_and_zone_fall_back() -> None:
    """Malformed locales and unknown zones fall back instead of failing a delivery."""
    assert dates.resolve_locale("not a locale!").language == "en"
    assert str(dates.resolve_zone("Mars/Olympus")) == "UTC"
    assert dates.is_right_to_left("ar") and not dates.is_right_to_left("en")


def test_names_are_joined_by_the_locale() -> None:
    """Confirmers read "Sarah and Ahmed"."""
    assert dates.names_list(("Sarah", "Ahmed"), locale="en") == "Sarah and Ahmed"


def test_ranges_show_their_last_day_because_ends_are_exclusive() -> None:
    """The core's intervals are half-open: [1 Jul, 1 Oct) reads "1 July – 30 September"."""
    from datetime import UTC, datetime

    from cards.text import interval_text
    from cards.views import AnswerView, Viewer

    viewer = Viewer(locale="en", time_zone="Europe/London")
    quarter = AnswerView(valid_from=datetime(2026, 7, 1, tzinfo=UTC),
                         valid_to=datetime(2026, 10, 1, tzinfo=UTC))
    assert interval_text(quarter, viewer, reference_year=2026) == "1 July – 30 September"
    one_day = AnswerView(valid_from=datetime(2026, 6, 12, tzinfo=UTC),
                         valid_to=datetime(2026, 6, 13, tzinfo=UTC))
    assert interval_text(one_day, viewer, reference_year=2026) == "12 June"

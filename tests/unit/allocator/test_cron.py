"""Five-field cron expressions: when the latest firing before a clock was, and what is refused by name."""

from __future__ import annotations

import datetime as dt

import pytest
from muster import cron


def at(text: str) -> float:
    return dt.datetime.fromisoformat(text).replace(tzinfo=dt.UTC).timestamp()


def previous(expr: str, clock: str) -> str:
    moment = dt.datetime.fromtimestamp(cron.parse(expr).previous(at(clock)), tz=dt.UTC)
    return moment.replace(tzinfo=None).isoformat()


def test_an_hourly_expression_fired_at_the_top_of_the_hour():
    assert previous("0 * * * *", "2026-03-10T14:25:00") == "2026-03-10T14:00:00"


def test_a_clock_on_a_firing_still_sees_the_firing_before_it():
    assert previous("0 * * * *", "2026-03-10T14:00:00") == "2026-03-10T13:00:00"
    assert previous("0 * * * *", "2026-03-10T14:00:01") == "2026-03-10T14:00:00"


def test_steps_ranges_and_lists_select_minutes_and_hours():
    assert previous("*/15 * * * *", "2026-03-10T14:29:59") == "2026-03-10T14:15:00"
    assert previous("5/20 9-17 * * *", "2026-03-10T08:00:00") == "2026-03-09T17:45:00"
    assert previous("0 6,18 * * *", "2026-03-10T17:00:00") == "2026-03-10T06:00:00"


def test_a_weekly_reset_goes_back_to_the_last_named_weekday():
    # 2026-03-10 is a Tuesday
    assert previous("0 0 * * MON", "2026-03-10T12:00:00") == "2026-03-09T00:00:00"
    assert previous("0 0 * * sunday", "2026-03-10T12:00:00") == "2026-03-08T00:00:00"
    assert previous("0 0 * * 7", "2026-03-10T12:00:00") == "2026-03-08T00:00:00"


def test_day_of_month_and_weekday_both_restricted_fire_on_either():
    # the 1st of March 2026 is a Sunday; Friday the 6th comes after it
    assert previous("0 0 1 * FRI", "2026-03-10T00:00:00") == "2026-03-06T00:00:00"
    assert previous("0 0 1 * *", "2026-03-10T00:00:00") == "2026-03-01T00:00:00"


def test_a_restricted_weekday_step_is_not_a_star():
    # '*/2' names Sun, Tue, Thu, Sat: with a restricted day of month the two are or-ed
    assert previous("0 0 20 * */2", "2026-03-10T12:00:00") == "2026-03-10T00:00:00"


def test_a_yearly_reset_and_months_by_name():
    assert previous("@yearly", "2026-03-10T00:00:00") == "2026-01-01T00:00:00"
    assert previous("0 0 1 jul-aug *", "2026-03-10T00:00:00") == "2025-08-01T00:00:00"


def test_the_29th_of_february_is_found_years_back():
    assert previous("0 0 29 2 *", "2027-01-01T00:00:00") == "2024-02-29T00:00:00"


def test_the_unix_epoch_is_a_thursday_midnight():
    assert cron.parse("0 0 * * THU").previous(60.0) == 0.0


@pytest.mark.parametrize(
    ("expr", "words"),
    [
        ("* * * *", "expected 5 fields"),
        ("0 0 0 * * *", "seconds and year fields are not supported"),
        ("0 0 L * *", "'L'"),
        ("0 0 15W * *", "'W'"),
        ("0 0 * * 5#2", "'#'"),
        ("0 0 ? * *", "'?'"),
        ("@reboot", "unsupported macro '@reboot'"),
        ("60 * * * *", "minute: 60 is outside 0-59"),
        ("0 0 * 13 *", "month: 13 is outside 1-12"),
        ("*/0 * * * *", "minute: 0 is outside"),
        ("0 5-1 * * *", "hour: range '5-1' runs backwards"),
        ("0 0 * * funday", "day-of-week: 'funday' is not a number or a name"),
        ("0 0 31 2 *", "never fires"),
    ],
)
def test_unsupported_or_impossible_expressions_are_refused_by_name(expr, words):
    with pytest.raises(cron.CronError, match=words.replace("?", r"\?")):
        cron.parse(expr)

"""Standard five-field cron expressions, read on a clock of Unix seconds in UTC.

Only what a classic crontab accepts: ``minute hour day-of-month month day-of-week``, each field a
``*``, a number, a range ``a-b``, a step ``*/n`` or ``a-b/n`` or ``a/n``, or a comma list of those;
month and weekday names (``JAN``, ``MON``); weekday 7 as Sunday; the macros ``@yearly``
(``@annually``), ``@monthly``, ``@weekly``, ``@daily`` (``@midnight``) and ``@hourly``. When both
day fields are restricted (neither is ``*``), a day matches if either does, as crontab(5) says.
Anything else (seconds or year fields, ``?``, ``L``, ``W``, ``#``, ``@reboot``) is refused by name
rather than guessed at.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass

_MONTHS = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
_DAYS = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")
_MONTH_NAMES = {name: i + 1 for i, name in enumerate(_MONTHS)}
_DAY_NAMES = {name: i for i, name in enumerate(_DAYS)}
_MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_FIELDS = (
    ("minute", 0, 59, ()),
    ("hour", 0, 23, ()),
    ("day-of-month", 1, 31, ()),
    ("month", 1, 12, _MONTH_NAMES),
    ("day-of-week", 0, 7, _DAY_NAMES),
)
_LONGEST_MONTH = {1: 31, 2: 29, 3: 31, 4: 30, 5: 31, 6: 30, 7: 31, 8: 31, 9: 30, 10: 31, 11: 30, 12: 31}
_SEARCH_DAYS = 366 * 9
"""A valid expression fires at least once in any nine years (the longest gap, Feb 29, is eight)."""


class CronError(ValueError):
    """An expression this module does not read; the message says which part and why."""


@dataclass(frozen=True)
class Cron:
    """A parsed expression: the values each field allows."""

    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 = Sunday
    days_restricted: bool
    weekdays_restricted: bool

    def day_matches(self, day: dt.date) -> bool:
        """Whether the expression fires on ``day`` (at some minute)."""
        if day.month not in self.months:
            return False
        dom = day.day in self.days
        dow = (day.weekday() + 1) % 7 in self.weekdays
        if self.days_restricted and self.weekdays_restricted:
            return dom or dow
        return dom and dow

    def previous(self, clock: float) -> float:
        """The latest firing strictly before ``clock`` (Unix seconds, UTC), as KAI's cron usage window
        takes its reset: a clock that falls on a firing still sees the window that firing closes."""
        last = math.ceil(clock / 60.0) * 60 - 60  # the last whole minute before the clock
        moment = dt.datetime.fromtimestamp(last, tz=dt.UTC)
        day, limit = moment.date(), moment.hour * 60 + moment.minute
        hours = sorted(self.hours, reverse=True)
        minutes = sorted(self.minutes, reverse=True)
        for _ in range(_SEARCH_DAYS):
            if self.day_matches(day):
                for h in hours:
                    for m in minutes:
                        if h * 60 + m <= limit:
                            start = dt.datetime(day.year, day.month, day.day, h, m, tzinfo=dt.UTC)
                            return start.timestamp()
            day -= dt.timedelta(days=1)
            limit = 23 * 60 + 59
        raise CronError("the expression never fires")  # parse() refuses such expressions first


def parse(text: str) -> Cron:
    """Read a five-field expression (or a macro), refusing unsupported syntax by name."""
    spec = text.strip()
    if spec.startswith("@"):
        if spec.lower() not in _MACROS:
            raise CronError(f"unsupported macro {spec!r}; supported: {', '.join(_MACROS)}")
        spec = _MACROS[spec.lower()]
    parts = spec.split()
    if len(parts) != 5:
        raise CronError(
            f"expected 5 fields (minute hour day-of-month month day-of-week), got {len(parts)}"
            + ("; seconds and year fields are not supported" if len(parts) in (6, 7) else "")
        )
    values = [_field(part, *field) for part, field in zip(parts, _FIELDS, strict=True)]
    weekdays = frozenset(d % 7 for d in values[4])
    cron = Cron(
        minutes=values[0],
        hours=values[1],
        days=values[2],
        months=values[3],
        weekdays=weekdays,
        # as KAI's cron library: a field with a bare '*' in it is unrestricted ('*/2' is restricted)
        days_restricted="*" not in parts[2].split(","),
        weekdays_restricted="*" not in parts[4].split(","),
    )
    if not (cron.days_restricted and cron.weekdays_restricted) and not any(
        d <= _LONGEST_MONTH[m] for m in cron.months for d in cron.days
    ):
        raise CronError("the expression never fires: no month it names has the days it names")
    return cron


def _field(text: str, name: str, lo: int, hi: int, names: dict[str, int]) -> frozenset[int]:
    out: set[int] = set()
    for item in text.split(","):
        out |= _item(item, name, lo, hi, names)
    return frozenset(out)


def _item(item: str, name: str, lo: int, hi: int, names: dict[str, int]) -> set[int]:
    base, slash, step_text = item.partition("/")
    step = _number(step_text, name, 1, hi, {}) if slash else 1
    if base == "*":
        first, last = lo, hi
    elif "-" in base:
        a, _, b = base.partition("-")
        first, last = _number(a, name, lo, hi, names), _number(b, name, lo, hi, names)
        if first > last:
            raise CronError(f"{name}: range {base!r} runs backwards")
    else:
        first = _number(base, name, lo, hi, names)
        last = hi if slash else first
    return set(range(first, last + 1, step))


def _number(text: str, name: str, lo: int, hi: int, names: dict[str, int]) -> int:
    word = text.upper()
    if names and word[:3] in names and _is_name(word, names):
        return names[word[:3]]
    if not text.isdigit():
        for mark in ("?", "L", "W", "#"):
            if mark in word:
                raise CronError(
                    f"{name}: {mark!r} in {text!r} is not supported (standard five-field syntax only)"
                )
        raise CronError(f"{name}: {text!r} is not a number" + (" or a name" if names else ""))
    value = int(text)
    if not lo <= value <= hi:
        raise CronError(f"{name}: {value} is outside {lo}-{hi}")
    return value


def _is_name(word: str, names: dict[str, int]) -> bool:
    full = _FULL_MONTHS if "JAN" in names else _FULL_DAYS
    return len(word) == 3 or word in full


_FULL_MONTHS = frozenset(
    (
        "JANUARY",
        "FEBRUARY",
        "MARCH",
        "APRIL",
        "JUNE",
        "JULY",
        "AUGUST",
        "SEPTEMBER",
        "OCTOBER",
        "NOVEMBER",
        "DECEMBER",
    )
)
_FULL_DAYS = frozenset(("SUNDAY", "MONDAY", "TUESDAY", "WEDNESDAY", "THURSDAY", "FRIDAY", "SATURDAY"))

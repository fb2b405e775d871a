"""Which stretch of the past counts as a queue's usage (KAI's ``usageParams``, kai-semantics §19).

The window always closes at the cycle's clock; where it opens is a function of that clock alone, so
a replay or a simulation of the same log opens it where the live allocator did:

- ``sliding``: ``size`` seconds before the clock;
- ``tumbling``: at the latest reset ``start + n × size`` before the clock (a start still ahead of the
  clock gives an empty window);
- ``cron``: at the latest firing of a five-field cron expression before the clock, read in UTC on the
  clock's Unix seconds (``muster.cron``).

"Before" is strict, as in KAI's code: a clock that falls on a reset still sees the whole window that
reset closes, and the new one from the next cycle on.
"""

from __future__ import annotations

import functools
import math

import msgspec

from muster import cron

WINDOW_TYPES = ("sliding", "tumbling", "cron")


class UsageWindow(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A usage window as the allocator keeps it (checked by ``window_error`` where it is configured)."""

    type: str = "sliding"
    size: float = 604800.0
    tumbling_start: float | None = None
    cron: str | None = None

    def since(self, clock: float) -> float:
        """Where the window that closes at ``clock`` opens; history before it counts for nothing."""
        if self.type == "tumbling":
            return tumbling_reset(self.tumbling_start or 0.0, self.size, clock)
        if self.type == "cron":
            return _parsed(self.cron or "").previous(clock)
        return clock - self.size


def tumbling_reset(start: float, size: float, clock: float) -> float:
    """The latest ``start + n × size`` (n ≥ 0) strictly before ``clock``; ``start`` itself when the clock
    is at it, and the clock when the start is still ahead (an empty window)."""
    if start >= clock:
        return min(start, clock)
    n = max(0, math.ceil((clock - start) / size) - 1)
    # the division may land one off either way in floating point; settle it on the sums themselves
    while start + (n + 1) * size < clock:
        n += 1
    while n > 0 and start + n * size >= clock:
        n -= 1
    return start + n * size


def window_error(window_type: str, size: float, tumbling_start: float | None, cron_string: str | None):
    """The first thing wrong with a window's settings, as (field, message), or None. Fields are named as
    the fairness config names them (``window_type``, ``usage_window``, ``tumbling_window_start``,
    ``cron_string``)."""
    if window_type not in WINDOW_TYPES:
        return "window_type", f"must be one of {', '.join(WINDOW_TYPES)}, got {window_type!r}"
    if not size > 0:
        return "usage_window", f"must be > 0, got {size}"
    if window_type == "tumbling":
        if tumbling_start is None:
            return "tumbling_window_start", "a tumbling window needs its start (seconds on the cycle clock)"
        if not math.isfinite(tumbling_start):
            return "tumbling_window_start", f"must be a finite number, got {tumbling_start}"
    elif tumbling_start is not None:
        return "tumbling_window_start", f"only a tumbling window has a start, not a {window_type} one"
    if window_type == "cron":
        if not cron_string:
            return "cron_string", "a cron window needs a cron expression"
        try:
            _parsed(cron_string)
        except cron.CronError as e:
            return "cron_string", f"{cron_string!r}: {e}"
    elif cron_string is not None:
        return "cron_string", f"only a cron window has a cron expression, not a {window_type} one"
    return None


@functools.lru_cache(maxsize=16)
def _parsed(text: str) -> cron.Cron:
    return cron.parse(text)

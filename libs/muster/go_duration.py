"""Go's duration syntax (``time.ParseDuration``), which KAI's annotations use: ``30s``, ``1h30m``, ``-5m``."""

from __future__ import annotations

import re

_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_MAX_SECONDS = 9223372036.854775807  # Go's int64 nanoseconds: about 292 years
_PART = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def parse_go_duration(text: str) -> float:
    """Seconds in a Go duration: an optional sign, then numbers each with a unit (``0`` alone is allowed).
    Raises ``ValueError`` saying what is wrong."""
    body = text[1:] if text[:1] in "+-" else text
    sign = -1.0 if text[:1] == "-" else 1.0
    if body == "0":
        return 0.0
    if not body:
        raise ValueError(f"expected a duration such as 30s, 5m or 1h30m, got {text!r}")
    seconds, at = 0.0, 0
    for match in _PART.finditer(body):
        if match.start() != at:
            break
        seconds += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        at = match.end()
    if at != len(body):
        hint = " (a number needs a unit: s, m, h, ms)" if re.fullmatch(r"\d+\.?\d*", body) else ""
        raise ValueError(f"expected a duration such as 30s, 5m or 1h30m, got {text!r}{hint}")
    if seconds > _MAX_SECONDS:
        raise ValueError(f"{text!r} is longer than a Go duration can be (about 292 years)")
    return sign * seconds

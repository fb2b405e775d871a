"""KAI v0.17's per-PodGroup timing annotations: preemption delay and stale-gang grace, as Go durations.

KAI skips a value it cannot use (logging it); muster refuses it, naming the
annotation, so that nothing a user wrote is silently dropped. A preemption delay
must not be negative; a negative stale-gang grace means "never evict".
"""

from __future__ import annotations

from muster.go_duration import parse_go_duration
from muster.grouping.errors import ManifestError
from muster.grouping.fields import join

PREEMPTION_DELAY = "kai.scheduler/preemption-delay"
STALENESS_GRACE = "kai.scheduler/staleness-grace-period"
_MAY_BE_NEGATIVE = {PREEMPTION_DELAY: False, STALENESS_GRACE: True}


def annotated_seconds(annotations: dict[str, str], key: str, path: str) -> float | None:
    """Seconds in the annotation ``key`` (one of the two above) of the metadata at ``path``; None if absent."""
    text = annotations.get(key)
    if text is None:
        return None
    return duration_seconds(text, join(join(path, "annotations"), key), may_be_negative=_MAY_BE_NEGATIVE[key])


def duration_seconds(text: str, where: str, *, may_be_negative: bool) -> float:
    """Seconds in the Go duration ``text`` read from the field ``where`` (refused naming it)."""
    try:
        seconds = parse_go_duration(text.strip())
    except ValueError as exc:
        raise ManifestError(where, str(exc)) from None
    if seconds < 0 and not may_be_negative:
        raise ManifestError(where, f"must not be negative, got {text!r}")
    return seconds


def check_timing_annotations(annotations: dict[str, str], path: str) -> None:
    """Refuse a timing annotation muster cannot use on the metadata at ``path`` (a pod template's)."""
    for key in _MAY_BE_NEGATIVE:
        annotated_seconds(annotations, key, path)

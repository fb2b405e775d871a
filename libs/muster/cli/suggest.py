"""Nearest-name suggestions for names a user mistyped: commands, queues, jobs."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

CLOSE_ENOUGH = 0.6
"""The least similarity (difflib's ratio, 0 to 1) at which a known name is offered as the one meant."""
LISTED_AT_MOST = 8
"""With no name close enough, the known names are listed when there are this few or fewer."""


def nearest(name: str, known: Iterable[str]) -> str | None:
    """The known name most like ``name``, if it is close enough to be the one meant; else None.

    Case does not count against a match; of names equally close, the first in sorted order wins, so
    the answer does not depend on the order the names came in.
    """
    matcher = difflib.SequenceMatcher(b=name.casefold())
    best, best_score = None, 0.0
    for candidate in sorted(set(known)):
        matcher.set_seq1(candidate.casefold())
        floor = max(best_score, CLOSE_ENOUGH)
        # The quick bounds skip most names of a long list without the full comparison.
        if matcher.real_quick_ratio() < floor or matcher.quick_ratio() < floor:
            continue
        score = matcher.ratio()
        if score >= CLOSE_ENOUGH and score > best_score:
            best, best_score = candidate, score
    return best


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """``; did you mean "X"?`` for the nearest known name, or nothing when none is close."""
    match = nearest(name, known)
    return f'; did you mean "{match}"?' if match is not None else ""


def suggestion(name: str, known: Iterable[str], listing: str) -> str:
    """``did_you_mean``; with no name close, the known ones after ``listing`` (``the queues there
    are``) when they are few, so that a user sees what there is to choose from."""
    known = sorted(set(known))
    hint = did_you_mean(name, known)
    if hint or not known or len(known) > LISTED_AT_MOST:
        return hint
    return f"; {listing}: {', '.join(known)}"

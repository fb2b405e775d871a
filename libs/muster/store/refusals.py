"""Which failures of a projection write are the message's own, and so would fail again every time.

Postgres sorts its errors into classes by SQLSTATE. Some say the values are
wrong for the schema, whatever the moment: a data exception (class 22: a
number out of range, text it cannot store), an integrity violation (23: a
constraint the row breaks), a program limit (54: an index row too big).
Writing the same message again fails the same way. The driver refusing to
encode a value (a number past its column's type) is the same kind of
failure, found before Postgres sees it.

Everything else may pass by itself and must be retried: the database away
(connections, shutdowns), a serialization failure or deadlock, a full
disk, or a bug of ours that a fix will cure without losing the message.
"""

from __future__ import annotations

import asyncpg

REFUSING_CLASSES = frozenset({"22", "23", "54"})
"""SQLSTATE classes that refuse the values written: data exception, integrity violation, program limit."""


def refused_for_good(exc: BaseException) -> bool:
    """Whether ``exc``, raised writing a message, would be raised by every write of it."""
    if isinstance(exc, asyncpg.PostgresError):
        return (exc.sqlstate or "")[:2] in REFUSING_CLASSES
    # asyncpg encodes COPY's values itself, and says so with the plain Python errors.
    return isinstance(exc, OverflowError | UnicodeEncodeError)


def reason(exc: BaseException) -> str:
    """The refusal in words, for the dead letter: Postgres' message and code, or the driver's."""
    if isinstance(exc, asyncpg.PostgresError):
        return f"Postgres refused the projection's write ({exc.sqlstate}): {exc}"
    return f"the projection's write could not encode a value: {exc!r}"

"""Which failed projection writes are the message's own (dead-lettered) and which pass (retried)."""

from __future__ import annotations

import asyncpg
import pytest
from muster.store.refusals import reason, refused_for_good

E = asyncpg.exceptions


@pytest.mark.parametrize(
    "exc",
    [
        E.ProgramLimitExceededError("index row size 8016 exceeds btree version 4 maximum 2704"),
        E.CharacterNotInRepertoireError("invalid byte sequence for encoding UTF8: 0x00"),
        E.NumericValueOutOfRangeError("integer out of range"),
        E.CheckViolationError("new row violates check constraint"),
        OverflowError("value out of int32 range"),
        UnicodeEncodeError("utf-8", "\ud800", 0, 1, "surrogates not allowed"),
    ],
    ids=type,
)
def test_a_value_postgres_or_its_driver_refuses_fails_every_time(exc):
    assert refused_for_good(exc)


@pytest.mark.parametrize(
    "exc",
    [
        E.SerializationError("could not serialize access"),
        E.DeadlockDetectedError("deadlock detected"),
        E.DiskFullError("no space left on device"),
        E.AdminShutdownError("terminating connection"),
        E.UndefinedColumnError("column does not exist"),
        ConnectionResetError("connection reset"),
        KeyError("a bug of ours"),
    ],
    ids=type,
)
def test_a_failure_that_may_pass_is_retried(exc):
    assert not refused_for_good(exc)


def test_the_letter_names_the_code_postgres_gave():
    assert "(54000)" in reason(E.ProgramLimitExceededError("index row size 8016 exceeds maximum 2704"))

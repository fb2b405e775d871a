"""SIGTERM under ``sigterm_stops`` stops ``muster up`` even where Python swallows its exception."""

import os
import signal
import time

from muster.runtime.system import StopRequested, sigterm_stops, wait_until_interrupted


class NoServices:
    """A system with nothing to supervise."""

    processes: dict = {}

    def check(self) -> list[str]:
        return []


def test_a_sigterm_whose_exception_was_swallowed_still_stops_the_wait():
    with sigterm_stops():
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.1)  # the handler runs between two bytecodes of this frame
        except StopRequested:
            pass  # as a fork handler's "Exception ignored" would lose it
        started = time.monotonic()
        wait_until_interrupted(NoServices(), poll=0.05)
    # returned at once instead of waiting for a second signal that never comes
    assert time.monotonic() - started < 5


def test_a_new_sigterm_scope_forgets_an_earlier_one():
    with sigterm_stops():
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.1)
        except StopRequested:
            pass
    with sigterm_stops():
        from muster.runtime import system

        assert not system._TERM_REQUESTED.is_set()

"""How long the supervisor (``muster up``) waits before restarting a service that exited.

A service that keeps failing is restarted less and less often, so a crash
loop does not burn the machine; one that then ran healthily for
``HEALTHY_RUN`` seconds starts over from ``FIRST_DELAY``, so a crash after
days of good service is not met with the wait its first week's troubles earned.
Pure: the caller hands in the time (``time.monotonic()`` live, any number in tests).
"""

from __future__ import annotations

from dataclasses import dataclass

FIRST_DELAY = 1.0
"""Seconds before restarting a service after its first exit (or its first after a healthy run)."""
MAX_DELAY = 30.0
"""The longest wait between restarts of a service that keeps exiting."""
HEALTHY_RUN = 60.0
"""Seconds a service must run without exiting for its next exit to count as a first one again."""


@dataclass
class RestartBackoff:
    """The restart delays of one service: doubling while it keeps exiting, reset by a healthy run."""

    first: float = FIRST_DELAY
    ceiling: float = MAX_DELAY
    healthy_run: float = HEALTHY_RUN
    _delay: float = 0.0
    """The delay given for the last exit; 0 before any."""
    _started: float = 0.0
    """When the service last started."""

    def started(self, now: float) -> None:
        """The service was (re)started at ``now``."""
        self._started = now

    def exited(self, now: float) -> float:
        """The service exited at ``now``: seconds to wait before starting it again."""
        ran_healthily = now - self._started >= self.healthy_run
        if self._delay == 0.0 or ran_healthily:
            self._delay = self.first
        else:
            self._delay = min(self.ceiling, self._delay * 2)
        return self._delay

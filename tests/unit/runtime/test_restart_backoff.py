"""The supervisor's restart delays, on a clock the test moves by hand."""

from __future__ import annotations

from muster.runtime.restarts import FIRST_DELAY, HEALTHY_RUN, MAX_DELAY, RestartBackoff


class Service:
    """One supervised service: it starts, runs ``ran`` seconds, exits, waits out its delay, starts again."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.backoff = RestartBackoff()
        self.backoff.started(self.now)

    def runs_then_exits(self, ran: float) -> float:
        self.now += ran
        delay = self.backoff.exited(self.now)
        self.now += delay
        self.backoff.started(self.now)
        return delay


def test_a_service_that_keeps_exiting_waits_twice_as_long_each_time_up_to_the_ceiling():
    service = Service()
    delays = [service.runs_then_exits(ran=0.5) for _ in range(8)]
    assert delays == [1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0, 30.0]
    assert (delays[0], delays[-1]) == (FIRST_DELAY, MAX_DELAY)


def test_a_healthy_run_resets_the_delay_to_the_first_one():
    service = Service()
    for _ in range(7):
        service.runs_then_exits(ran=0.5)
    assert service.runs_then_exits(ran=HEALTHY_RUN) == FIRST_DELAY
    assert service.runs_then_exits(ran=0.5) == 2 * FIRST_DELAY  # and grows again from there


def test_a_run_short_of_healthy_does_not_reset_it():
    service = Service()
    for _ in range(6):
        service.runs_then_exits(ran=0.5)
    assert service.runs_then_exits(ran=HEALTHY_RUN - 0.1) == MAX_DELAY


def test_the_wait_before_a_restart_does_not_count_as_running():
    # Started again at the end of its 30 s wait, the service has run 31 s, not 61 s, when it exits.
    service = Service()
    for _ in range(6):
        service.runs_then_exits(ran=0.5)
    assert service.runs_then_exits(ran=31.0) == MAX_DELAY


def test_the_first_exit_waits_the_first_delay_however_soon_it_comes():
    assert RestartBackoff().exited(0.0) == FIRST_DELAY
    assert RestartBackoff(first=0.25, ceiling=1.0).exited(5.0) == 0.25

"""The fault suite: checks over the event log and the runner that kills services under load."""

from muster.chaos.checks import LogReport, Violation, check_log, double_binds, over_capacity, unsettled_jobs

__all__ = ["LogReport", "Violation", "check_log", "double_binds", "over_capacity", "unsettled_jobs"]

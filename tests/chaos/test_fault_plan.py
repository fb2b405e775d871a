"""The fault plan: which faults, how many, when."""

from __future__ import annotations

import pytest
from muster.chaos.faults import KILL, NATS_RESTART, PG_OUTAGE, plan_faults

SERVICES = ("allocator", "binder")


def kinds(plan):
    return sorted((f.kind, f.target) for f in plan)


def test_each_service_is_killed_once_and_each_server_stopped_once_by_default():
    plan = plan_faults(1, SERVICES, window=10.0, pg_outage=3.0)
    assert kinds(plan) == [(KILL, "allocator"), (KILL, "binder"), (NATS_RESTART, ""), (PG_OUTAGE, "")]


def test_nats_is_restarted_as_often_as_asked():
    plan = plan_faults(1, SERVICES, window=10.0, pg_outage=3.0, nats_restarts=3)
    assert [f.kind for f in plan].count(NATS_RESTART) == 3


def test_faults_fall_in_time_order_within_the_window_and_the_same_seed_gives_the_same_plan():
    plan = plan_faults(7, SERVICES, window=12.0, pg_outage=3.0, nats_restarts=3)
    assert [f.at for f in plan] == sorted(f.at for f in plan)
    assert all(0 < f.at < 12.0 for f in plan)
    assert plan == plan_faults(7, SERVICES, window=12.0, pg_outage=3.0, nats_restarts=3)


def test_only_the_kinds_asked_for_are_planned():
    plan = plan_faults(1, SERVICES, window=10.0, pg_outage=3.0, nats_restarts=2, kinds=(NATS_RESTART,))
    assert kinds(plan) == [(NATS_RESTART, ""), (NATS_RESTART, "")]


def test_a_window_that_is_not_positive_is_refused_naming_it():
    with pytest.raises(ValueError, match="window"):
        plan_faults(1, SERVICES, window=0.0, pg_outage=3.0)

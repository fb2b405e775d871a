"""The figures a session opens with, step by step: queue accounting, past use, fair share."""

from __future__ import annotations

import numpy as np
import pytest
from muster import events as ev
from muster.scheduler.config import FairnessConfig
from muster.scheduler.queue_accounting import QueueTable, fair_shares, queue_accounting, usage_fractions
from muster.scheduler.state import ClusterState
from muster.scheduler.state.queue_sums import A_GPU, NP_GPU, R_GPU, R_GPU_MEM, SUM_COLS
from muster.usage_window import UsageWindow

from .builders import GI, gang_job, gpu_nodes, queue


def table(*events: ev.QueueUpserted) -> QueueTable:
    return QueueTable.build({e.queue.name: e.queue for e in events})


def sums(cols: dict[int, float]) -> list[float]:
    """A queue's running sums with ``cols`` (column -> value) set, the rest zero."""
    row = [0.0] * SUM_COLS
    for col, value in cols.items():
        row[col] = value
    return row


def test_a_queue_accounts_for_what_its_children_hold_and_ask_for():
    t = table(queue("org"), queue("team-a", parent="org"), queue("team-b", parent="org"))
    figures = queue_accounting(
        {"team-a": sums({A_GPU: 2, NP_GPU: 1, R_GPU: 3}), "team-b": sums({A_GPU: 1})}, t, min_dev_mem=0
    )
    org, a, b = (t.index[n] for n in ("org", "team-a", "team-b"))
    assert [figures.alloc[q][0] for q in (org, a, b)] == [3.0, 2.0, 1.0]
    assert [figures.alloc_np[q][0] for q in (org, a, b)] == [1.0, 1.0, 0.0]
    assert [figures.request[q, 0] for q in (org, a, b)] == [6.0, 5.0, 1.0]


def test_pending_gpu_memory_asks_for_its_share_of_the_smallest_device():
    t = table(queue("team"))
    figures = queue_accounting({"team": sums({R_GPU_MEM: 40 * GI})}, t, min_dev_mem=80 * GI)
    assert figures.request[0, 0] == 0.5


def test_sums_of_a_queue_the_table_does_not_know_count_nowhere():
    t = table(queue("team"))
    figures = queue_accounting({"gone": sums({A_GPU: 4})}, t, min_dev_mem=0)
    assert figures.alloc == [[0.0, 0.0, 0.0]]


def test_without_fairness_no_queue_has_past_use():
    t = table(queue("team"))
    assert not usage_fractions(ClusterState(), None, t, 100.0, np.array([8.0, 1.0, 1.0])).any()


def test_a_queue_that_held_every_gpu_for_the_whole_window_used_all_of_it():
    fairness = FairnessConfig(usage_window=100.0, half_life=0.0)
    state = ClusterState(usage_window=UsageWindow(size=100.0))
    t = table(queue("team"), queue("idle"))
    for e in [
        *gpu_nodes(1, gpus=2),
        gang_job("team", 2, name="train"),
        *[ev.PodBound(job="train", pod=i, node="node-0", gpus=[i], at=0.0) for i in range(2)],
    ]:
        state.apply(e)
    used = usage_fractions(state, fairness, t, 100.0, state.node_table.totals())
    assert used[t.index["team"], 0] == pytest.approx(1.0)
    assert used[t.index["idle"], 0] == 0.0


def test_gpus_beyond_quotas_go_by_weight_up_to_what_each_queue_asks_for():
    t = table(queue("small", gpu_weight=1), queue("big", gpu_weight=1))
    request = np.zeros((2, 3))
    request[t.index["small"], 0] = 2.0
    request[t.index["big"], 0] = 10.0
    fair = fair_shares(t, request, np.zeros((2, 3)), np.array([8.0, 0.0, 0.0]), None)
    assert (fair[t.index["small"], 0], fair[t.index["big"], 0]) == (2.0, 6.0)

"""The cluster's sums of queue figures: each counted once, where it belongs in the queue tree."""

from __future__ import annotations

import pytest
from muster.report import build_report

from tests.unit.report.events import bound, clock, job, node, queue


def test_the_cluster_adds_up_the_seconds_each_leaf_queue_was_starved_and_its_parents_not_again():
    # research (quota 4) has children a and b (quota 2 each); a waits 3 s (bound at 3), b 5 s (at 5).
    log = [node("n1", 8), queue("research", 4), queue("a", 2, "research"), queue("b", 2, "research")]
    log += [job("ja", "a", 0.0), job("jb", "b", 0.0), clock(0.0), bound("ja", 0, 3.0), bound("jb", 0, 5.0)]
    log += [clock(10.0)]
    r = build_report(log)
    assert r.queues["research"].below_quota_seconds == pytest.approx(5.0)  # while b waited
    assert r.cluster.below_quota_seconds == pytest.approx(3.0 + 5.0)


def test_the_cluster_borrows_what_top_level_queues_hold_beyond_their_quotas_not_what_children_swap():
    # research (quota 4) holds 4 GPUs, all a's (quota 2): a borrows 2 from b inside research, for 10 s;
    # other (quota 2) holds 3 on 8 GPUs: 1 above its quota.
    log = [node("n1", 8), queue("research", 4), queue("a", 2, "research"), queue("b", 2, "research")]
    log += [queue("other", 2), job("ja", "a", 0.0, gpu=4), job("jo", "other", 0.0, gpu=3), clock(0.0)]
    log += [bound("ja", 0, 0.0, gpus=4), bound("jo", 0, 0.0, gpus=3), clock(10.0)]
    r = build_report(log)
    assert r.queues["a"].borrowed_gpu_seconds == pytest.approx(20.0)
    assert r.cluster.borrowed_gpu_seconds == pytest.approx(10.0)  # other's 1 GPU x 10 s

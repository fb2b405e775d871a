"""``expect`` against a run's result: each failure says what was expected and seen."""

from __future__ import annotations

from muster.scenario import model as m
from muster.scenario.expect import check


def result(**jobs):
    return {
        "scenario": "s",
        "cycles": 2,
        "time": 2.0,
        "jobs": {
            "train-1": {
                "status": "running",
                "pods": [{"node": "node-b", "gpus": [0]}, {"node": "node-a", "gpus": [1]}],
                "reason": None,
            },
            "train-2": {"status": "pending", "pods": [], "reason": "queue team-a is at its limit of 4 gpu"},
            **jobs,
        },
        "evictions": [],
        "queues": {
            "team-a": {"fair_share": {"gpu": 4.0, "cpu": 0.5}, "allocated": {"gpu": 2.0, "memory": 2**30}}
        },
    }


def test_no_expect_block_holds_trivially():
    assert check(None, result()) == []


def test_statuses_that_hold_give_no_failure():
    assert check(m.Expect(running=["train-1"], pending=["train-2"], completed=[]), result()) == []


def test_a_wrong_status_names_the_job_the_expected_status_and_what_was_seen_with_the_reason():
    (failure,) = check(m.Expect(running=["train-2"]), result())
    assert failure.expectation == "expect.running: train-2"
    assert str(failure) == (
        "expect.running: train-2: expected running, saw pending (queue team-a is at its limit of 4 gpu)"
    )


def test_placements_compare_as_a_multiset_of_nodes():
    assert check(m.Expect(placements={"train-1": ["node-a", "node-b"]}), result()) == []
    (failure,) = check(m.Expect(placements={"train-1": ["node-a", "node-a"]}), result())
    assert str(failure) == "expect.placements.train-1: expected [node-a, node-a], saw [node-a, node-b]"


def test_an_empty_placement_expects_no_bound_pod():
    assert check(m.Expect(placements={"train-2": []}), result()) == []
    assert len(check(m.Expect(placements={"train-1": []}), result())) == 1


def test_amounts_compare_within_a_millionth_in_output_units():
    expect = m.Expect(
        fair_share={"team-a": {"gpu": 4.0000001, "cpu": "500m"}}, allocated={"team-a": {"memory": "1Gi"}}
    )
    assert check(expect, result()) == []


def test_a_wrong_amount_says_expected_and_seen():
    (failure,) = check(m.Expect(allocated={"team-a": {"gpu": 3}}), result())
    assert str(failure) == "expect.allocated.team-a.gpu: expected 3, saw 2"


def test_a_resource_the_result_does_not_mention_counts_as_zero():
    assert check(m.Expect(allocated={"team-a": {"cpu": 0}}), result()) == []
    assert len(check(m.Expect(allocated={"team-a": {"cpu": 1}}), result())) == 1


def test_every_failure_is_reported_in_order():
    expect = m.Expect(running=["train-2"], preempted=["train-1"], fair_share={"team-a": {"gpu": 1}})
    assert [f.expectation for f in check(expect, result())] == [
        "expect.running: train-2",
        "expect.preempted: train-1",
        "expect.fair_share.team-a.gpu",
    ]

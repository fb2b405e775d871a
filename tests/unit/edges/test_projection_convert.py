"""The projection as a pure function: events in, database operations out."""

from muster.events import (
    BindRequested,
    CycleCompleted,
    PodBound,
    PodGroupCreated,
    PodSpec,
    Resources,
    WorkloadRejected,
)

from services.projector import convert as c
from services.projector.sink import coalesce


def group(name="train", pods=2) -> PodGroupCreated:
    return PodGroupCreated(
        name=name,
        queue="q",
        workload_uid="u1",
        pods=[PodSpec(count=pods, resources=Resources(gpu=1, cpu=1000))],
    )


def sqls(ops):
    return [op.sql for op in ops]


def test_every_event_becomes_one_row_of_the_events_table_addressed_by_seq_and_index():
    ops, _ = c.convert(7, "muster.podgroups", [group("a"), group("b")])
    rows = [op.args for op in ops if op.sql == c.INSERT_EVENT]
    assert [(r[0], r[1], r[3]) for r in rows] == [(7, 0, "PodGroupCreated"), (7, 1, "PodGroupCreated")]


def test_a_pod_group_makes_a_job_row_and_one_row_per_pod():
    ops, _ = c.convert(3, "muster.podgroups", [group(pods=3)])
    assert sqls(ops).count(c.INSERT_POD) == 3
    assert [op.args[1] for op in ops if op.sql == c.INSERT_POD] == [0, 1, 2]
    assert c.GROUPED_WORKLOAD in sqls(ops)


def test_a_bind_is_recorded_as_a_decision_and_moves_the_pod_to_binding():
    ops, _ = c.convert(
        9, "muster.decisions.default", [BindRequested(job="a", pod=1, node="n", gpus=[3], cycle=4)]
    )
    decision = next(op.args for op in ops if op.sql == c.INSERT_DECISION)
    assert decision[:9] == (9, 0, "default", 4, 0, "bind", "a", 1, "n")
    assert next(op.args for op in ops if op.sql == c.POD_PLACED)[2:4] == ("binding", "n")


def test_confirmations_mark_their_jobs_for_status_rederivation():
    _, touched = c.convert(
        10, "muster.pods.default", [PodBound(job="a", pod=0, node="n"), PodBound(job="b", pod=0, node="n")]
    )
    assert touched == {"a", "b"}


def test_changed_pending_reasons_update_jobs_in_name_order():
    ops, _ = c.convert(
        11,
        "muster.decisions.default",
        [CycleCompleted(cycle=1, watermark=10, clock=1.0, pending={"b": "full", "a": ""})],
    )
    assert [op.args for op in ops if op.sql == c.JOB_REASON] == [("a", ""), ("b", "full")]


def test_a_rejected_workload_keeps_its_error_and_field():
    ops, _ = c.convert(
        2, "muster.podgroups", [WorkloadRejected(uid="u", error="must be positive", field="spec.replicas")]
    )
    row = next(op.args for op in ops if op.sql == c.UPSERT_WORKLOAD)
    assert row[2:5] == ("rejected", "must be positive", "spec.replicas")


def test_runs_of_the_same_statement_are_coalesced_in_order():
    ops, _ = c.convert(3, "muster.podgroups", [group(pods=2)])
    runs = coalesce(ops)
    assert [sql for sql, _ in runs] == [c.INSERT_EVENT, c.GROUPED_WORKLOAD, c.INSERT_JOB, c.INSERT_POD]
    assert len(runs[-1][1]) == 2

"""The projection as a pure function: events in, database operations out."""

from muster.cycle_record import cycle_record
from muster.events import (
    BindRequested,
    CycleCompleted,
    PendingReasons,
    PodBound,
    PodCompleted,
    PodEvicted,
    PodFailed,
    PodGroupCreated,
    PodSpec,
    Resources,
    WorkloadRejected,
    decode_event,
    encode_envelope,
    envelope_parts,
)
from muster.store import convert as c
from muster.store.sink import plan


def group(name="train", pods=2) -> PodGroupCreated:
    return PodGroupCreated(
        name=name,
        queue="q",
        workload_uid="u1",
        pods=[PodSpec(count=pods, resources=Resources(gpu=1, cpu=1000))],
    )


def sqls(ops):
    return [op.sql for op in ops if isinstance(op, c.Op)]


def test_every_event_becomes_one_row_of_the_events_table_addressed_by_seq_and_index():
    ops, _ = c.convert(7, "muster.podgroups", [group("a"), group("b")])
    rows = [op.args for op in ops if isinstance(op, c.Op) and op.sql == c.INSERT_EVENT]
    assert [(r[0], r[1], r[3]) for r in rows] == [(7, 0, "PodGroupCreated"), (7, 1, "PodGroupCreated")]


def test_a_pod_group_makes_a_job_row_and_one_row_per_pod():
    ops, _ = c.convert(3, "muster.podgroups", [group(pods=3)])
    assert sqls(ops).count(c.INSERT_POD) == 3
    assert [op.args[1] for op in ops if isinstance(op, c.Op) and op.sql == c.INSERT_POD] == [0, 1, 2]
    assert c.GROUPED_WORKLOAD in sqls(ops)


def test_a_bind_is_recorded_as_a_decision_and_moves_the_pod_to_binding():
    ops, _ = c.convert(
        9, "muster.decisions.default", [BindRequested(job="a", pod=1, node="n", gpus=[3], cycle=4)]
    )
    decision = next(op.args for op in ops if isinstance(op, c.Op) and op.sql == c.INSERT_DECISION)
    assert decision[:9] == (9, 0, "default", 4, 0, "bind", "a", 1, "n")
    change = next(op for op in ops if isinstance(op, c.PodChange))
    assert (change.status, change.placement) == ("binding", ("n", [3], 0.0))


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
    assert [op.args for op in ops if isinstance(op, c.Op) and op.sql == c.JOB_REASON] == [
        ("a", ""),
        ("b", "full"),
    ]


def reason_ops(ops) -> list[tuple]:
    return [op.args for op in ops if isinstance(op, c.Op) and op.sql == c.JOB_REASON]


def test_a_part_of_a_cycles_reasons_updates_its_jobs_in_name_order():
    part = PendingReasons(cycle=1, clock=1.0, reasons={"d": "full", "c": ""})
    ops, _ = c.convert(11, "muster.decisions.default", [part])
    assert reason_ops(ops) == [("c", ""), ("d", "full")]


def test_a_cycle_recorded_in_parts_updates_every_job_its_whole_record_would():
    whole = CycleCompleted(
        cycle=1, watermark=10, clock=1.0, pending={f"j{i:03d}": "full" for i in range(300)}
    )
    record = cycle_record([], whole, budget=1_000)
    assert len(record) > 2
    ops, _ = c.convert(11, "muster.decisions.default", record)
    assert reason_ops(ops) == reason_ops(c.convert(11, "muster.decisions.default", [whole])[0])


def test_a_rejected_workload_keeps_its_error_and_field():
    ops, _ = c.convert(
        2, "muster.podgroups", [WorkloadRejected(uid="u", error="must be positive", field="spec.replicas")]
    )
    row = next(op.args for op in ops if isinstance(op, c.Op) and op.sql == c.UPSERT_WORKLOAD)
    assert row[2:5] == ("rejected", "must be positive", "spec.replicas")


def test_a_batch_groups_appends_new_jobs_and_pods_for_set_wise_writing():
    ops, _ = c.convert(3, "muster.podgroups", [group("a", pods=2), group("b", pods=2)])
    batch = plan(ops)
    assert [len(rows) for rows in batch.appends.values()] == [2]
    assert [row[0] for row in batch.jobs] == ["a", "b"]
    assert [(row[0], row[1]) for row in batch.pods] == [("a", 0), ("a", 1), ("b", 0), ("b", 1)]
    assert list(batch.workloads_grouped) == ["u1"]


def test_a_pods_changes_in_one_batch_fold_into_the_state_the_log_leaves():
    bind = c.convert(4, "d", [BindRequested(job="a", pod=0, node="n", gpus=[1])])[0]
    bound = c.convert(5, "p", [PodBound(job="a", pod=0, node="n", gpus=[1])])[0]
    evicted = c.convert(6, "p", [PodEvicted(job="a", pod=0, node="n")])[0]
    rebound = c.convert(7, "p", [PodBound(job="a", pod=0, node="m", gpus=[2])])[0]
    done = c.convert(8, "p", [PodCompleted(job="a", pod=0, node="m")])[0]
    assert plan(bind + bound + evicted + rebound + done).pod_changes == [
        ("a", 0, "completed", True, "m", [2], 0.0, 8, None, None)
    ]
    assert plan(bind + evicted).pod_changes == [("a", 0, "pending", True, None, [], 0.0, 6, None, None)]


def test_a_failed_pod_keeps_its_exit_code_and_its_nodes_words_and_marks_its_job():
    ops, touched = c.convert(
        9, "p", [PodFailed(job="a", pod=1, node="n", exit_code=3, reason="CUDA error: out of memory")]
    )
    change = next(op for op in ops if isinstance(op, c.PodChange))
    assert (change.status, change.exit_code, change.failure_reason) == (
        "failed",
        3,
        "CUDA error: out of memory",
    )
    assert touched == {"a"}


def test_a_failure_without_a_process_has_no_exit_code_and_an_empty_reason_is_none():
    ops, _ = c.convert(9, "p", [PodFailed(job="a", pod=0, node="n")])
    change = next(op for op in ops if isinstance(op, c.PodChange))
    assert (change.exit_code, change.failure_reason) == (None, None)


def test_a_failure_folded_after_a_bind_keeps_the_placement_and_how_the_pod_ended():
    bound = c.convert(5, "p", [PodBound(job="a", pod=0, node="n", gpus=[1])])[0]
    failed = c.convert(6, "p", [PodFailed(job="a", pod=0, node="n", exit_code=3, reason="boom")])[0]
    evicted = c.convert(7, "p", [PodEvicted(job="a", pod=0, node="n")])[0]
    assert plan(bound + failed + evicted).pod_changes == [
        ("a", 0, "failed", True, "n", [1], 0.0, 6, 3, "boom")
    ]


def test_jobs_that_had_a_pod_bound_are_remembered_for_the_status_rederivation():
    bound = c.convert(5, "p", [PodBound(job="a", pod=0, node="n"), PodBound(job="b", pod=0, node="n")])[0]
    evicted = c.convert(6, "p", [PodEvicted(job="a", pod=0, node="n")])[0]
    assert plan(bound + evicted).ran == {"a", "b"}


def test_an_envelope_splits_into_each_events_own_bytes_in_order():
    events = [group("a"), PodBound(job="a", pod=0, node="n", gpus=[1])]
    parts = envelope_parts(encode_envelope(events))
    assert [decode_event(p) for p in parts] == events


def test_without_the_message_bytes_each_event_is_encoded_again():
    ops, _ = c.convert(1, "muster.podgroups", [group("a")])
    payload = next(op.args[4] for op in ops if isinstance(op, c.Op) and op.sql == c.INSERT_EVENT)
    assert decode_event(payload.encode()) == group("a")

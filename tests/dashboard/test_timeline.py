"""A job's why timeline, read from event rows as the events table stores them."""

from __future__ import annotations

from datetime import UTC, datetime

import msgspec
from muster.events import (
    BindRequested,
    CycleCompleted,
    EvictionRequested,
    PendingReasons,
    PodBound,
    PodCompleted,
    PodEvicted,
    PodFailed,
    PodGroupCreated,
    PodGroupDeleted,
    PodSpec,
    Resources,
    event_type,
)
from muster.store.timeline import timeline

AT = datetime(2025, 1, 1, 12, 0, tzinfo=UTC)


def row(seq: int, event, idx: int = 0, as_dict: bool = False) -> dict:
    payload = msgspec.json.encode(event).decode()
    return {
        "stream_seq": seq,
        "idx": idx,
        "type": event_type(event),
        "payload": msgspec.json.decode(payload) if as_dict else payload,
        "recorded_at": AT,
    }


def created(name: str = "train", pods: int = 2, min_available: int = 2) -> PodGroupCreated:
    return PodGroupCreated(
        name=name,
        queue="vision",
        min_available=min_available,
        pods=[PodSpec(count=pods, resources=Resources(gpu=4))],
    )


def cycle(n: int, **pending: str) -> CycleCompleted:
    return CycleCompleted(cycle=n, watermark=n, clock=float(n), pending=pending)


def test_creation_names_the_queue_the_pod_count_and_the_gang_size():
    [entry] = timeline([row(1, created(pods=4, min_available=3))], "train")
    assert entry.kind == "created"
    assert (
        "queue vision" in entry.text and "4 pods" in entry.text and "once 3 can start together" in entry.text
    )
    assert (entry.seq, entry.at) == (1, AT)


def test_a_gangs_binds_in_one_message_read_as_one_entry_with_every_device():
    rows = [
        row(5, BindRequested(job="train", pod=0, node="gpu-a", gpus=[0, 1], cycle=3), idx=0),
        row(5, BindRequested(job="train", pod=1, node="gpu-b", gpus=[2, 3], cycle=3), idx=1),
    ]
    [entry] = timeline(rows, "train")
    assert entry.kind == "bind_requested"
    assert [p.pod for p in entry.pods] == [0, 1]
    assert entry.text == "placed pods 0-1 on gpu-a (gpu 0, 1), gpu-b (gpu 2, 3) in cycle 3"
    assert entry.cycle == 3


def test_binds_from_different_messages_stay_separate_entries():
    rows = [
        row(5, BindRequested(job="train", pod=0, node="gpu-a", gpus=[0])),
        row(6, BindRequested(job="train", pod=1, node="gpu-a", gpus=[1])),
    ]
    assert [len(e.pods) for e in timeline(rows, "train")] == [1, 1]


def test_a_shared_device_shows_the_fraction_the_pod_holds():
    [entry] = timeline(
        [row(3, PodBound(job="nb", pod=0, node="gpu-c", gpus=[2], gpu_share=0.25, at=7.0))], "nb"
    )
    assert entry.text == "pod 0 started on gpu-c (0.25 of gpu 2)"
    assert entry.clock == 7.0


def test_a_pending_reason_appears_when_it_changes_and_not_when_it_repeats():
    rows = [
        row(2, cycle(1, train="queue vision is at its limit")),
        row(3, cycle(2, train="queue vision is at its limit")),
        row(4, cycle(3, train="gang of 2 pods does not fit")),
    ]
    entries = timeline(rows, "train")
    assert [e.reason for e in entries] == ["queue vision is at its limit", "gang of 2 pods does not fit"]
    assert entries[0].text == "pending: queue vision is at its limit"
    assert [e.cycle for e in entries] == [1, 3]


def test_a_pending_reason_recorded_in_a_part_of_a_cycle_appears_with_the_cycle():
    part = PendingReasons(cycle=4, clock=4.0, reasons={"train": "queue vision is at its limit"})
    [entry] = timeline([row(5, part), row(5, cycle(4, other="no room"), idx=1)], "train")
    assert entry.text == "pending: queue vision is at its limit"
    assert (entry.cycle, entry.clock) == (4, 4.0)


def test_the_same_reason_after_the_job_stopped_waiting_is_news_again():
    rows = [row(2, cycle(1, train="no room")), row(3, cycle(2, train="")), row(9, cycle(7, train="no room"))]
    assert [e.cycle for e in timeline(rows, "train")] == [1, 7]


def test_other_jobs_events_and_reasons_are_ignored():
    rows = [
        row(1, created("other")),
        row(2, cycle(1, other="no room")),
        row(3, BindRequested(job="other", pod=0, node="gpu-a")),
        row(4, created("train")),
    ]
    assert [e.kind for e in timeline(rows, "train")] == ["created"]


def test_an_eviction_says_which_action_for_which_job_and_why():
    rows = [
        row(
            8,
            EvictionRequested(
                job="train",
                pod=0,
                node="gpu-a",
                cycle=4,
                action="reclaim",
                for_job="finetune",
                reason="over fair share",
            ),
        )
    ]
    [entry] = timeline(rows, "train")
    assert (entry.kind, entry.action, entry.for_job, entry.reason) == (
        "eviction_requested",
        "reclaim",
        "finetune",
        "over fair share",
    )
    assert entry.text == "reclaim: pod 0 to leave gpu-a to make room for finetune (over fair share)"


def test_evicting_another_job_on_this_jobs_behalf_shows_in_its_timeline():
    rows = [
        row(8, EvictionRequested(job="victim", pod=1, node="gpu-b", action="reclaim", for_job="finetune"))
    ]
    [entry] = timeline(rows, "finetune")
    assert entry.kind == "made_room" and entry.job == "victim"
    assert entry.text == "reclaim of victim's pod 1 on gpu-b to make room for this job"


def test_a_whole_life_reads_in_log_order_whatever_order_the_rows_come_in():
    rows = [
        row(1, created(pods=1, min_available=1)),
        row(2, cycle(1, train="no room")),
        row(3, BindRequested(job="train", pod=0, node="gpu-a", gpus=[0], cycle=2)),
        row(3, cycle(2, train=""), idx=1),
        row(4, PodBound(job="train", pod=0, node="gpu-a", gpus=[0])),
        row(5, EvictionRequested(job="train", pod=0, node="gpu-a", action="preempt")),
        row(6, PodEvicted(job="train", pod=0, node="gpu-a")),
        row(7, PodBound(job="train", pod=0, node="gpu-b", gpus=[1])),
        row(8, PodCompleted(job="train", pod=0, node="gpu-b")),
        row(9, PodGroupDeleted(name="train")),
    ]
    entries = timeline(list(reversed(rows)), "train")
    assert [e.kind for e in entries] == [
        "created",
        "waiting",
        "bind_requested",
        "bound",
        "eviction_requested",
        "evicted",
        "bound",
        "completed",
        "deleted",
    ]
    assert entries[5].text == "pod 0 evicted from gpu-a, back to pending"
    assert entries[7].text == "pod 0 completed on gpu-b"


def test_a_failure_names_the_pod_its_node_its_exit_code_and_the_nodes_words():
    [entry] = timeline(
        [row(6, PodFailed(job="train", pod=1, node="gpu-a", exit_code=3, reason="out of memory", at=9.0))],
        "train",
    )
    assert (entry.kind, entry.exit_code, entry.reason, entry.clock) == ("failed", 3, "out of memory", 9.0)
    assert entry.text == "pod 1 failed on gpu-a with exit code 3: out of memory"


def test_a_failure_without_a_process_has_no_exit_code_to_show():
    [entry] = timeline(
        [row(6, PodFailed(job="train", pod=0, node="gpu-a", reason="no command to run"))], "train"
    )
    assert (entry.exit_code, entry.text) == (None, "pod 0 failed on gpu-a: no command to run")


def test_pods_that_fail_alike_in_one_message_read_as_one_entry_and_unlike_as_two():
    rows = [
        row(6, PodFailed(job="train", pod=0, node="gpu-a", exit_code=1, reason="exited with code 1"), idx=0),
        row(6, PodFailed(job="train", pod=1, node="gpu-a", exit_code=1, reason="exited with code 1"), idx=1),
        row(6, PodFailed(job="train", pod=2, node="gpu-b", exit_code=-9, reason="killed by signal 9"), idx=2),
    ]
    assert [e.text for e in timeline(rows, "train")] == [
        "pods 0-1 failed on gpu-a with exit code 1: exited with code 1",
        "pod 2 failed on gpu-b with exit code -9: killed by signal 9",
    ]


def test_payloads_as_dicts_read_the_same_as_json_text():
    events = [created(), cycle(1, train="no room"), BindRequested(job="train", pod=0, node="gpu-a", gpus=[3])]
    as_text = [row(i + 1, e) for i, e in enumerate(events)]
    as_dicts = [row(i + 1, e, as_dict=True) for i, e in enumerate(events)]
    assert timeline(as_text, "train") == timeline(as_dicts, "train")


def test_pod_numbers_are_written_as_runs():
    rows = [
        row(5, PodBound(job="train", pod=i, node="gpu-a"), idx=n) for n, i in enumerate([0, 1, 2, 5, 7, 8])
    ]
    [entry] = timeline(rows, "train")
    assert entry.text.startswith("pods 0-2, 5, 7-8 started")


def test_no_rows_make_an_empty_timeline():
    assert timeline([], "train") == []

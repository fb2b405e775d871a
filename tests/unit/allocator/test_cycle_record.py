"""A cycle's record: decisions, then its changed pending reasons in parts when they are many, then CycleCompleted."""

from __future__ import annotations

import random

from muster import events as ev
from muster.bus import chunk_events
from muster.cycle_record import REASONS_BUDGET, cycle_record

NATS_MAX_PAYLOAD = 1024 * 1024
REASON = "queue capped is at its limit of 0 gpu (0 in use, the job needs 1 more)"
BIND = ev.BindRequested(job="train", pod=0, node="node-0", gpus=[0], cycle=7, epoch=3)


def completed(reasons: dict[str, str]) -> ev.CycleCompleted:
    return ev.CycleCompleted(
        cycle=7, epoch=3, watermark=120, clock=42.5, binds=1, pending=reasons, config_digest="c0ffee"
    )


def backlog(jobs: int) -> dict[str, str]:
    """Changed reasons of ``jobs`` jobs, in job order, one of them no longer pending."""
    return {f"job-{i:06d}": "" if i == 3 else REASON for i in range(jobs)}


def carried(record: list[ev.Event]) -> list[dict[str, str]]:
    """The reasons each event of a record carries, in order."""
    out = []
    for event in record:
        if isinstance(event, ev.PendingReasons):
            out.append(event.reasons)
        elif isinstance(event, ev.CycleCompleted):
            out.append(event.pending)
    return out


def test_a_cycle_whose_completion_fits_is_recorded_as_its_decisions_then_its_completion_unchanged():
    end = completed(backlog(100))
    assert cycle_record([BIND], end) == [BIND, end]


def test_a_large_cycle_is_recorded_in_parts_each_within_the_budget():
    record = cycle_record([BIND], completed(backlog(20_000)), budget=100_000)
    assert record[0] == BIND and isinstance(record[-1], ev.CycleCompleted)
    assert all(isinstance(e, ev.PendingReasons) for e in record[1:-1]) and len(record) > 3
    assert max(len(ev.encode_event(e)) for e in record) <= 100_000


def test_the_parts_carry_every_reason_once_in_job_order():
    reasons = backlog(20_000)
    record = cycle_record([BIND], completed(reasons), budget=100_000)
    jobs = [job for part in carried(record) for job in part]
    assert jobs == sorted(reasons)
    assert {job: why for part in carried(record) for job, why in part.items()} == reasons


def test_the_parts_are_named_by_their_cycle_and_the_completion_keeps_everything_but_the_reasons():
    end = completed(backlog(20_000))
    *_, last = record = cycle_record([], end, budget=100_000)
    for part in record[:-1]:
        assert (part.pool, part.cycle, part.epoch, part.clock) == (end.pool, end.cycle, end.epoch, end.clock)
    assert (
        ev.CycleCompleted(**{**{f: getattr(last, f) for f in last.__struct_fields__}, "pending": end.pending})
        == end
    )


def test_the_split_depends_only_on_the_reasons_not_on_their_order():
    reasons = backlog(20_000)
    shuffled = list(reasons.items())
    random.Random(5).shuffle(shuffled)
    a = cycle_record([BIND], completed(reasons), budget=100_000)
    b = cycle_record([BIND], completed(dict(shuffled)), budget=100_000)
    assert [ev.encode_event(e) for e in a] == [ev.encode_event(e) for e in b]


def test_a_reason_larger_than_the_room_of_a_part_is_a_part_of_its_own():
    reasons = {"a": REASON, "b": "x" * 2_000, "c": REASON}
    record = cycle_record([], completed(reasons), budget=1_000)
    assert carried(record) == [{"a": REASON}, {"b": "x" * 2_000}, {"c": REASON}]


def test_a_backlog_of_100k_jobs_goes_out_in_messages_nats_accepts():
    record = cycle_record([BIND], completed(backlog(100_000)))
    assert max(len(ev.encode_event(e)) for e in record) <= REASONS_BUDGET
    messages = [ev.encode_envelope(chunk) for chunk in chunk_events(record)]
    assert len(messages) > 1
    assert max(map(len, messages)) < NATS_MAX_PAYLOAD

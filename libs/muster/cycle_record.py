"""A cycle's record as it goes onto the log: its decisions, its changed pending reasons, its CycleCompleted.

One event cannot be split across messages, and a cycle in which tens of
thousands of jobs change reason (a queue whose limit holds a large backlog,
at its first cycle) would make a ``CycleCompleted`` larger than NATS
accepts. Such a cycle carries its reasons in ``PendingReasons`` parts
before its ``CycleCompleted``, split in sorted job order, so the record is a
function of the cycle alone: the live allocator, simulation and replay all
build it here, and replay compares it event for event with the log.

A cycle whose ``CycleCompleted`` fits the budget is recorded exactly as
before parts existed, so older logs replay unchanged. Changing the budget
changes how large cycles are recorded: replay of logs recorded under another
budget would see their split differ.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from muster.bus.base import MAX_ENVELOPE_BYTES
from muster.events import CycleCompleted, Event, PendingReasons, encode_event

REASONS_BUDGET = MAX_ENVELOPE_BYTES // 2
"""Bytes of JSON one event of a cycle's record may take. Half an envelope: a part never fills a message
alone, and with the envelope and headers around it no message comes near NATS' 1 MB limit."""

_encode = msgspec.json.Encoder().encode


def cycle_record(
    decisions: Sequence[Event], completed: CycleCompleted, budget: int = REASONS_BUDGET
) -> list[Event]:
    """The events that record one cycle, in publishing order: ``decisions``, then as many
    ``PendingReasons`` parts as keep each event within ``budget`` bytes, then ``completed`` with the
    reasons the parts do not carry (all of them when it fits whole)."""
    if len(encode_event(completed)) <= budget:
        return [*decisions, completed]
    empty = msgspec.structs.replace(completed, pending={})
    frame = max(len(encode_event(empty)), len(encode_event(_part(completed, {}))))
    *parts, rest = _groups(completed.pending, budget - frame)
    return [
        *decisions,
        *(_part(completed, reasons) for reasons in parts),
        msgspec.structs.replace(completed, pending=rest),
    ]


def _part(completed: CycleCompleted, reasons: dict[str, str]) -> PendingReasons:
    c = completed
    return PendingReasons(pool=c.pool, cycle=c.cycle, epoch=c.epoch, clock=c.clock, reasons=reasons)


def _groups(reasons: dict[str, str], room: int) -> list[dict[str, str]]:
    """``reasons`` in sorted job order, cut into consecutive groups whose JSON objects each take at most
    ``room`` bytes more than an empty one (a single entry larger than that forms a group of its own)."""
    groups: list[dict[str, str]] = [{}]
    size = 0
    for job, reason in sorted(reasons.items()):
        # Quoted key, colon, quoted value, and a comma: one byte more than the entry adds to the object.
        n = len(_encode(job)) + len(_encode(reason)) + 2
        if groups[-1] and size + n > room:
            groups.append({})
            size = 0
        groups[-1][job] = reason
        size += n
    return groups

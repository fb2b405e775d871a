"""Whatever order admitted messages come in, the allocator folds them and decides: no reader crash-loops.

Readers refuse what is malformed or out of bounds (``muster.bus.admission``); what they admit can
still say odd things: a bind for a job never created, a pod bound twice, an eviction of a pod on a
removed node. Hypothesis shuffles, repeats and drops the messages of a real recorded history and
folds them through the same ``AllocatorFold`` the live allocator, replay and simulate use.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from muster.replay import load_log
from muster.scheduler.config import AllocatorConfig
from muster.scheduler.engine import Allocator
from muster.scheduler.fold import AllocatorFold

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "demo-4-nodes-30-jobs.jsonl"
MESSAGES = [m.events for m in load_log(GOLDEN) if m.events]

# A history as any reader could receive it: messages lost, repeated and out of order.
histories = st.lists(st.sampled_from(range(len(MESSAGES))), min_size=1, max_size=3 * len(MESSAGES))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(order=histories)
def test_any_order_of_admitted_messages_folds_and_decides_without_an_error(order):
    fold = AllocatorFold(Allocator(AllocatorConfig(), frozenset({"default"})), "default")
    for seq, index in enumerate(order, start=1):
        fold.fold(seq, MESSAGES[index])
        if seq % 7 == 0:
            fold.cycle(float(seq), epoch=fold.log_epoch)
    # The property is that nothing above raised; the last cycle still reads what was folded.
    assert fold.cycle(1e9, epoch=fold.log_epoch).completed.watermark == len(order)

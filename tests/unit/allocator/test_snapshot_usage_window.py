"""A snapshot holds the usage window it was folded under, whole: another window type refuses it."""

from __future__ import annotations

import pytest
from muster.scheduler import snapshot as codec
from muster.scheduler.config import AllocatorConfig, FairnessConfig
from muster.scheduler.engine import Allocator
from muster.scheduler.fold import AllocatorFold

SLIDING = FairnessConfig(usage_window=3600.0)
TUMBLING = FairnessConfig(usage_window=3600.0, window_type="tumbling", tumbling_window_start=0.0)


def fold_under(fairness: FairnessConfig) -> AllocatorFold:
    return AllocatorFold(Allocator(AllocatorConfig(fairness=fairness), frozenset({"default"})), "default")


def test_a_snapshot_continues_a_fold_under_the_same_window():
    fold = fold_under(TUMBLING)
    codec.restore_image(fold, codec.image_of(fold_under(TUMBLING)).data)
    assert fold.engine.state.usage.window == TUMBLING.window


def test_a_snapshot_folded_under_a_sliding_window_is_refused_under_a_tumbling_one_of_the_same_size():
    # the two forget at different moments: each keeps intervals the other has dropped, so neither stands for the other
    with pytest.raises(codec.ImageError, match="usage window"):
        codec.restore_image(fold_under(TUMBLING), codec.image_of(fold_under(SLIDING)).data)

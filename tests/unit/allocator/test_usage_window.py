"""Where a usage window opens, as a function of the cycle's clock (KAI's sliding, tumbling, cron)."""

from __future__ import annotations

import pytest
from muster.scheduler.config import AllocatorConfig, FairnessConfig
from muster.usage_window import UsageWindow, tumbling_reset, window_error


def test_a_sliding_window_opens_its_size_before_the_clock():
    assert UsageWindow(size=3600.0).since(10_000.0) == 6400.0


def test_a_tumbling_window_opens_at_the_latest_reset_before_the_clock():
    assert tumbling_reset(100.0, 1000.0, 2600.0) == 2100.0
    assert tumbling_reset(100.0, 1000.0, 2100.5) == 2100.0


def test_a_tumbling_window_on_a_reset_still_covers_the_period_that_reset_ends():
    assert tumbling_reset(100.0, 1000.0, 2100.0) == 1100.0


def test_a_tumbling_window_is_empty_at_its_start_and_before_it():
    assert tumbling_reset(100.0, 1000.0, 100.0) == 100.0
    assert tumbling_reset(100.0, 1000.0, 40.0) == 40.0


def test_a_tumbling_window_with_a_size_that_floats_cannot_hold_exactly_lands_on_the_sums():
    assert tumbling_reset(0.0, 0.1, 0.30000000000000004) == pytest.approx(0.2)
    assert tumbling_reset(0.0, 0.1, 0.3) < 0.3


def test_the_window_start_never_moves_back_as_the_clock_advances():
    windows = [
        UsageWindow(size=600.0),
        UsageWindow(type="tumbling", size=600.0, tumbling_start=-50.0),
        UsageWindow(type="cron", cron="*/7 * * * *"),
    ]
    for w in windows:
        starts = [w.since(float(c)) for c in range(0, 5000, 37)]
        assert starts == sorted(starts)
        assert all(s <= c for s, c in zip(starts, range(0, 5000, 37), strict=True))


def test_a_cron_window_opens_at_the_expression_latest_firing():
    w = UsageWindow(type="cron", cron="0 * * * *")
    assert w.since(3 * 3600 + 125.0) == 3 * 3600
    assert w.since(3 * 3600) == 2 * 3600


@pytest.mark.parametrize(
    ("settings", "field"),
    [
        ({"window_type": "hopping"}, "window_type"),
        ({"window_type": "tumbling"}, "tumbling_window_start"),
        ({"window_type": "sliding", "tumbling_window_start": 0.0}, "tumbling_window_start"),
        ({"window_type": "cron"}, "cron_string"),
        ({"window_type": "cron", "cron_string": "0 0 L * *"}, "cron_string"),
        ({"window_type": "tumbling", "tumbling_window_start": 0.0, "cron_string": "@daily"}, "cron_string"),
        ({"usage_window": 0.0}, "usage_window"),
    ],
)
def test_a_wrong_window_setting_is_refused_naming_its_field(settings, field):
    args = {"window_type": "sliding", "size": 60.0, "tumbling_start": None, "cron_string": None}
    args.update({"size" if k == "usage_window" else k.replace("_window", ""): v for k, v in settings.items()})
    assert window_error(**args)[0] == field
    with pytest.raises(ValueError, match=f"fairness.{field}"):
        FairnessConfig(**settings)


def test_a_fairness_config_with_the_sliding_window_keeps_the_digest_it_had():
    plain = AllocatorConfig(fairness=FairnessConfig(usage_window=3600.0, half_life=0.0))
    # the digest this config had before window types existed (logs recorded with it replay)
    assert plain.digest() == "f69954dbbdc7409f"
    tumbling = FairnessConfig(
        usage_window=3600.0, half_life=0.0, window_type="tumbling", tumbling_window_start=0.0
    )
    assert AllocatorConfig(fairness=tumbling).digest() != plain.digest()

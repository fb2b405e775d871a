"""The allocator's default min-runtimes (KAI's minruntime plugin arguments ``defaultPreemptMinRuntime``,
``defaultReclaimMinRuntime``): checked on construction, settable wherever the allocator is configured,
and counted in the digest once set (test_forget_finished holds the digest of one that leaves them unset)."""

from __future__ import annotations

import pytest
from muster.scheduler.config import AllocatorConfig

from services.allocator.app import load_config

FIELDS = ("default_preempt_min_runtime", "default_reclaim_min_runtime")


@pytest.mark.parametrize("field", FIELDS)
@pytest.mark.parametrize("value", [-1.0, float("nan"), float("inf")])
def test_a_default_min_runtime_that_is_not_a_finite_non_negative_number_is_refused_by_name(field, value):
    with pytest.raises(ValueError, match=f"^{field}: "):
        AllocatorConfig(**{field: value})


@pytest.mark.parametrize("field", FIELDS)
def test_setting_a_default_min_runtime_changes_the_digest(field):
    assert AllocatorConfig(**{field: 600.0}).digest() != AllocatorConfig().digest()


def test_the_allocator_service_reads_the_default_min_runtimes_from_its_settings(tmp_path):
    settings = tmp_path / "allocator.yaml"
    settings.write_text("default_preempt_min_runtime: 600\ndefault_reclaim_min_runtime: 300\n")
    config = load_config({"MUSTER_ALLOCATOR_CONFIG": str(settings)})
    assert (config.default_preempt_min_runtime, config.default_reclaim_min_runtime) == (600.0, 300.0)

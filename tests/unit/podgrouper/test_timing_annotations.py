"""KAI v0.17's per-PodGroup timing annotations: preemption delay and stale-gang grace (Go durations)."""

from __future__ import annotations

import pytest
from muster.go_duration import parse_go_duration
from muster.grouping.errors import ManifestError

from .support import group_yaml, only

DELAY = "kai.scheduler/preemption-delay"
GRACE = "kai.scheduler/staleness-grace-period"


def job(owner: dict[str, str] | None = None, pod: dict[str, str] | None = None) -> str:
    return f"""
apiVersion: batch/v1
kind: Job
metadata: {{name: j, annotations: {owner or {}}}}
spec:
  template:
    metadata: {{annotations: {pod or {}}}}
    spec: {{containers: [{{name: c}}]}}
"""


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("30s", 30), ("5m", 300), ("1h30m", 5400), ("1.5h", 5400), ("300ms", 0.3), ("-5m", -300), ("0", 0)],
)
def test_go_durations_read_as_seconds(text, seconds):
    assert parse_go_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["30", "", "5x", "1h 30m", "-", "1e3s", "9999999999h"])
def test_what_go_refuses_as_a_duration_is_refused(text):
    with pytest.raises(ValueError):
        parse_go_duration(text)


def test_no_annotation_leaves_both_to_the_scheduler():
    group = only(group_yaml(job()))
    assert (group.preemption_delay, group.stale_gang_grace) == (None, None)


def test_the_workloads_annotations_give_the_delay_and_grace_in_seconds():
    group = only(group_yaml(job(owner={DELAY: "5m", GRACE: "30s"})))
    assert (group.preemption_delay, group.stale_gang_grace) == (300.0, 30.0)


def test_a_negative_stale_grace_is_kept_it_means_never_evict():
    assert only(group_yaml(job(owner={GRACE: "-1s"}))).stale_gang_grace == -1.0


def test_the_pods_annotation_counts_when_the_workload_has_none():
    assert only(group_yaml(job(pod={DELAY: "1m"}))).preemption_delay == 60.0


def test_the_workloads_annotation_wins_over_the_pods():
    assert only(group_yaml(job(owner={GRACE: "10s"}, pod={GRACE: "20s"}))).stale_gang_grace == 10.0


@pytest.mark.parametrize(
    ("owner", "pod", "path"),
    [
        ({DELAY: "300"}, None, f"metadata.annotations.{DELAY}"),
        ({GRACE: "soon"}, None, f"metadata.annotations.{GRACE}"),
        ({DELAY: "-5m"}, None, f"metadata.annotations.{DELAY}"),
        (None, {GRACE: "1 minute"}, f"spec.template.metadata.annotations.{GRACE}"),
    ],
)
def test_a_value_muster_cannot_use_is_refused_naming_the_annotation(owner, pod, path):
    # KAI skips such a value with a log line; muster says so instead of dropping it.
    with pytest.raises(ManifestError) as caught:
        group_yaml(job(owner=owner, pod=pod))
    assert caught.value.path == path

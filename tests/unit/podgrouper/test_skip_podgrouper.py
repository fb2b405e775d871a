"""``kai.scheduler/skip-podgrouper: "true"`` (KAI v0.15, podgrouper-rules §1.1): muster refuses, naming it."""

from __future__ import annotations

import pytest
from muster.grouping.errors import ManifestError

from .support import group_yaml, only

SKIP = "kai.scheduler/skip-podgrouper"


def job(owner: str = "{}", pod: str = "{}") -> str:
    return f"""
apiVersion: batch/v1
kind: Job
metadata: {{name: j, annotations: {owner}}}
spec:
  template:
    metadata: {{annotations: {pod}}}
    spec: {{containers: [{{name: c}}]}}
"""


@pytest.mark.parametrize(
    ("owner", "pod", "path"),
    [
        (f"{{{SKIP}: 'true'}}", "{}", f"metadata.annotations.{SKIP}"),
        ("{}", f"{{{SKIP}: 'true'}}", f"spec.template.metadata.annotations.{SKIP}"),
    ],
)
def test_a_workload_or_pod_asking_to_be_left_alone_is_refused_naming_the_annotation(owner, pod, path):
    with pytest.raises(ManifestError) as caught:
        group_yaml(job(owner, pod))
    assert caught.value.path == path
    assert "takes no externally created PodGroup" in str(caught.value)


def test_a_bare_pod_asking_to_be_left_alone_is_refused():
    pod = f"apiVersion: v1\nkind: Pod\nmetadata: {{name: p, annotations: {{{SKIP}: 'true'}}}}\n"
    with pytest.raises(ManifestError) as caught:
        group_yaml(pod + "spec: {containers: [{name: c}]}")
    assert caught.value.path == f"metadata.annotations.{SKIP}"


@pytest.mark.parametrize("value", ["false", "True", "yes"])
def test_any_other_value_is_ignored_as_kai_ignores_it(value):
    assert only(group_yaml(job(owner=f"{{{SKIP}: '{value}'}}"))).name == "j"

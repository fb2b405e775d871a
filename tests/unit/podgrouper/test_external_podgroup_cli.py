"""``muster group`` and ``muster submit`` with a KAI PodGroup manifest (podgrouper-rules.md §1.1)."""

from __future__ import annotations

import json

from muster.cli.main import main

from .test_external_podgroup import TREE_PODGROUP, bare_pod, skipped_job


def test_group_json_shows_the_podgroup_with_its_tree_and_the_pods_that_joined(tmp_path, capsys):
    path = tmp_path / "external.yaml"
    path.write_text("---".join([TREE_PODGROUP, skipped_job(), bare_pod("p1", "trainer", "r1")]))
    assert main(["group", str(path), "--json"]) == 0
    [group] = json.loads(capsys.readouterr().out)["groups"]
    assert (group["name"], group["kind"], group["queue"], group["pods_total"]) == (
        "trainer",
        "PodGroup",
        "team-a",
        3,
    )
    assert (group["priority_class"], group["preemptible"], group["min_subgroup"]) == ("build", True, 1)
    assert group["subgroups"] == [
        {"name": "replicas", "parent": None, "min_subgroup": 1},
        {"name": "r0", "parent": "replicas", "min_available": 2},
        {"name": "r1", "parent": "replicas", "min_available": 0},
    ]


def test_submitting_a_skipped_workload_without_its_podgroup_exits_2_naming_the_annotation(tmp_path, capsys):
    path = tmp_path / "skipped.yaml"
    path.write_text(skipped_job())
    assert main(["submit", "-f", str(path)]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and "spec.template.metadata.annotations.pod-group-name" in err

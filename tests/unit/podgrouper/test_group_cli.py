"""``muster group FILE [--json]``, run in-process through its register/_run pair."""

from __future__ import annotations

import argparse
import json

from muster.cli import group_cmd

from .support import MANIFESTS, TWO_GPU_CLAIMS, manifest_docs, two_pytorch_workers_claiming


def run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="muster")
    group_cmd.register(parser.add_subparsers())
    args = parser.parse_args(argv)
    return args.run(args)


def grouped_text(tmp_path, capsys, manifest: str) -> str:
    """What ``muster group`` prints for ``manifest`` written to a file."""
    path = tmp_path / "manifest.yaml"
    path.write_text(manifest)
    assert run(["group", str(path)]) == 0
    return capsys.readouterr().out


def test_json_output_has_the_cli_md_shape(capsys):
    manifest_docs("pytorchjob/kai__pytorch-job.yaml")  # skips when shared/ is absent
    assert run(["group", str(MANIFESTS / "pytorchjob/kai__pytorch-job.yaml"), "--json"]) == 0
    [group] = json.loads(capsys.readouterr().out)["groups"]
    assert set(group) == {
        "name",
        "kind",
        "queue",
        "priority_class",
        "priority",
        "preemptible",
        "min_available",
        "runtime",
        "pods_total",
        "subgroups",
        "pods",
    }
    assert (group["kind"], group["min_available"], group["pods_total"]) == ("PyTorchJob", 3, 3)
    assert group["runtime"] == "image"
    assert group["subgroups"] == [
        {"name": "master", "min_available": 1},
        {"name": "worker", "min_available": 2},
    ]
    assert group["pods"][1] == {"role": "worker", "count": 2, "resources": {"gpu": 1, "cpu": 0, "memory": 0}}


def test_json_cpu_is_in_cores(tmp_path, capsys):
    path = tmp_path / "pod.yaml"
    path.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, resources: {requests: {cpu: 250m, memory: 1Gi}}}]}"
    )
    assert run(["group", str(path), "--json"]) == 0
    resources = json.loads(capsys.readouterr().out)["groups"][0]["pods"][0]["resources"]
    assert resources == {"gpu": 0, "cpu": 0.25, "memory": 2**30}


def test_json_shows_every_extended_resource_a_pod_asks_for(tmp_path, capsys):
    path = tmp_path / "pod.yaml"
    path.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"
        "spec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1, rdma/ib: 2}}}]}"
    )
    assert run(["group", str(path), "--json"]) == 0
    resources = json.loads(capsys.readouterr().out)["groups"][0]["pods"][0]["resources"]
    assert resources == {"gpu": 1, "cpu": 0, "memory": 0, "rdma/ib": 2}


SEGMENTED_LWS = """
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {name: l}
spec:
  leaderWorkerTemplate:
    size: 4
    subGroupPolicy: {subGroupSize: 2}
    workerTemplate: {spec: {containers: [{name: c}]}}
"""


def test_json_tree_entries_have_a_parent_and_a_leaf_or_set_minimum(tmp_path, capsys):
    path = tmp_path / "lws.yaml"
    path.write_text(SEGMENTED_LWS)
    assert run(["group", str(path), "--json"]) == 0
    [group] = json.loads(capsys.readouterr().out)["groups"]
    assert group["subgroups"] == [
        {"name": "segment-0", "parent": None, "min_subgroup": 2},
        {"name": "leader", "parent": "segment-0", "min_available": 1},
        {"name": "workers", "parent": "segment-0", "min_available": 1},
        {"name": "segment-1", "parent": None, "min_available": 2},
    ]
    assert "min_subgroup" not in group  # KAI sets none on the LWS PodGroup itself


GROVE_PACKED = """
apiVersion: kai.scheduler/v1alpha1
kind: Topology
metadata: {name: grove-topology}
spec:
  levels: [{nodeLabel: example.com/block, alias: block}, {nodeLabel: example.com/rack, alias: rack}]
---
apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata: {name: tas, annotations: {grove.io/topology-name: grove-topology}}
spec:
  template:
    topologyConstraint: {pack: {required: block}}
    podCliqueScalingGroups:
      - {name: sg, cliqueNames: [prefill, decode], replicas: 1, minAvailable: 1, topologyConstraint: {pack: {required: rack}}}
    cliques:
      - {name: prefill, spec: {replicas: 1, podSpec: {containers: [{name: c}]}}}
      - {name: decode, spec: {replicas: 1, podSpec: {containers: [{name: c}]}}}
"""
"""A Grove PodCliqueSet packed into a block, its scaling group's cliques into a rack (Grove's
tas-hierarchy example, one level shorter)."""


def test_json_shows_a_grove_tree_with_each_constraint(tmp_path, capsys):
    path = tmp_path / "pcs.yaml"
    path.write_text(GROVE_PACKED)
    assert run(["group", str(path), "--json"]) == 0
    [group] = json.loads(capsys.readouterr().out)["groups"]
    rack = {"topology": {"name": "grove-topology", "required": "example.com/rack", "preferred": None}}
    assert group["subgroups"] == [
        {"name": "tas-0-sg-0", "parent": None, "min_subgroup": 2} | rack,
        {"name": "tas-0-sg-0-prefill", "parent": "tas-0-sg-0", "min_available": 1},
        {"name": "tas-0-sg-0-decode", "parent": "tas-0-sg-0", "min_available": 1},
    ]
    assert group["topology"] == {"name": "grove-topology", "required": "example.com/block", "preferred": None}


def test_text_output_shows_where_each_sub_group_hangs(tmp_path, capsys):
    path = tmp_path / "lws.yaml"
    path.write_text(SEGMENTED_LWS)
    assert run(["group", str(path)]) == 0
    out = capsys.readouterr().out
    assert "sub-group segment-0: needs 2 of its sub-groups" in out
    assert "sub-group leader (in segment-0): min 1" in out


def test_text_output_shows_a_sub_groups_own_topology_under_it(tmp_path, capsys):
    out = grouped_text(
        tmp_path,
        capsys,
        "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: js}\nspec:\n"
        "  replicatedJobs:\n    - name: w\n      template:\n"
        "        metadata: {annotations: {kai.scheduler/topology: t, kai.scheduler/topology-required-placement: rack}}\n"
        "        spec: {template: {spec: {containers: [{name: c}]}}}\n",
    )
    assert "  sub-group w-replica-0 (in w): min 1\n    topology: required=rack preferred=None\n" in out


def test_text_output_reads_as_a_summary(tmp_path, capsys):
    out = grouped_text(
        tmp_path,
        capsys,
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec: {template: {spec: {containers: [{name: c}]}}}",
    )
    assert "j  (Job)" in out and "gang: 1 of 1 pods" in out


def test_text_output_shows_what_restricts_a_pods_nodes(tmp_path, capsys):
    out = grouped_text(
        tmp_path,
        capsys,
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec: {template: {spec: {containers: [{name: c}],"
        " tolerations: [{key: gpu, operator: Exists, effect: NoSchedule}, {operator: Exists}],"
        " affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms:"
        " [{matchExpressions: [{key: zone, operator: In, values: [a, b]}, {key: spot, operator: DoesNotExist}]},"
        " {matchFields: [{key: metadata.name, operator: In, values: [n1]}]}]}}}}}}",
    )
    assert "    tolerates gpu=*:NoSchedule, *\n" in out
    assert "    requires a node with zone In (a, b) and spot DoesNotExist or metadata.name In (n1)\n" in out


def test_text_output_shows_the_workloads_own_timing(tmp_path, capsys):
    path = tmp_path / "job.yaml"
    notes = "{kai.scheduler/preemption-delay: 5m, kai.scheduler/staleness-grace-period: -1s}"
    path.write_text(
        f"apiVersion: batch/v1\nkind: Job\nmetadata: {{name: j, annotations: {notes}}}\n"
        "spec: {template: {spec: {containers: [{name: c}]}}}"
    )
    assert run(["group", str(path)]) == 0
    out = capsys.readouterr().out
    assert "preemption delay: 300s" in out and "stale-gang grace: -1s (never evicted when stale)" in out


def test_a_bad_manifest_exits_2_naming_file_and_field(tmp_path, capsys):
    path = tmp_path / "bad.yaml"
    path.write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {replicas: -1, template: {spec: {containers: [{name: c}]}}}"
    )
    assert run(["group", str(path), "--json"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and str(path) in captured.err and "spec.replicas" in captured.err


def test_a_missing_file_exits_2(tmp_path, capsys):
    assert run(["group", str(tmp_path / "absent.yaml")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_invalid_yaml_exits_2(tmp_path, capsys):
    path = tmp_path / "broken.yaml"
    path.write_text("kind: [unclosed")
    assert run(["group", str(path)]) == 2
    assert "not valid YAML" in capsys.readouterr().err


def deep_yaml(levels: int) -> str:
    return (
        "apiVersion: example.com/v1\nkind: Thing\nmetadata: {name: t}\nspec:\n"
        + "".join("  " * i + "x:\n" for i in range(1, levels))
        + "  " * levels
        + "y: 1\n"
    )


def test_a_thousand_levels_deep_yaml_file_exits_2_naming_the_file_and_field(tmp_path, capsys):
    path = tmp_path / "deep.yaml"
    path.write_text(deep_yaml(1000))
    assert run(["group", str(path), "--json"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and str(path) in captured.err and "spec.x.x" in captured.err
    assert "nested more than" in captured.err


def test_a_thousand_levels_deep_json_file_exits_2_naming_the_file(tmp_path, capsys):
    path = tmp_path / "deep.json"
    path.write_text('{"apiVersion": "v1", "kind": "Pod", "spec": ' + '{"x": ' * 1000 + "1" + "}" * 1001)
    assert run(["group", str(path)]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and "nested more than" in err


def test_absurd_replicas_exit_2_naming_the_file_and_field(tmp_path, capsys):
    path = tmp_path / "huge.yaml"
    path.write_text(
        "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: p}\nspec:\n  pytorchReplicaSpecs:\n"
        "    Worker: {replicas: 1000000000, template: {spec: {containers: [{name: c}]}}}\n"
    )
    assert run(["group", str(path), "--json"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and str(path) in captured.err
    assert "spec.pytorchReplicaSpecs.Worker.replicas: 1000000000 pods is more than" in captured.err


def test_json_of_a_jobset_shows_its_root_and_replicated_job_minimums(capsys):
    manifest_docs("jobset/jobset__paralleljobs.yaml")  # skips when shared/ is absent
    assert run(["group", str(MANIFESTS / "jobset/jobset__paralleljobs.yaml"), "--json"]) == 0
    [group] = json.loads(capsys.readouterr().out)["groups"]
    assert (group["name"], group["kind"], group["min_subgroup"], group["pods_total"]) == (
        "paralleljobs",
        "JobSet",
        2,
        5,
    )
    assert group["subgroups"] == [
        {"name": "workers", "parent": None, "min_subgroup": 1},
        {"name": "workers-replica-0", "parent": "workers", "min_available": 4},
        {"name": "driver", "parent": None, "min_subgroup": 1},
        {"name": "driver-replica-0", "parent": "driver", "min_available": 1},
    ]


def test_json_shows_the_gpus_a_pytorchjob_claims_through_its_template(tmp_path, capsys):
    path = tmp_path / "claims.yaml"
    path.write_text(TWO_GPU_CLAIMS + "---" + two_pytorch_workers_claiming())
    assert run(["group", str(path), "--json"]) == 0
    [group] = json.loads(capsys.readouterr().out)["groups"]
    assert group["pods"] == [{"role": "worker", "count": 2, "resources": {"gpu": 2, "cpu": 0, "memory": 0}}]

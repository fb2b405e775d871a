"""Hostile sizes: deep nesting, alias bombs and absurd counts are refused naming the field.

The bounds are ``muster.grouping.limits``; each test builds input just past
one of them (or far past it) and expects a ``ManifestError`` whose path names
where the problem is, never a ``RecursionError`` or a long wait.
"""

from __future__ import annotations

import pytest
import yaml
from muster.bounds import MAX_UID
from muster.grouping.errors import ManifestError
from muster.grouping.group import group_manifests
from muster.grouping.limits import MAX_DEPTH, MAX_PODS
from muster.grouping.nesting import check_depth, load_yaml_documents

from .support import group_yaml, only, total_pods

POD = {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}
POD_YAML = "{spec: {containers: [{name: c}]}}"


def deep(levels: int) -> dict:
    """A mapping nested ``levels`` deep: {x: {x: ... {}}}."""
    node: dict = {}
    for _ in range(levels - 1):
        node = {"x": node}
    return node


def deep_manifest(levels: int) -> dict:
    return {"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "t"}, "spec": deep(levels)}


def error_of(docs: list[dict]) -> ManifestError:
    with pytest.raises(ManifestError) as caught:
        group_manifests(docs)
    return caught.value


# -- nesting ------------------------------------------------------------------------


def test_a_thousand_levels_deep_manifest_is_refused_naming_the_first_field_too_deep():
    err = error_of([deep_manifest(1000)])
    assert err.path == "spec" + ".x" * (MAX_DEPTH - 1)
    assert f"nested more than {MAX_DEPTH} levels deep" in err.message


def test_a_manifest_at_the_depth_bound_is_read():
    check_depth(deep(MAX_DEPTH))
    with pytest.raises(ManifestError):
        check_depth(deep(MAX_DEPTH + 1))


def test_deep_lists_are_refused_with_their_indices():
    value: list = []
    for _ in range(500):
        value = [value]
    with pytest.raises(ManifestError) as caught:
        check_depth({"a": value})
    assert caught.value.path == "a" + "[0]" * (MAX_DEPTH - 1)


def test_a_deep_document_of_a_submission_is_named_before_any_is_grouped():
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, **POD}
    err = error_of([pod, deep_manifest(300)])
    assert err.document == 1 and err.path.startswith("spec.x")


def test_thousand_levels_of_block_yaml_are_refused_before_they_are_built():
    text = "spec:\n" + "".join("  " * i + "x:\n" for i in range(1, 1000)) + "  " * 1000 + "y: 1\n"
    with pytest.raises(ManifestError) as caught:
        load_yaml_documents(text)
    assert caught.value.path == "spec" + ".x" * (MAX_DEPTH - 1)


def test_thousand_levels_of_json_are_refused_before_they_are_built():
    text = '{"kind": "Thing", "spec": ' + '{"x": ' * 1000 + "1" + "}" * 1001
    with pytest.raises(ManifestError, match="nested more than"):
        load_yaml_documents(text)


def test_deeply_nested_flow_lists_are_refused_with_their_indices():
    with pytest.raises(ManifestError) as caught:
        load_yaml_documents("a: " + "[" * 300 + "]" * 300)
    assert caught.value.path == "a" + "[0]" * (MAX_DEPTH - 1)


def test_a_deep_second_document_is_named_by_its_index():
    text = "kind: A\n---\nkind: B\nspec: " + "[" * 200 + "]" * 200 + "\n"
    with pytest.raises(ManifestError) as caught:
        load_yaml_documents(text)
    assert caught.value.document == 1


def test_yaml_within_the_bounds_loads_as_safe_load_all_does():
    text = "a: &x {b: [1, 2]}\nc: *x\n---\n---\n- 3\n"
    assert load_yaml_documents(text) == [d for d in yaml.safe_load_all(text) if d is not None]


def test_an_alias_bomb_is_refused_without_being_expanded():
    lines = ['a0: &a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 10)]
    with pytest.raises(ManifestError, match="aliases are expanded") as caught:
        load_yaml_documents("\n".join(lines))
    assert caught.value.path.startswith("a")


def test_argo_templates_calling_templates_too_deep_are_refused():
    templates = [{"name": f"t{i}", "steps": [[{"name": "s", "template": f"t{i + 1}"}]]} for i in range(150)]
    templates.append({"name": "t150", "container": {"image": "busybox"}})
    workflow = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Workflow",
        "metadata": {"name": "w"},
        "spec": {"entrypoint": "t0", "templates": templates},
    }
    err = error_of([workflow])
    assert err.path == f"spec.templates[{MAX_DEPTH}]" and "templates call templates" in err.message


def test_workflows_creating_workflows_too_deep_are_refused():
    inner: dict = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, **POD}
    for level in range(6):
        inner = {
            "apiVersion": "argoproj.io/v1alpha1",
            "kind": "Workflow",
            "metadata": {"name": f"w{level}"},
            "spec": {
                "entrypoint": "make",
                "templates": [
                    {"name": "make", "resource": {"action": "create", "manifest": yaml.safe_dump(inner)}}
                ],
            },
        }
    err = error_of([inner])
    assert "objects create objects" in err.message
    assert err.path.startswith("spec.templates[0].resource.manifest.spec.templates[0].resource.manifest")


# -- counts -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "manifest, field",
    [
        (
            f"apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: d}}\n"
            f"spec: {{replicas: 1000000000, template: {POD_YAML}}}",
            "spec.replicas",
        ),
        (
            f"apiVersion: batch/v1\nkind: Job\nmetadata: {{name: j}}\n"
            f"spec: {{parallelism: 1000000000, template: {POD_YAML}}}",
            "spec.parallelism",
        ),
        (
            f"apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {{name: p}}\n"
            f"spec: {{pytorchReplicaSpecs: {{Worker: {{replicas: 1000000000, template: {POD_YAML}}}}}}}",
            "spec.pytorchReplicaSpecs.Worker.replicas",
        ),
        (
            "apiVersion: sparkoperator.k8s.io/v1beta2\nkind: SparkApplication\nmetadata: {name: s}\n"
            "spec: {driver: {}, executor: {instances: 1000000000}}",
            "spec.executor.instances",
        ),
        (
            f"apiVersion: example.com/v1\nkind: Thing\nmetadata: {{name: t}}\n"
            f"spec: {{workers: {{replicas: 1000000000, template: {POD_YAML}}}}}",
            "spec.workers.replicas",
        ),
    ],
    ids=["deployment", "job", "pytorchjob", "spark", "unknown kind"],
)
def test_a_billion_replicas_are_refused_naming_the_field(manifest, field):
    with pytest.raises(ManifestError) as caught:
        group_yaml(manifest)
    assert caught.value.path == field
    assert f"more than the {MAX_PODS} a workload may have" in caught.value.message


@pytest.mark.parametrize(
    "manifest, field",
    [
        (
            f"apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {{name: p}}\nspec:\n"
            f"  pytorchReplicaSpecs:\n"
            f"    Master: {{replicas: 60000, template: {POD_YAML}}}\n"
            f"    Worker: {{replicas: 60000, template: {POD_YAML}}}\n",
            "spec.pytorchReplicaSpecs",
        ),
        (
            f"apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {{name: js}}\nspec:\n"
            f"  replicatedJobs:\n"
            f"    - {{name: w, replicas: 1000, template: {{spec: {{parallelism: 1000, template: {POD_YAML}}}}}}}\n",
            "spec.replicatedJobs[0]",
        ),
        (
            f"apiVersion: leaderworkerset.x-k8s.io/v1\nkind: LeaderWorkerSet\nmetadata: {{name: l}}\n"
            f"spec: {{replicas: 1000, leaderWorkerTemplate: {{size: 1000, workerTemplate: {POD_YAML}}}}}",
            "spec.replicas",
        ),
        (
            f"apiVersion: ray.io/v1\nkind: RayCluster\nmetadata: {{name: r}}\nspec:\n"
            f"  headGroupSpec: {{template: {POD_YAML}}}\n"
            f"  workerGroupSpecs: [{{replicas: 1000, numOfHosts: 1000, template: {POD_YAML}}}]\n",
            "spec.workerGroupSpecs[0]",
        ),
        (
            f"apiVersion: ray.io/v1\nkind: RayCluster\nmetadata: {{name: r}}\nspec:\n"
            f"  headGroupSpec: {{template: {POD_YAML}}}\n"
            f"  workerGroupSpecs:\n"
            f"    - {{replicas: 60000, template: {POD_YAML}}}\n"
            f"    - {{replicas: 60000, template: {POD_YAML}}}\n",
            "spec",
        ),
        (
            "apiVersion: grove.io/v1alpha1\nkind: PodCliqueSet\nmetadata: {name: g}\nspec:\n"
            "  replicas: 1000\n"
            "  template: {cliques: [{name: c, spec: {replicas: 1000, podSpec: {containers: [{name: c}]}}}]}\n",
            "spec.replicas",
        ),
        (
            f"apiVersion: example.com/v1\nkind: Thing\nmetadata: {{name: t}}\n"
            f"spec: {{replicas: 1000, shards: {{replicas: 1000, template: {POD_YAML}}}}}",
            "spec.shards",
        ),
    ],
    ids=[
        "sum of roles",
        "jobset product",
        "lws product",
        "ray hosts",
        "ray sum",
        "grove product",
        "nested counts",
    ],
)
def test_counts_that_multiply_or_add_up_past_the_bound_are_refused_naming_where(manifest, field):
    with pytest.raises(ManifestError) as caught:
        group_yaml(manifest)
    assert caught.value.path == field
    assert f"more than the {MAX_PODS} a workload may have" in caught.value.message


def test_documents_that_add_up_past_the_bound_are_refused_naming_the_last():
    def sts(name: str) -> str:
        return (
            f"apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {{name: {name}}}\n"
            f"spec: {{replicas: 60000, template: {POD_YAML}}}"
        )

    with pytest.raises(ManifestError) as caught:
        group_yaml(sts("a") + "\n---\n" + sts("b"))
    assert caught.value.document == 1 and "120000 pods" in caught.value.message


def test_an_argo_loop_of_a_billion_steps_is_refused_naming_the_step():
    text = """
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: w}
spec:
  entrypoint: main
  templates:
    - name: main
      steps: [[{name: fan, template: work, withSequence: {count: "1000000000"}}]]
    - name: work
      container: {image: busybox}
"""
    with pytest.raises(ManifestError) as caught:
        group_yaml(text)
    assert caught.value.path == "spec.templates[0].steps[0][0]"
    assert f"more than {MAX_PODS} steps" in caught.value.message


def test_nested_argo_loops_without_pods_are_refused_too():
    text = """
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: w}
spec:
  entrypoint: outer
  templates:
    - name: outer
      steps: [[{name: a, template: inner, withSequence: {count: "100000"}}]]
    - name: inner
      steps: [[{name: b, template: idle, withSequence: {count: "100000"}}]]
    - name: idle
      suspend: {}
"""
    with pytest.raises(ManifestError, match="steps"):
        group_yaml(text)


def test_a_workload_of_exactly_the_bound_is_grouped():
    group = only(
        group_yaml(
            f"apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {{name: s}}\n"
            f"spec: {{replicas: {MAX_PODS}, template: {POD_YAML}}}"
        )
    )
    assert total_pods(group) == MAX_PODS


def test_a_job_may_run_more_completions_than_the_pod_bound():
    groups = group_yaml(
        f"apiVersion: batch/v1\nkind: Job\nmetadata: {{name: j}}\n"
        f"spec: {{parallelism: 2, completions: 1000000000, template: {POD_YAML}}}"
    )
    assert [(g.name, sum(p.count for p in g.pods)) for g in groups] == [("j", 2)]


@pytest.mark.parametrize(
    ("resources", "field"),
    [
        ({"gpu": 10**6}, "spec.pods[0].resources.gpu"),
        ({"gpu": 1, "cpu": 10**12}, "spec.pods[0].resources.cpu"),
    ],
)
def test_a_muster_job_past_the_bus_bounds_is_refused_naming_the_field(resources, field):
    # Grouping leaves the bounds of a plugin's finished groups to the plugin (job_to_podgroup).
    job = {
        "apiVersion": "muster.dev/v1",
        "kind": "Job",
        "metadata": {"name": "big"},
        "spec": {"queue": "default-queue", "pods": [{"count": 1, "resources": resources}]},
    }
    with pytest.raises(ManifestError) as info:
        group_manifests([job])
    assert info.value.path == field and "above the limit" in info.value.message


def test_a_submission_uid_past_its_bound_is_refused_for_a_muster_job_too():
    # Grouping sets the uid on a plugin's finished group, so it bounds that field itself.
    job = {
        "apiVersion": "muster.dev/v1",
        "kind": "Job",
        "metadata": {"name": "j"},
        "spec": {"queue": "default-queue", "pods": [{"count": 1, "resources": {"gpu": 1}}]},
    }
    assert group_manifests([job], uid="u" * MAX_UID)
    with pytest.raises(ManifestError, match="workload_uid"):
        group_manifests([job], uid="u" * (MAX_UID + 1))

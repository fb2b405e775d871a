"""A Grove clique's own ``labels`` and ``annotations`` are its pods' (Grove copies them onto the PodClique
and its pods), read as any pod template's metadata is; under Grove's own labels, which win (Grove's
podclique and pod ``getLabels``). Grove's per-pod labels are refused in a pod affinity term."""

from __future__ import annotations

import pytest
from muster.grouping.errors import ManifestError

from .support import group_yaml, hosts, only, simulated

PCS = """
apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata: {{name: g}}
spec:
  template:
    cliques:
      - name: router
        {router}
        spec: {{replicas: 1, podSpec: {{containers: [{{name: c}}]}}}}
      - name: worker
        spec:
          replicas: 2
          podSpec:
            containers: [{{name: c}}]
            {worker_spec}
    podCliqueScalingGroups:
      - {{name: sg, cliqueNames: [worker], replicas: 2, minAvailable: 1}}
"""


def grouped(router: str = "", worker_spec: str = ""):
    return group_yaml(PCS.format(router=router, worker_spec=worker_spec))


def base_gang(router: str = ""):
    return next(g for g in grouped(router) if g.name == "g-0")


def test_a_cliques_labels_are_on_its_pods():
    router = base_gang("labels: {app: router}").pods[0]
    assert router.labels["app"] == "router"


def test_a_cliques_gpu_fraction_annotation_shares_one_gpu():
    router = base_gang('annotations: {gpu-fraction: "0.5"}').pods[0]
    assert router.resources.gpu == 0.5


def test_a_bad_annotation_on_a_clique_is_refused_naming_the_cliques_annotation():
    with pytest.raises(ManifestError) as err:
        grouped('annotations: {gpu-fraction: "2"}')
    assert err.value.path == "spec.template.cliques[0].annotations.gpu-fraction"


def test_a_cliques_queue_label_names_the_queue_as_a_pods_label_does():
    # KAI's grove grouper runs the default grouper with the PodGang as owner: the pod's label follows it.
    assert base_gang("labels: {kai.scheduler/queue: team}").queue == "team"


def test_a_cliques_preemption_delay_annotation_is_the_groups():
    assert base_gang("annotations: {kai.scheduler/preemption-delay: 90s}").preemption_delay == 90


@pytest.mark.parametrize(
    "key",
    [
        "grove.io/topology-name",
        "kai.scheduler/topology",
        "kai.scheduler/topology-required-placement",
        "kai.scheduler/topology-preferred-placement",
    ],
)
def test_a_topology_annotation_on_a_clique_is_refused_by_name(key):
    with pytest.raises(ManifestError) as err:
        grouped(f"annotations: {{{key}: rack}}")
    assert err.value.path == f"spec.template.cliques[0].annotations.{key}"
    assert "topologyConstraint" in err.value.message


def test_a_standalone_cliques_pods_carry_groves_labels():
    router = base_gang().pods[0]
    assert {k: v for k, v in router.labels.items() if k.startswith(("grove.io/", "app.kubernetes.io/"))} == {
        "app.kubernetes.io/managed-by": "grove-operator",
        "app.kubernetes.io/part-of": "g",
        "app.kubernetes.io/name": "g-0-router",
        "app.kubernetes.io/component": "pcs-podclique",
        "grove.io/podclique": "g-0-router",
        "grove.io/podgang": "g-0",
        "grove.io/podcliqueset-replica-index": "0",
    }


def test_a_scaling_groups_pods_in_the_base_podgang_carry_their_scaling_replica():
    worker = base_gang().pods[1]
    assert {k: worker.labels.get(k) for k in _SCALING} == {
        "grove.io/podclique": "g-0-sg-0-worker",
        "grove.io/podgang": "g-0",
        "app.kubernetes.io/component": "pcsg-podclique",
        "grove.io/podcliquescalinggroup": "g-0-sg",
        "grove.io/podcliquescalinggroup-replica-index": "0",
        "grove.io/base-podgang": None,
    }


_SCALING = (
    "grove.io/podclique",
    "grove.io/podgang",
    "app.kubernetes.io/component",
    "grove.io/podcliquescalinggroup",
    "grove.io/podcliquescalinggroup-replica-index",
    "grove.io/base-podgang",
)


def test_a_scaled_podgangs_pods_name_it_their_scaling_replica_and_the_base_podgang():
    # The second scaling replica (index 1, above minAvailable 1) is scaled PodGang g-0-sg-0.
    scaled = only([g for g in grouped() if g.name == "g-0-sg-0"]).pods[0]
    assert {k: scaled.labels.get(k) for k in _SCALING} == {
        "grove.io/podclique": "g-0-sg-1-worker",
        "grove.io/podgang": "g-0-sg-0",
        "app.kubernetes.io/component": "pcsg-podclique",
        "grove.io/podcliquescalinggroup": "g-0-sg",
        "grove.io/podcliquescalinggroup-replica-index": "1",
        "grove.io/base-podgang": "g-0",
    }


def test_groves_labels_win_over_a_cliques_own_of_the_same_key():
    router = base_gang("labels: {grove.io/podgang: mine, app: router}").pods[0]
    assert (router.labels["grove.io/podgang"], router.labels["app"]) == ("g-0", "router")


@pytest.mark.parametrize("key", ["grove.io/podclique-pod-index", "grove.io/pod-template-hash"])
def test_a_pod_affinity_term_selecting_a_per_pod_grove_label_is_refused(key):
    term = f"{{labelSelector: {{matchLabels: {{{key}: '0'}}}}, topologyKey: kubernetes.io/hostname}}"
    with pytest.raises(ManifestError) as err:
        grouped(
            worker_spec=f"affinity: {{podAntiAffinity: {{requiredDuringSchedulingIgnoredDuringExecution: [{term}]}}}}"
        )
    assert err.value.path.endswith(f"labelSelector.matchLabels.{key}")


def test_a_cliques_pods_anti_affine_to_their_podclique_get_one_node_each():
    text = """
apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata: {name: g}
spec:
  template:
    cliques:
      - name: worker
        spec:
          replicas: 3
          podSpec:
            containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]
            affinity:
              podAntiAffinity:
                requiredDuringSchedulingIgnoredDuringExecution:
                  - labelSelector: {matchLabels: {grove.io/podclique: g-0-worker}}
                    topologyKey: kubernetes.io/hostname
"""
    simulation = simulated(
        hosts("spread", "default-queue"),
        group_yaml(text),
    )
    nodes = sorted(pod.node for pod in simulation.fleet.bound() if pod.job == "g-0")
    assert nodes == ["node-0", "node-1", "node-2"]

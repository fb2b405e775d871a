"""A Grove PodCliqueSet's pack constraints placed (podgrouper-rules.md §4.14, kai-semantics.md §14.5): a
submission goes through the podgrouper into a simulated cluster (a scenario file cannot carry a
PodCliqueSet). Shaped after Grove's tas-pcsg-pclq example: a scaling group packed into one rack."""

from __future__ import annotations

from .support import NETWORK_TOPOLOGY, group_yaml, simulated

NODES = [("node-1", "r1", 1), ("node-2", "r2", 1), ("node-3", "r3", 2)]
"""Three racks; only r3 holds both cliques, and r1 and r2 are the fullest fits for one pod each."""


def packed(group_constraint: str) -> str:
    """A PodCliqueSet ``llm`` whose scaling group ``sg`` (cliques prefill and decode, one 1-GPU pod
    each) states ``group_constraint`` (a flow-mapping entry, or '')."""
    return f"""
apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata: {{name: llm, annotations: {{grove.io/topology-name: network}}}}
spec:
  template:
    podCliqueScalingGroups:
      - {{name: sg, cliqueNames: [prefill, decode], replicas: 1, minAvailable: 1 {group_constraint}}}
    cliques:
      - {{name: prefill, spec: {{replicas: 1, podSpec: {{containers: [{{name: c, resources: {{limits: {{nvidia.com/gpu: 1}}}}}}]}}}}}}
      - {{name: decode, spec: {{replicas: 1, podSpec: {{containers: [{{name: c, resources: {{limits: {{nvidia.com/gpu: 1}}}}}}]}}}}}}
"""


def racks_used(group_constraint: str) -> set[str]:
    scenario = {
        "name": "grove-pack",
        "nodes": [
            {
                "name": name,
                "labels": {"accelerator.nvidia.com/rack": rack, "kubernetes.io/hostname": name},
                "resources": {"gpu": gpus},
            }
            for name, rack, gpus in NODES
        ],
        "queues": [{"name": "team", "resources": {"gpu": {"quota": 4}}}],
        "jobs": [],
    }
    groups = group_yaml(NETWORK_TOPOLOGY + "---" + packed(group_constraint), queue_override="team")
    simulation = simulated(scenario, groups)
    rack_of = {name: rack for name, rack, _ in NODES}
    bound = [pod for pod in simulation.fleet.bound() if pod.job == "llm-0"]
    assert len(bound) == 2
    return {rack_of[pod.node] for pod in bound}


def test_a_scaling_groups_parent_constraint_keeps_its_two_cliques_in_one_rack():
    # Unpacked, the fullest-fit rule puts them in r1 and r2; the parent's constraint moves both to r3.
    assert racks_used("") == {"r1", "r2"}
    assert racks_used(", topologyConstraint: {pack: {required: rack}}") == {"r3"}

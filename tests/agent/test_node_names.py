"""An agent names its node as Kubernetes names nodes, and says so before it starts, naming the flag."""

from __future__ import annotations

import pytest
from muster.agent.machine import Gpus, node_spec


def spec(name: str = "gpu-0", pool: str = "default", labels: dict | None = None):
    return node_spec(name, pool=pool, labels=labels or {}, gpus=Gpus(1, 2**30), cpu=1000, memory=2**30)


@pytest.mark.parametrize("name", ["My_Laptop", "gpu 0", "gpu/0", "gpu\n0", "x" * 254])
def test_a_node_name_readers_would_refuse_is_refused_naming_node(name):
    with pytest.raises(ValueError, match="^--node: .* is not a valid node name"):
        spec(name)


def test_a_pool_readers_would_refuse_is_refused_naming_pool():
    with pytest.raises(ValueError, match="^--pool: "):
        spec(pool="a b")


@pytest.mark.parametrize("labels", [{"bad key": "a"}, {"zone": "us east"}, {"a/b/c": "x"}])
def test_a_label_kubernetes_would_refuse_is_refused_naming_label(labels):
    with pytest.raises(ValueError, match="^--label: "):
        spec(labels=labels)


def test_a_node_kubernetes_would_name_so_registers():
    node = spec("gpu-0.rack-1", pool="A100_east", labels={"topology.kubernetes.io/zone": "us-east-1a"})
    assert (node.name, node.pool) == ("gpu-0.rack-1", "A100_east")


def test_an_agents_node_is_labelled_with_its_hostname_as_the_kubelet_labels_nodes():
    # per-node pod anti-affinity (topologyKey kubernetes.io/hostname) needs the key on every node
    assert spec("gpu-0").labels["kubernetes.io/hostname"] == "gpu-0"
    assert spec("gpu-0", labels={"kubernetes.io/hostname": "box"}).labels["kubernetes.io/hostname"] == "box"

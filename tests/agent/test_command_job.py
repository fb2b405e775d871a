"""The Command kind: one gang of identical processes, each carrying what the agent runs."""

from __future__ import annotations

import pytest
from muster.events import Toleration
from muster.grouping.command_job import manifest
from muster.grouping.errors import ManifestError
from muster.grouping.group import group_manifests


def group(**spec):
    return group_manifests(
        [manifest("train", {"queue": "team", "command": ["python", "train.py"], **spec})], uid="u"
    )


def test_a_command_becomes_one_gang_of_count_pods_carrying_the_command():
    (pg,) = group(count=4, min=2, gpus=1, cpu="2", memory="1Gi", env={"A": "b"}, workdir="/w", grace_period=5)
    assert (pg.name, pg.kind, pg.queue, pg.min_available) == ("train", "Command", "team", 2)
    (pod,) = pg.pods
    assert (pod.count, pod.resources.gpu, pod.resources.cpu, pod.resources.memory) == (4, 1.0, 2000, 2**30)
    assert (pod.command, pod.env, pod.workdir, pod.grace_period) == (
        ["python", "train.py"],
        {"A": "b"},
        "/w",
        5,
    )


def test_a_command_may_tolerate_the_taints_of_an_agent_node():
    (pg,) = group(tolerations=[{"key": "gpu", "operator": "Exists"}])
    assert pg.pods[0].tolerations == [Toleration(key="gpu", operator="Exists")]


def test_the_gang_is_every_process_unless_min_says_otherwise():
    (pg,) = group(count=3)
    assert pg.min_available == 3


@pytest.mark.parametrize(
    ("spec", "path"),
    [
        ({"command": []}, "spec.command"),
        ({"count": 0}, "spec.count"),
        ({"count": 2, "min": 3}, "spec.min"),
        ({"gpus": 1.5}, "spec.gpus"),
        ({"memory": "lots"}, "spec.memory"),
        ({"colour": "red"}, "spec.colour"),
        ({"grace_period": -1}, "spec.grace_period"),
        ({"tolerations": [{"key": "gpu", "effect": "Later"}]}, "spec.tolerations[0].effect"),
        ({"affinity": {"podAffinity": {"x": 1}}}, "spec.affinity.podAffinity.x"),
        (
            {"affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{}]}}},
            "spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight",
        ),
    ],
)
def test_a_bad_field_is_named(spec, path):
    with pytest.raises(ManifestError) as err:
        group(**spec)
    assert err.value.path == path

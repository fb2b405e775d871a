"""Against a running system: ``muster submit`` of a KAI Topology with a workload that names it makes a
job whose constraint the podgrouper service resolved against it, alias and order of levels included
(kai-semantics.md §18); a level the topology lacks is refused at the door, nothing published."""

from __future__ import annotations

import pytest
from muster.events import PodGroupCreated, Topology

from tests.integration.test_cli_door import system  # noqa: F401  (the running services)
from tests.polling import wait_until
from tests.unit.podgrouper.support import NETWORK_TOPOLOGY as TOPOLOGY

pytestmark = [pytest.mark.nats, pytest.mark.postgres]


def workload(level: str) -> str:
    return f"""{TOPOLOGY}
---
apiVersion: batch/v1
kind: Job
metadata:
  name: ranked
  annotations: {{kai.scheduler/topology: network, kai.scheduler/topology-required-placement: {level}}}
spec:
  parallelism: 2
  template:
    spec: {{containers: [{{name: c, resources: {{requests: {{cpu: 100m}}}}}}]}}
"""


async def test_submit_resolves_a_workloads_topology_against_the_topology_it_carries(system):  # noqa: F811
    code, _, err = await system.muster("submit", "-f", system.file("ranked.yaml", workload("rack")))
    assert code == 0, err
    await wait_until(lambda: system.has_job("ranked"), what="the ranked job")
    (group,) = [
        e
        for e in await system.events_on(system.endpoints.subjects.podgroups)
        if isinstance(e, PodGroupCreated)
    ]
    assert group.topology == Topology(
        name="network",
        levels=("accelerator.nvidia.com/rack", "kubernetes.io/hostname"),
        required="accelerator.nvidia.com/rack",
    )


async def test_submit_refuses_a_level_the_topology_does_not_have(system):  # noqa: F811
    code, _, err = await system.muster("submit", "-f", system.file("bad.yaml", workload("zone")))
    assert code != 0
    assert "metadata.annotations.kai.scheduler/topology-required-placement" in err and "'zone'" in err
    assert await system.published() == 0

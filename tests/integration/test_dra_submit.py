"""Against a running system: ``muster submit`` of a DRA ResourceClaimTemplate with a workload whose pods
claim from it makes a job whose pods ask for the claimed GPUs (kai-semantics.md §17); a shared claim is
refused at the door, nothing published."""

from __future__ import annotations

import pytest
from muster.events import PodGroupCreated

from tests.integration.test_cli_door import system  # noqa: F401  (the running services)
from tests.polling import wait_until

pytestmark = [pytest.mark.nats, pytest.mark.postgres]


def workload(claim: str) -> str:
    return f"""
apiVersion: resource.k8s.io/v1beta2
kind: ResourceClaimTemplate
metadata: {{name: two-gpus}}
spec: {{spec: {{devices: {{requests: [{{name: gpu, exactly: {{deviceClassName: gpu.nvidia.com, count: 2}}}}]}}}}}}
---
apiVersion: batch/v1
kind: Job
metadata: {{name: claimed}}
spec:
  parallelism: 2
  template:
    spec:
      resourceClaims: [{{name: gpus, {claim}}}]
      containers: [{{name: c, resources: {{claims: [{{name: gpus}}]}}}}]
"""


async def test_submit_gives_each_pod_the_gpus_its_claim_template_asks_for(system):  # noqa: F811
    text = workload("resourceClaimTemplateName: two-gpus")
    code, _, err = await system.muster("submit", "-f", system.file("claimed.yaml", text))
    assert code == 0, err
    await wait_until(lambda: system.has_job("claimed"), what="the claimed job")
    (group,) = [
        e
        for e in await system.events_on(system.endpoints.subjects.podgroups)
        if isinstance(e, PodGroupCreated)
    ]
    assert [(p.count, p.resources.gpu) for p in group.pods] == [(2, 2)]


async def test_submit_refuses_a_shared_claim_and_publishes_nothing(system):  # noqa: F811
    text = workload("resourceClaimName: shared-gpus")
    code, _, err = await system.muster("submit", "-f", system.file("shared.yaml", text))
    assert code != 0
    assert "resourceClaims[0].resourceClaimName" in err
    assert await system.published() == 0

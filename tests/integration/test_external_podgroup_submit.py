"""Against a running system: ``muster submit`` of a KAI PodGroup with the workload that joins it makes
one job, grouped by the podgrouper service from the PodGroup's spec (podgrouper-rules.md §1.1)."""

from __future__ import annotations

import pytest

from tests.integration.test_cli_door import system  # noqa: F401  (the running services)
from tests.polling import wait_until

pytestmark = [pytest.mark.nats, pytest.mark.postgres]

MANIFEST = """
apiVersion: scheduling.run.ai/v2alpha2
kind: PodGroup
metadata: {name: external-gang}
spec: {queue: default-queue, minMember: 2}
---
apiVersion: batch/v1
kind: Job
metadata: {name: w, annotations: {kai.scheduler/skip-podgrouper: "true"}}
spec:
  parallelism: 2
  template:
    metadata: {annotations: {pod-group-name: external-gang}}
    spec: {containers: [{name: c, resources: {requests: {cpu: 100m}}}]}
"""


async def test_submit_publishes_the_podgroup_and_its_pods_as_one_job(system):  # noqa: F811
    code, out, err = await system.muster("submit", "-f", system.file("external.yaml", MANIFEST))
    assert code == 0, err
    assert "submitted external-gang: 2 pods to queue default-queue (min 2)" in out
    await wait_until(lambda: system.has_job("external-gang"), what="the external PodGroup's job")
    assert not await system.has_job("w")

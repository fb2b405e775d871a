"""The podgrouper service declares a submitted Topology on the topologies subject and groups the next
submission against it; a redelivered submission declares nothing again."""

from __future__ import annotations

import yaml
from muster.bus import Delivery
from muster.bus.memory import MemoryBus
from muster.events import PodGroupCreated, TopologyDeclared, WorkloadSubmitted, decode_envelope

from services.podgrouper.handlers import PodgrouperHandlers

from .support import NETWORK_TOPOLOGY

JOB = """
apiVersion: batch/v1
kind: Job
metadata:
  name: ranked
  annotations: {kai.scheduler/topology: network, kai.scheduler/topology-required-placement: rack}
spec: {template: {spec: {containers: [{name: c}]}}}
"""


def delivery(bus: MemoryBus, seq: int, uid: str, text: str) -> Delivery:
    manifests = [d for d in yaml.safe_load_all(text) if d is not None]
    return Delivery(bus.subjects.workloads, seq, [WorkloadSubmitted(uid=uid, manifests=manifests)])


def published(bus: MemoryBus, subject: str) -> list:
    return [e for m in bus.messages if m.subject == subject for e in decode_envelope(m.data)]


async def test_a_declared_topology_is_named_by_the_next_submission():
    bus = MemoryBus()
    handlers = PodgrouperHandlers(bus, bus.subjects)
    await handlers.handle([delivery(bus, 1, "topology", NETWORK_TOPOLOGY)])
    await handlers.handle([delivery(bus, 2, "job", JOB)])
    [declared] = published(bus, bus.subjects.topologies)
    [group] = published(bus, bus.subjects.podgroups)
    assert isinstance(declared, TopologyDeclared) and declared.name == "network"
    assert isinstance(group, PodGroupCreated) and group.topology.required == "accelerator.nvidia.com/rack"


async def test_a_redelivered_submission_declares_nothing_again():
    bus = MemoryBus()
    handlers = PodgrouperHandlers(bus, bus.subjects)
    await handlers.handle([delivery(bus, 1, "topology", NETWORK_TOPOLOGY)])
    await handlers.handle([delivery(bus, 1, "topology", NETWORK_TOPOLOGY)])
    assert len(published(bus, bus.subjects.topologies)) == 1
    assert handlers.topologies.watermark == 1

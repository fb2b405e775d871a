"""Steps the snapshot and retention e2e tests share: a one-node cluster, jobs on it, the snapshots taken."""

from __future__ import annotations

from muster.bus import NatsBus
from muster.snapshots import ObjectStoreSnapshots

from tests.e2e.conftest import muster, status
from tests.polling import wait_for

SNAPSHOT_ENV = {"MUSTER_SNAPSHOT_EVERY": "5", "MUSTER_SNAPSHOT_MIN_INTERVAL": "0"}

CLUSTER = """\
name: cluster
nodes:
  - {name: n-1, resources: {gpu: 4, cpu: 32, memory: 128Gi}}
queues:
  - name: team
    resources: {gpu: {quota: 4}}
"""


def jobs(tmp_path, names: list[str], gpus: int = 1):
    """A manifest file of one-pod jobs in queue ``team``."""
    docs = [
        "apiVersion: muster.dev/v1\nkind: Job\n"
        f"metadata: {{name: {name}}}\n"
        f"spec: {{queue: team, pods: [{{count: 1, resources: {{gpu: {gpus}}}}}]}}\n"
        for name in names
    ]
    path = tmp_path / f"{names[0]}.yaml"
    path.write_text("---\n".join(docs))
    return path


def running(system, names) -> bool:
    jobs_now = status(system)["jobs"]
    return all(jobs_now.get(n, {}).get("status") == "running" for n in names)


def first_jobs_running(system, tmp_path) -> list[str]:
    """The cluster applied and three one-GPU jobs submitted and running (one GPU is left)."""
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(CLUSTER)
    muster(system, "apply", "-f", str(cluster))
    first = [f"first-{i}" for i in range(3)]
    muster(system, "submit", "-f", str(jobs(tmp_path, first)))
    wait_for(lambda: running(system, first), what="the first jobs running")
    return first


async def snapshots_of(system, fold: str, owner: str = "") -> list[int]:
    """Sequences of ``fold``'s snapshots in ``owner``'s store."""
    bus = await NatsBus.connect(system.endpoints.nats_url, system.endpoints.subjects, service="test")
    try:
        store = await ObjectStoreSnapshots.open(bus.js, system.endpoints.subjects.stream, owner)
        return sorted(m.seq for m in await store.list(fold))
    finally:
        await bus.close()

"""KAI's scheduling.run.ai/v2 Queue manifests, read into QueueSpec in muster's units."""

from __future__ import annotations

import pytest
import yaml
from muster.events import MinRuntime, QueueResource
from muster.queues.kai_queue import QueueManifestError, parse_kai_queue, parse_kai_queues

from .support import manifest_docs

QUEUE = """
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {name: team-a}
spec:
  parentQueue: dept
  priority: 200
  resources:
    gpu: {quota: 4, overQuotaWeight: 2, limit: 8}
    cpu: {quota: 8000, limit: -1, overQuotaWeight: 1}
    memory: {quota: 16000, limit: 32000, overQuotaWeight: 1}
"""


def test_a_kai_queue_keeps_gpus_and_millicores_and_parent_and_priority():
    queue = parse_kai_queue(yaml.safe_load(QUEUE))
    assert (queue.name, queue.parent, queue.priority) == ("team-a", "dept", 200)
    assert queue.resources["gpu"] == QueueResource(quota=4, over_quota_weight=2, limit=8)
    assert queue.resources["cpu"] == QueueResource(quota=8000, over_quota_weight=1, limit=-1)


def test_kai_memory_megabytes_become_bytes():
    assert parse_kai_queue(yaml.safe_load(QUEUE)).resources["memory"] == QueueResource(
        quota=16_000 * 10**6, over_quota_weight=1, limit=32_000 * 10**6
    )


def test_fields_a_resource_omits_take_muster_defaults():
    doc = yaml.safe_load(
        "apiVersion: scheduling.run.ai/v2\nkind: Queue\nmetadata: {name: q}\nspec: {resources: {gpu: {quota: 2}, cpu: {}}}"
    )
    queue = parse_kai_queue(doc)
    assert queue.resources["gpu"] == QueueResource(quota=2, over_quota_weight=1, limit=-1)
    assert queue.resources["cpu"] == QueueResource(quota=-1, over_quota_weight=1, limit=-1)
    assert (queue.parent, queue.priority) == (None, 100)


def test_min_runtime_durations_become_seconds():
    doc = yaml.safe_load(
        "apiVersion: scheduling.run.ai/v2\nkind: Queue\nmetadata: {name: q}\nspec: {preemptMinRuntime: 1h30m, reclaimMinRuntime: 45s}"
    )
    assert parse_kai_queue(doc).min_runtime == MinRuntime(preempt=5400.0, reclaim=45.0)


def test_the_upstream_ray_sample_queues_parse_in_order():
    queues = parse_kai_queues(manifest_docs("raycluster/kuberay__ray-cluster.kai-scheduler.yaml"))
    assert [(q.name, q.parent, q.order) for q in queues] == [
        ("department-1", None, 0),
        ("team-a", "department-1", 1),
    ]
    assert queues[1].resources["memory"].quota == -1


def test_a_non_numeric_quota_names_document_and_field():
    docs = [{"kind": "ConfigMap"}, yaml.safe_load(QUEUE.replace("quota: 8000", "quota: lots"))]
    with pytest.raises(QueueManifestError) as err:
        parse_kai_queues(docs)
    assert err.value.path == "[1].spec.resources.cpu.quota"


def test_a_queue_without_a_name_is_rejected():
    with pytest.raises(QueueManifestError) as err:
        parse_kai_queue({"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {}})
    assert err.value.path == "metadata.name"

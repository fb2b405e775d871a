"""A submission's Topology documents are read once, however many muster jobs it holds."""

from muster.bench.e2e import job
from muster.grouping import model
from muster.grouping.group import group_manifests


def test_a_submission_of_many_jobs_looks_at_each_document_once_for_topologies(monkeypatch):
    looked = []
    real = model.is_topology_manifest

    def counting(doc):
        looked.append(doc)
        return real(doc)

    monkeypatch.setattr(model, "is_topology_manifest", counting)
    docs = [job(i) for i in range(40)]
    events = group_manifests(docs, uid="u-1")
    assert len(events) == 40
    # once per document; reading them again for each job made grouping quadratic in the batch
    assert len(looked) == len(docs)

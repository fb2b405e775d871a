"""The ledger knows which jobs carry pod (anti-)affinity, so a cycle looks at those rules only when some job
has them; a snapshot's restore finds them again, and such a job is never one the batch kernel places."""

from __future__ import annotations

from muster import events as ev
from muster.scheduler.state.ledger import PodLedger

TERM = ev.PodAffinityTerm(label_selector=ev.LabelSelector(), topology_key="zone")


def group(name: str, **pod: object) -> ev.PodGroupCreated:
    return ev.PodGroupCreated(name=name, queue="q", pods=[ev.PodSpec(count=2, **pod)], min_available=2)


def test_a_job_with_pod_anti_affinity_is_known_and_has_no_batch_shape():
    ledger = PodLedger()
    ledger.create(group("plain", labels={"app": "x"}))
    spread = ledger.create(group("spread", pod_anti_affinity=[TERM]))
    assert ledger.pod_affinity_jobs == {"spread"}
    assert spread.shape == -1
    assert ledger.jobs["plain"].shape >= 0


def test_a_restored_ledger_knows_its_pod_affinity_jobs_again():
    ledger = PodLedger()
    ledger.create(group("near", pod_affinity=[TERM]))
    ledger.create(group("plain"))
    assert PodLedger.restore(ledger.image()).pod_affinity_jobs == {"near"}


def test_a_removed_job_is_forgotten():
    ledger = PodLedger()
    ledger.create(group("near", pod_affinity=[TERM]))
    ledger.remove("near")
    assert not ledger.pod_affinity_jobs

from muster import events as ev
from muster.scheduler.state import ClusterState

from .builders import gang_job, gpu_nodes


def _bound(job: str, pod: int = 0) -> list[ev.Event]:
    return [
        ev.BindRequested(job=job, pod=pod, node="node-0", gpus=[pod]),
        ev.PodBound(job=job, pod=pod, node="node-0", gpus=[pod]),
    ]


def test_pending_names_stay_sorted_as_jobs_arrive_run_and_wait_again():
    state = ClusterState()
    for e in gpu_nodes(1, gpus=8):
        state.apply(e)
    for name in ("m", "c", "x", "a"):
        state.apply(gang_job("q", 1, name=name))
    assert state.ledger.sorted_pending() == ["a", "c", "m", "x"]
    for e in [*_bound("c"), gang_job("q", 1, name="b"), ev.PodGroupDeleted(name="x")]:
        state.apply(e)
    assert state.ledger.sorted_pending() == ["a", "b", "m"]
    state.apply(ev.PodEvicted(job="c", pod=0, node="node-0"))  # back to pending
    state.apply(gang_job("q", 1, name="d"))
    assert state.ledger.sorted_pending() == ["a", "b", "c", "d", "m"]
    assert state.ledger.sorted_pending() == sorted(state.ledger.pending_jobs)


def test_jobs_of_the_same_pool_and_pods_share_a_shape_and_gangs_with_spare_pods_have_none():
    state = ClusterState()
    for e in [
        gang_job("q", 2, name="a"),
        gang_job("q", 2, name="b"),
        gang_job("q", 2, name="c", pool="other"),
        gang_job("q", 3, name="elastic", min_available=1),
        gang_job("q", 1, name="memory", gpu=0, gpu_memory=2**30),
    ]:
        state.apply(e)
    jobs = state.jobs
    assert jobs["a"].shape == jobs["b"].shape >= 0
    assert jobs["c"].shape not in (-1, jobs["a"].shape)
    assert jobs["elastic"].shape == -1
    assert jobs["memory"].shape == -1


def test_running_jobs_are_those_with_a_pod_holding_resources_as_pods_bind_leave_and_finish():
    state = ClusterState()
    for e in gpu_nodes(1, gpus=8):
        state.apply(e)
    for name in ("a", "b", "c"):
        state.apply(gang_job("q", 2, name=name))
    assert state.ledger.running_jobs == set()
    for e in [*_bound("a"), ev.BindRequested(job="b", pod=0, node="node-0", gpus=[2])]:
        state.apply(e)
    assert state.ledger.running_jobs == {"a", "b"}  # binding holds the device as bound does
    state.apply(ev.PodEvicted(job="b", pod=0, node="node-0"))
    state.apply(ev.PodCompleted(job="a", pod=0, node="node-0"))
    assert state.ledger.running_jobs == set()
    for e in [*_bound("c", 0), *_bound("c", 1), ev.PodGroupDeleted(name="c")]:
        state.apply(e)
    assert state.ledger.running_jobs == set()
    assert state.ledger.running_jobs == {name for name, job in state.jobs.items() if job.n_running}

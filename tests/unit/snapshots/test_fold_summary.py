"""What `muster snapshots` shows of each fold, and which folds it will not forget without --force."""

from __future__ import annotations

from muster import snapshots as sn


def meta(fold: str, seq: int, size: int = 100) -> sn.SnapshotMeta:
    return sn.SnapshotMeta(fold=fold, seq=seq, digest="d", sha256="s", size=size, format=1, taken_at=seq)


def test_snapshots_are_summed_up_per_fold_the_one_holding_retention_furthest_back_first():
    owned = [
        ("agent", meta("agent-gpu-7", 500)),
        ("agent", meta("agent-gpu-7", 900, size=50)),
        ("", meta("allocator-default", 4000)),
        ("binder", meta("binder", 3000)),
    ]
    folds = sn.by_fold(owned)
    assert [f.fold for f in folds] == ["agent-gpu-7", "binder", "allocator-default"]
    assert folds[0] == sn.FoldSnapshots(
        fold="agent-gpu-7", owner="agent", count=2, newest_seq=900, newest_taken_at=900, size=150
    )


def test_services_folds_restart_from_their_snapshots_and_agents_folds_are_not_services():
    assert all(sn.is_service_fold(f) for f in ("allocator-default", "allocator-a100", "binder", "nodewatch"))
    assert sn.is_service_fold("queue-controller")
    assert not sn.is_service_fold("agent-gpu-7")

"""The openb protocol: ordering, inflation, arrival accounting, loading, and the CLI smoke run."""

from __future__ import annotations

import json

import numpy as np
import pytest
from muster.bench import openb as ob
from muster.cli import bench_cmd

NODES_CSV = "sn,cpu_milli,memory_mib,gpu,model\nn-b,32000,65536,2,T4\nn-a,64000,131072,4,V100\n"
PODS_CSV = (
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n"
    "p-03,4000,1024,1,1000,\n"
    "p-01,2000,1024,1,500,T4\n"
    "p-02,1000,512,0,0,\n"
    "p-04,8000,2048,2,1000,V100|A100\n"
    "p-05,2000,1024,1,250,\n"
)


@pytest.fixture
def tiny(tmp_path):
    nodes, pods = tmp_path / "nodes.csv", tmp_path / "pods.csv"
    nodes.write_text(NODES_CSV)
    pods.write_text(PODS_CSV)
    cluster = ob.load_cluster(nodes)
    return nodes, pods, cluster, ob.load_trace(pods, cluster)


def test_nodes_and_pods_are_sorted_by_name(tiny):
    _, _, cluster, trace = tiny
    assert cluster.names == ("n-a", "n-b")
    assert trace.names == ("p-01", "p-02", "p-03", "p-04", "p-05")


def test_gpu_spec_becomes_a_mask_of_the_clusters_models(tiny):
    _, _, cluster, trace = tiny
    assert cluster.models == ("T4", "V100")
    assert trace.mask.tolist() == [0b01, -1, -1, 0b10, -1]


def test_top_up_stops_before_the_request_exceeds_130_percent(tiny):
    _, _, cluster, trace = tiny
    for seed in range(20):
        order = ob.arrival_order(trace, cluster.gpu_milli, np.random.default_rng(seed))
        before = np.concatenate([[0], np.cumsum(trace.total_gpu[order])[:-1]])
        copies = slice(len(trace), None)
        # each copy was admitted only while the request plus its per-GPU share stayed within 130 %
        assert (before[copies] + trace.gpu_milli[order][copies] <= 1.3 * cluster.gpu_milli).all()
        assert sorted(order[: len(trace)].tolist()) == list(range(len(trace)))


def test_top_up_compares_the_next_copys_per_gpu_share(tiny):
    _, _, cluster, trace = tiny
    order = ob.arrival_order(trace, cluster.gpu_milli, np.random.default_rng(3))
    rng = np.random.default_rng(3)
    rng.permutation(len(trace))
    total = int(trace.total_gpu.sum())
    for j in order[len(trace) :]:
        assert int(rng.integers(len(trace))) == j
        total += int(trace.total_gpu[j])
    stop = int(rng.integers(len(trace)))
    assert total + trace.gpu_milli[stop] > 1.3 * cluster.gpu_milli


def test_a_trace_above_130_percent_is_thinned_at_random(tiny):
    _, _, cluster, trace = tiny
    small = 1000  # one GPU of capacity: the trace's 5 GPU-milli-thousands are far above 130 %
    order = ob.arrival_order(trace, small, np.random.default_rng(1))
    assert trace.total_gpu[order].sum() <= 1.3 * small
    assert len(set(order.tolist())) == len(order)


def test_shuffling_is_seeded(tiny):
    _, _, cluster, trace = tiny
    a = ob.arrival_order(trace, cluster.gpu_milli, np.random.default_rng(42))
    b = ob.arrival_order(trace, cluster.gpu_milli, np.random.default_rng(42))
    orders = {tuple(ob.arrival_order(trace, cluster.gpu_milli, np.random.default_rng(s))) for s in range(10)}
    assert a.tolist() == b.tolist()
    assert len(orders) > 1


def test_arrived_percent_counts_failed_pods():
    requests = np.array([500, 500, 0])
    placed = np.array([True, False, True])
    alloc = ob.curve(requests, placed, 1000)
    assert alloc[50] == pytest.approx(50.0)
    assert alloc[100] == pytest.approx(50.0)  # the failed pod still arrived


def test_a_level_no_sample_rounds_to_carries_the_value_from_below():
    alloc = ob.filled(np.array([0.0, np.nan, 2.0, np.nan, np.nan]))
    assert alloc.tolist() == [0.0, 0.0, 2.0, 2.0, 2.0]


def test_samples_at_one_arrived_percent_are_averaged_and_rounded_half_to_even():
    requests = np.array([25, 0, 10])  # 2.5 % rounds to 2, 3.5 % to 4
    placed = np.array([True, False, False])
    alloc = ob.curve(requests, placed, 1000)
    assert alloc[2] == pytest.approx(2.5)
    assert alloc[4] == pytest.approx(2.5)
    assert np.isnan(alloc[3])


def test_typical_shapes_cover_95_percent_by_count_and_weights_sum_to_one(tiny):
    _, _, _, trace = tiny
    shapes = ob.typical_shapes(trace, coverage=0.95)
    assert shapes.cpu.shape[0] == 5  # five distinct shapes, one pod each: all needed
    assert shapes.weight.sum() == pytest.approx(1.0)
    few = ob.typical_shapes(trace, coverage=0.5)
    assert few.cpu.shape[0] == 3


def test_narrow_in_adds_shapes_that_only_a_small_part_of_the_cluster_can_host(tiny):
    _, _, cluster, trace = tiny
    # coverage 0.2 keeps one shape (the CPU pod p-02); only p-01 (T4 only) runs on
    # nodes with under half of the 6 GPUs (n-b, 2 GPUs); p-04 needs n-a, 4 GPUs
    plain = ob.typical_shapes(trace, coverage=0.2)
    assert plain.cpu.tolist() == [1000]
    wide = ob.typical_shapes(trace, coverage=0.2, narrow_in=cluster, narrow_share=0.5)
    assert list(zip(wide.cpu.tolist(), wide.gpu_milli.tolist(), strict=True)) == [(1000, 0), (2000, 500)]
    assert wide.weight.tolist() == [0.5, 0.5]


def test_only_fgd_pack_is_given_the_narrow_shapes(tmp_path):
    nodes, pods = tmp_path / "nodes.csv", tmp_path / "pods.csv"
    # the T4 node holds 2 of 22 GPUs, under the 10 % that makes a shape narrow
    nodes.write_text("sn,cpu_milli,memory_mib,gpu,model\nbig,64000,1,20,V100\nsmall,32000,1,2,T4\n")
    rows = [f"c-{i:02d},1000,1,0,0," for i in range(20)] + ["t4,2000,1,1,500,T4"]
    pods.write_text("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n" + "\n".join(rows) + "\n")
    cluster = ob.load_cluster(nodes)
    trace = ob.load_trace(pods, cluster)
    assert ob.policy_shapes("fgd", trace, cluster).cpu.tolist() == [1000]  # 20 of 21 pods: 95 % covered
    assert ob.policy_shapes("fgd-pack", trace, cluster).cpu.tolist() == [1000, 2000]


def test_a_bad_request_names_file_row_and_column(tmp_path, tiny):
    _, _, cluster, _ = tiny
    bad = tmp_path / "bad.csv"
    bad.write_text("name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1000,10,2,500\n")
    with pytest.raises(ValueError, match=r"bad.csv: row 2, column gpu_milli"):
        ob.load_trace(bad, cluster)
    bad.write_text("name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,lots,10,1,500\n")
    with pytest.raises(ValueError, match=r"row 2, column cpu_milli: not an integer"):
        ob.load_trace(bad, cluster)


def test_a_missing_column_is_named(tmp_path):
    bad = tmp_path / "nodes.csv"
    bad.write_text("sn,cpu_milli,gpu,model\nn,1000,1,T4\n")
    with pytest.raises(ValueError, match="missing column.*memory_mib"):
        ob.load_cluster(bad)


def test_run_openb_reports_the_cli_shape_with_mean_and_sd_over_seeds(tiny):
    nodes, pods, _, _ = tiny
    doc = ob.run_openb(nodes, pods, 3, "bestfit")
    assert doc["trace"] == "pods.csv" and doc["policy"] == "bestfit" and doc["seeds"] == 3
    per_seed = doc["unallocated_gpu_pct_per_seed"]
    assert doc["unallocated_gpu_pct_at_arrived_100"]["mean"] == pytest.approx(np.mean(per_seed), abs=1e-3)
    assert doc["unallocated_gpu_pct_at_arrived_100"]["sd"] == pytest.approx(
        np.std(per_seed, ddof=1), abs=1e-3
    )
    assert doc["pods_per_second"] > 0
    assert doc["seed_values"] == [42, 43, 44]


def test_data_folder_can_be_overridden(monkeypatch, tmp_path):
    monkeypatch.setenv("MUSTER_DATA_DIR", str(tmp_path))
    assert ob.csv_dir() == tmp_path / "alibaba-gpu-v2023-openb" / "csv"


@pytest.mark.skipif(not (ob.csv_dir() / ob.DEFAULT_PODS).exists(), reason="shared openb data folder absent")
def test_bench_openb_quick_json_smoke_run(capsys):
    assert bench_cmd.main(["openb", "--quick", "--json", "--policy", "bestfit"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["trace"] == "openb_pod_list_default.csv"
    assert 0.0 <= doc["unallocated_gpu_pct_at_arrived_100"]["mean"] <= 100.0
    assert set(doc["unallocated_gpu_pct_at_arrived_100"]) == {"mean", "sd"}


def test_bench_openb_rejects_an_unreadable_pod_list(tmp_path, capsys):
    assert (
        bench_cmd.main(["openb", "--pods", str(tmp_path / "none.csv"), "--nodes", str(tmp_path / "n.csv")])
        == 2
    )
    assert "no such file" in capsys.readouterr().err

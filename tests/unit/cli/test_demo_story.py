"""The demo's closing story and its fresh home: what happened, and where to look next."""

from __future__ import annotations

from pathlib import Path

from muster.cli.demo_home import DEMOS_KEPT, fresh_demo_settings
from muster.cli.demo_story import DemoTally, example_jobs, story_lines
from muster.runtime.settings import Settings

from tests.home_holder import home_held_elsewhere


def state(used_by_queue: dict[str, float], *, nodes: int = 2) -> dict:
    used = sum(used_by_queue.values())
    return {
        "nodes": {
            f"n{i}": {"total": {"gpu": 8.0}, "free": {"gpu": 8.0 - used / nodes}} for i in range(nodes)
        },
        "queues": {
            "research": {"parent": None, "allocated": {"gpu": sum(used_by_queue.values())}},
            **{q: {"parent": "research", "allocated": {"gpu": g}} for q, g in used_by_queue.items()},
        },
        "jobs": {},
    }


def test_the_tally_keeps_the_peak_of_gpus_in_use():
    tally = DemoTally()
    for elapsed, used in enumerate([4, 12, 6]):
        tally.observe(state({"vision": used}), float(elapsed))
    assert (tally.peak_gpus, tally.total_gpus) == (12, 16)


def test_the_busiest_queue_is_the_leaf_with_most_gpu_hours_not_its_parent():
    tally = DemoTally()
    tally.observe(state({"vision": 8, "nlp": 2}), 0.0)
    tally.observe(state({"vision": 8, "nlp": 2}), 3600.0)
    tally.observe(state({"vision": 0, "nlp": 16}), 5400.0)
    # vision: 8 GPUs for an hour, then none; nlp: 2 for an hour, then 16 for half an hour.
    assert tally.busiest() == ("nlp", 10.0)


def test_no_queue_is_busiest_before_any_gpu_was_used():
    tally = DemoTally()
    tally.observe(state({"vision": 0}), 0.0)
    tally.observe(state({"vision": 0}), 10.0)
    assert tally.busiest() is None


def test_a_kept_system_gets_the_dashboard_and_why_lines_to_paste():
    tally = DemoTally()
    tally.observe(state({"vision": 8}), 0.0)
    tally.observe(state({"vision": 8}), 60.0)
    evictions = {"reclaim": {"pods": 4, "jobs": 2}}
    lines = story_lines(
        tally, evictions, ["train-3", "serve 4"], home=Path("/h/demos/x"), dashboard="http://d", kept=True
    )
    assert "peak GPUs in use: 8 of 16" in lines
    assert "evictions: reclaim 4 pods of 2 jobs" in lines
    assert "dashboard: http://d" in lines
    assert "  MUSTER_HOME=/h/demos/x muster why train-3" in lines
    assert "  MUSTER_HOME=/h/demos/x muster why 'serve 4'" in lines
    assert lines[-1].endswith("Ctrl-C stops it.")


def test_a_stopped_system_points_at_its_logs_instead():
    lines = story_lines(DemoTally(), {}, ["a"], home=Path("/h"), dashboard=None, kept=False)
    assert "evictions: none (every job fitted in its turn)" in lines
    assert not any("muster why" in line for line in lines)
    assert "/h/logs" in lines[-1] and "--keep" in lines[-1]


def test_the_jobs_to_ask_about_are_the_first_evicted_and_the_one_it_made_room_for():
    jobs = {"a": {"status": "completed"}, "b": {"status": "pending"}}
    assert example_jobs({"jobs": jobs}, ("victim", "winner")) == ["victim", "winner"]
    assert example_jobs({"jobs": jobs}, ("victim", None)) == ["victim"]
    assert example_jobs({"jobs": jobs}, None) == ["b"]
    assert example_jobs({"jobs": {"a": {"status": "completed"}}}, None) == ["a"]


def test_each_demo_gets_a_new_home_of_its_own_and_old_ones_are_pruned(tmp_path):
    settings = Settings(home=tmp_path)
    stamps = [f"20261203-0000{i:02d}" for i in range(DEMOS_KEPT + 2)]
    for stamp in stamps:
        demo = fresh_demo_settings(settings, stamp)
        demo.home.mkdir(parents=True)
    assert demo.home == tmp_path / "demos" / stamps[-1]
    assert demo.prefix == settings.prefix
    kept = sorted(p.name for p in (tmp_path / "demos").iterdir())
    assert kept == stamps[-DEMOS_KEPT:]


def test_a_demo_home_still_in_use_is_not_pruned(tmp_path):
    running = tmp_path / "demos" / "20261203-000000"
    running.mkdir(parents=True)
    with home_held_elsewhere(running):
        for i in range(1, DEMOS_KEPT + 2):
            fresh_demo_settings(Settings(home=tmp_path), f"20261203-00000{i}").home.mkdir(parents=True)
        assert running.is_dir()


def test_on_servers_of_the_users_own_a_demo_gets_a_new_prefix(tmp_path):
    settings = Settings(home=tmp_path, nats_url="nats://127.0.0.1:4222", pg_dsn="postgresql://x@y/z")
    assert fresh_demo_settings(settings, "20261203-010203").prefix == "demo20261203010203"

"""One system per MUSTER_HOME: a second owner is refused before it touches the first one's servers."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from muster.runtime.home_lock import LOCK_FILE, HomeLocked, home_lock

from tests.home_holder import home_held_elsewhere
from tests.polling import wait_for

pytestmark = [pytest.mark.slow]


def cli_env(home: Path) -> dict[str, str]:
    """A user's environment: no servers named, so `muster up` runs its own under ``home``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MUSTER_", "PG"))}
    # A dashboard on a free port, so a `muster up` already running on this machine cannot collide.
    return {**env, "MUSTER_HOME": str(home), "MUSTER_DASHBOARD_PORT": "0"}


def muster(home: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "muster.cli.main", *args],
        env=cli_env(home), capture_output=True, text=True, timeout=120,
    )  # fmt: skip


@pytest.fixture
def first_up(tmp_path):
    """A real `muster up` on its own home, until the test ends."""
    home = tmp_path / "home"
    out = open(tmp_path / "first-up.log", "w")  # noqa: SIM115 (lives with the process)
    proc = subprocess.Popen(
        [sys.executable, "-m", "muster.cli.main", "up"],
        env=cli_env(home), stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_for(
            lambda: proc.poll() is None and "Ctrl-C to stop" in (tmp_path / "first-up.log").read_text(),
            timeout=90,
            what="the first `muster up`",
        )
        yield home, proc
    finally:
        # SIGTERM, a supervisor's stop: a suite started in the background (`make test &`) runs with
        # SIGINT ignored, and so does every process it starts.
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
        out.close()


def servers_of(home: Path) -> tuple[int, dict]:
    """The first system's Postgres (its postmaster pid) and its recorded addresses."""
    postmaster = int((home / "pg" / "postmaster.pid").read_text().split()[0])
    return postmaster, json.loads((home / "endpoints.json").read_text())


def test_a_second_muster_up_on_the_same_home_exits_2_naming_the_home_and_the_first_ones_pid(first_up):
    home, first = first_up
    before = servers_of(home)

    second = muster(home, "up")

    assert second.returncode == 2
    assert str(home) in second.stderr and str(first.pid) in second.stderr
    assert first.poll() is None and servers_of(home) == before


def test_a_demo_beside_a_running_system_runs_in_a_home_of_its_own_and_leaves_the_first_alone(first_up):
    home, first = first_up
    before = servers_of(home)

    demo = muster(home, "demo", "--jobs", "1", "--nodes", "1", "--no-keep")
    status = muster(home, "status", "--json")

    assert demo.returncode == 0, demo.stderr
    [demo_home] = (home / "demos").iterdir()
    assert f"home {demo_home}" in demo.stdout and f"{demo_home / 'logs'}" in demo.stdout
    assert status.returncode == 0, status.stderr
    assert "queues" in json.loads(status.stdout)
    assert first.poll() is None and servers_of(home) == before


def test_a_killed_owner_leaves_its_home_free(tmp_path):
    with home_held_elsewhere(tmp_path) as holder:
        with pytest.raises(HomeLocked) as refused, home_lock(tmp_path):
            pass
        assert refused.value.pid == holder.pid
    with home_lock(tmp_path):
        assert (tmp_path / LOCK_FILE).read_text().strip() == str(os.getpid())


def another_process_can_lock(home: Path) -> bool:
    taken = subprocess.run(
        [sys.executable, "-c",
         "import sys; from pathlib import Path; from muster.runtime.home_lock import HomeLocked, home_lock\n"
         "try:\n    with home_lock(Path(sys.argv[1])): pass\nexcept HomeLocked: sys.exit(1)", str(home)],
        timeout=60,
    )  # fmt: skip
    return taken.returncode == 0


def test_an_owner_may_nest_locks_of_its_home_which_is_free_once_the_outermost_ends(tmp_path):
    with home_lock(tmp_path):
        with home_lock(tmp_path):
            pass
        assert not another_process_can_lock(tmp_path)
    assert another_process_can_lock(tmp_path)

"""What a pod's process gets: its own variables, user and folder, and nothing of its agent's."""

from __future__ import annotations

import json
import os
import pwd
import subprocess
import sys
from pathlib import Path

import pytest
from muster.agent import shim
from muster.agent.procs import Processes
from muster.agent.sandbox import PodFolders, RunAs, pod_environment, resolve_run_as

AS_ROOT = pytest.mark.skipif(os.geteuid() != 0, reason="only root can run a process as another user")


def nobody() -> RunAs:
    entry = pwd.getpwnam("nobody")
    return RunAs(entry.pw_name, entry.pw_uid, entry.pw_gid)


def test_a_pods_environment_is_the_basics_then_its_spec_then_musters_variables():
    env = pod_environment(
        {"PATH": "/opt/bin", "RANK": "7", "EPOCHS": "3"}, {"RANK": "0"}, Path("/pods/j-0"), "nobody"
    )
    assert env == {
        "PATH": "/opt/bin",
        "HOME": "/pods/j-0",
        "USER": "nobody",
        "LOGNAME": "nobody",
        "EPOCHS": "3",
        "RANK": "0",
    }


def test_an_agent_that_is_not_root_runs_pods_as_itself():
    assert resolve_run_as(None, euid=1000) is None


def test_an_agent_that_is_not_root_refuses_to_be_asked_for_another_user():
    with pytest.raises(ValueError, match="--run-as root: only an agent running as root"):
        resolve_run_as("root", euid=os.geteuid() or 12345)


def test_an_agent_running_as_root_runs_pods_as_nobody_unless_told():
    assert resolve_run_as(None, euid=0) == nobody()
    assert resolve_run_as(str(nobody().uid), euid=0) == nobody()


def test_an_unknown_user_is_named_in_the_error():
    with pytest.raises(ValueError, match="--run-as: no user 'no-such-user-here'"):
        resolve_run_as("no-such-user-here", euid=0)


def test_a_pods_folder_root_that_is_a_link_is_refused(tmp_path):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "pods").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(ValueError, match="--pods-dir"):
        PodFolders(tmp_path / "pods", None).prepare()


def test_each_run_of_a_pod_gets_a_fresh_folder_of_its_own(tmp_path):
    folders = PodFolders(tmp_path / "pods", None)
    folders.prepare()
    first = folders.make("j-0")
    (first / "left-over").write_text("x")
    again = folders.make("j-0")
    assert again == first and list(again.iterdir()) == []
    assert again.stat().st_mode & 0o777 == 0o700
    folders.remove("j-0")
    assert not again.exists()


@AS_ROOT
def test_a_pods_folder_belongs_to_the_user_it_runs_as(tmp_path):
    folders = PodFolders(tmp_path / "pods", nobody())
    folders.prepare()
    folder = folders.make("j-0")
    assert (folder.stat().st_uid, folder.stat().st_mode & 0o777) == (nobody().uid, 0o700)
    assert folders.root.stat().st_mode & 0o777 == 0o711


async def test_a_started_pod_gets_none_of_the_agents_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("MUSTER_CANARY", "the agent's own")
    procs = Processes(tmp_path / "agent", "n", PodFolders(tmp_path / "pods", None))
    procs.folders.prepare()
    proc = await procs.start(("j", 0), 1, ["env"], {"FROM_SPEC": "yes"}, {"RANK": "0"}, None, [], 0.0)
    assert await proc.wait() == 0
    printed = procs.log_path(("j", 0)).read_text().splitlines()[1:]
    seen = dict(line.split("=", 1) for line in printed)
    assert set(seen) == {"PATH", "HOME", "USER", "LOGNAME", "FROM_SPEC", "RANK"}
    assert seen["HOME"] == str(tmp_path / "pods" / procs.stem(("j", 0)))


def run_shim(tmp_path: Path, *options: str, command: list[str]) -> tuple[int, str]:
    exit_file = tmp_path / "exit"
    done = subprocess.run(
        [sys.executable, "-I", shim.__file__, str(os.getpid()), str(exit_file), *options, "--", *command],
        input=json.dumps({"PATH": "/usr/bin:/bin"}), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert int(exit_file.read_text()) == done.returncode
    return done.returncode, done.stdout + done.stderr


@AS_ROOT
def test_the_shim_runs_the_command_as_the_user_it_is_given(tmp_path):
    user = nobody()
    code, out = run_shim(tmp_path, "--user", f"{user.uid}:{user.gid}", command=["id", "-u"])
    assert code == 0 and out.strip() == str(user.uid)


@AS_ROOT
def test_the_shim_enters_the_working_directory_as_that_user_or_not_at_all(tmp_path):
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    user = nobody()
    code, out = run_shim(tmp_path, "--user", f"{user.uid}:{user.gid}", "--cwd", str(private), command=["pwd"])
    assert code == shim.CANNOT_START and f"cannot enter {private}" in out


@pytest.mark.parametrize(
    ("flags", "named"),
    [(["--run-as", "no-such-user-here"], "--run-as"), (["--pods-dir", "/proc/no/such/folder"], "--pods-dir")],
)
def test_an_agent_told_a_user_or_folder_it_cannot_use_exits_2_naming_the_option(flags, named):
    done = subprocess.run(
        [sys.executable, "-m", "muster.cli.main", "agent", "--gpus", "1", "--nats", "nats://127.0.0.1:1", *flags],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2 and f"{named}:" in done.stderr

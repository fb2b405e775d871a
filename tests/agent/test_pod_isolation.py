"""A pod sees nothing of its agent: not its environment, and (as root's pods run as nobody) not its secrets."""

from __future__ import annotations

import json
import os
import pwd
import re
from pathlib import Path

import pytest
from muster import events as ev
from muster.agent.files import pod_stem
from muster.runtime.security import SECRETS_DIR, SECRETS_FILE, SystemSecrets

from tests.agent.conftest import POD_PYTHON, events, muster, queues
from tests.polling import wait_for

pytestmark = [pytest.mark.nats, pytest.mark.postgres, pytest.mark.slow]

MUSTER_VARIABLES = {"CUDA_VISIBLE_DEVICES", "MUSTER_JOB", "MUSTER_POD_INDEX", "MUSTER_NODE", "MUSTER_QUEUE",
                    "RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"}  # fmt: skip
BASICS = {"PATH", "HOME", "USER", "LOGNAME"}


def submit(system, *args: str) -> str:
    return json.loads(muster(system, "run", "--json", "--queue", "team", *args).stdout)["job"]


def ended(system, job: str) -> ev.Event:
    def end():
        return [
            e for _, e in events(system) if isinstance(e, ev.PodCompleted | ev.PodFailed) and e.job == job
        ]

    return wait_for(end, what=f"{job} ended")[0]


def agent_on_node_a(system, agents, **env: str) -> None:
    queues(system, "team")
    agents.start("node-a", 1, env=env)
    wait_for(
        lambda: any(isinstance(e, ev.NodeRegistered) for _, e in events(system)), what="the agent registered"
    )


def printed_environment(log: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in log.splitlines() if re.match(r"[A-Za-z_][A-Za-z0-9_]*=", line))


def test_a_pod_sees_only_its_spec_muster_variables_and_the_basics_never_its_agents_environment(
    system, agents, pod_out
):
    agent_on_node_a(system, agents, MUSTER_CANARY="the agent's own")
    job = submit(system, "--env", "FROM_SPEC=yes", "--", "env")

    assert isinstance(ended(system, job), ev.PodCompleted)
    seen = printed_environment(muster(system, "logs", job).stdout)
    assert "MUSTER_CANARY" not in seen
    assert set(seen) == BASICS | MUSTER_VARIABLES | {"FROM_SPEC"}
    assert seen["FROM_SPEC"] == "yes"
    home = Path(seen["HOME"])
    assert home.name == pod_stem("", job, 0) and system.settings.home not in home.parents


def test_a_pod_without_a_workdir_starts_in_its_own_folder(system, agents, pod_out, tmp_path):
    agent_on_node_a(system, agents)
    script = "import os; print('cwd=' + os.getcwd()); print('home=' + os.environ['HOME'])"
    manifest = tmp_path / "no-workdir.yaml"
    manifest.write_text(
        json.dumps({"apiVersion": "muster.dev/v1", "kind": "Command", "metadata": {"name": "no-workdir"},
                    "spec": {"queue": "team", "command": [POD_PYTHON, "-c", script]}})
    )  # fmt: skip
    muster(system, "submit", "-f", str(manifest))

    assert isinstance(ended(system, "no-workdir"), ev.PodCompleted)
    log = muster(system, "logs", "no-workdir").stdout
    cwd = re.search(r"^cwd=(.*)$", log, re.M).group(1)
    assert f"home={cwd}" in log and Path(cwd).name == pod_stem("", "no-workdir", 0)


@pytest.mark.skipif(
    os.geteuid() != 0,
    reason="only an agent running as root can run pods as another user; "
    "as any other user, its pods can read what it can (see docs/agent.md)",
)
def test_a_pod_of_an_agent_running_as_root_runs_as_nobody_and_cannot_read_the_homes_secrets(
    system, agents, pod_out
):
    SystemSecrets.load_or_create(system.settings.home)  # as `muster up` keeps them
    secrets = system.settings.home / SECRETS_DIR / SECRETS_FILE
    agent_on_node_a(system, agents)
    script = "import os, sys; print('uid=%d' % os.getuid(), flush=True); print(open(sys.argv[1]).read())"
    job = submit(system, "--", POD_PYTHON, "-c", script, str(secrets))

    failed = ended(system, job)
    log = muster(system, "logs", job).stdout
    assert isinstance(failed, ev.PodFailed)
    assert f"uid={pwd.getpwnam('nobody').pw_uid}" in log
    assert "PermissionError" in log and secrets.read_text() not in log

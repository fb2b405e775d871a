"""A live `muster up` on embedded servers: the CLI works through its own logins, and no password leaks.

Leaks are looked for everywhere a person or another account could read:
`muster up`'s output, every service's log, the servers' logs, endpoints.json,
the dashboard's and health records. The generated passwords themselves are
the needles.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.nats, pytest.mark.postgres]

REPO = Path(__file__).resolve().parents[2]
SCENARIO = REPO / "tests" / "scenarios" / "duration-runs-a-queue-of-jobs-to-the-end.yaml"
# Where secrets are meant to be (owner-only), and the databases' own storage.
KEPT_SECRET = {"secrets", "nats.conf", "pg", "nats", "tls"}


def cli_env(home: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("MUSTER_NATS_URL", "MUSTER_PG_DSN", "MUSTER_PREFIX", "PGPASSWORD", "PGPASSFILE")
        and not k.startswith("MUSTER_NATS_")
    }
    env.update(MUSTER_HOME=str(home), MUSTER_DASHBOARD_PORT="0")
    return env


def muster(home: Path, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "muster.cli.main", *args], env=cli_env(home), capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, f"muster {' '.join(args)}: {done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


def wait_for(predicate, what: str, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = predicate()
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    """`muster up` in a fresh home, a scenario applied through the CLI; yields (home, outputs) after it stopped."""
    home = tmp_path_factory.mktemp("up") / "home"
    out = home.parent / "up.out"
    with open(out, "wb") as sink:
        up = subprocess.Popen(
            [sys.executable, "-m", "muster.cli.main", "up"],
            env=cli_env(home),
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    outputs: list[str] = []
    try:
        wait_for(lambda: (home / "endpoints.json").exists() or up.poll() is not None, "muster up")
        assert up.poll() is None, out.read_text()
        modes = {
            p.name: stat.S_IMODE(p.stat().st_mode)
            for p in [home / "endpoints.json", home / "nats.conf", *(home / "secrets").iterdir()]
        }
        outputs.append(muster(home, "apply", "-f", str(SCENARIO)))
        status = wait_for(
            lambda: (s := muster(home, "status", "--json")) and json.loads(s)["jobs"] and s, "jobs in status"
        )
        outputs.append(status)
    finally:
        up.send_signal(signal.SIGTERM)
        up.wait(60)
    outputs.append(out.read_text())
    yield home, outputs, modes


def secrets_of(home: Path) -> list[str]:
    data = json.loads((home / "secrets" / "secrets.json").read_text())
    return [*data["nats"].values(), *data["postgres"].values()]


def readable_files(home: Path) -> list[Path]:
    return [p for p in home.rglob("*") if p.is_file() and not KEPT_SECRET & set(p.relative_to(home).parts)]


def test_the_cli_reads_the_projection_through_the_reader_login(live):
    _, outputs, _ = live
    assert json.loads(outputs[1])["jobs"]


def test_no_password_is_in_any_log_record_or_output(live):
    home, outputs, _ = live
    files = readable_files(home)
    assert any(p.suffix == ".log" for p in files)
    needles = secrets_of(home)
    assert len(needles) >= 10
    leaks = [str(p) for p in files for n in needles if n.encode() in p.read_bytes()]
    leaks += [f"output {i}" for i, text in enumerate(outputs) for n in needles if n in text]
    assert not leaks, leaks


def test_every_file_holding_a_login_is_readable_by_its_owner_only(live):
    _, _, modes = live
    assert {"endpoints.json", "nats.conf", "secrets.json", "client.json", "framework.json", "pgpass"} <= set(
        modes
    )
    assert all(mode == 0o600 for mode in modes.values()), modes


def test_muster_up_shows_addresses_without_logins(live):
    home, outputs, _ = live
    up_output = outputs[-1]
    assert "muster_reader@" in up_output and "muster_projector" not in up_output


def test_client_logins_are_removed_when_the_system_stops(live):
    home, _, _ = live
    assert sorted(p.name for p in (home / "secrets").iterdir()) == ["secrets.json"]


def test_a_sigterm_while_up_is_starting_stops_it_cleanly_and_takes_the_logins_away(tmp_path):
    home = tmp_path / "home"
    up = subprocess.Popen(
        [sys.executable, "-m", "muster.cli.main", "up"],
        env=cli_env(home),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        # The logins are written before the services start and long before `up` says it is up.
        wait_for(
            lambda: (home / "secrets" / "client.json").exists() or up.poll() is not None, "client logins"
        )
        up.send_signal(signal.SIGTERM)
        output, _ = up.communicate(timeout=60)
    finally:
        if up.poll() is None:
            up.kill()
    assert up.returncode == 0, output
    assert "muster stopped." in output
    assert sorted(p.name for p in (home / "secrets").iterdir()) == ["secrets.json"]
    assert not (home / "endpoints.json").exists()

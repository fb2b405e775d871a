"""docker-compose.yml is a valid Compose file that runs the whole system, wired to its servers.

Validity is checked twice: against the Compose Specification's JSON schema
(bundled with check-jsonschema, so always offline), and by ``docker compose
config`` or ``docker-compose config`` where either is installed (neither
needs a Docker engine for ``config``).
"""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
from importlib import resources
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml

jsonschema = pytest.importorskip("jsonschema", reason="jsonschema (test extra, via check-jsonschema)")

REPO = Path(__file__).resolve().parents[2]
COMPOSE = REPO / "docker-compose.yml"
DOCKERFILE = REPO / "Dockerfile"
IMAGE = "ghcr.io/muster-sched/muster:0.1.0"


def service_modules() -> list[str]:
    return sorted(p.parent.name for p in (REPO / "services").glob("*/__main__.py"))


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


@pytest.fixture(scope="module")
def schema_validator():
    try:
        text = (
            resources.files("check_jsonschema.builtin_schemas.vendor")
            .joinpath("compose-spec.json")
            .read_text()
        )
    except (ModuleNotFoundError, FileNotFoundError):
        pytest.skip("check-jsonschema (test extra) bundles the Compose Specification schema")
    schema = json.loads(text)
    return jsonschema.validators.validator_for(schema)(schema)


def muster_services(compose: dict) -> dict[str, dict]:
    """The compose services that run a muster service module, by compose name."""
    return {name: s for name, s in compose["services"].items() if s.get("image") == IMAGE}


def module_of(service: dict) -> str:
    (command,) = service["command"]
    assert command.startswith("services."), command
    return command.removeprefix("services.")


def compose_cli() -> list[str] | None:
    """``docker compose`` if the plugin is there, else a ``docker-compose`` binary, else None."""
    docker = shutil.which("docker")
    if (
        docker
        and subprocess.run([docker, "compose", "version"], capture_output=True, timeout=30).returncode == 0
    ):
        return [docker, "compose"]
    standalone = shutil.which("docker-compose")
    return [standalone] if standalone else None


def test_compose_file_matches_the_compose_specification(compose, schema_validator):
    errors = [
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in schema_validator.iter_errors(compose)
    ]
    assert not errors, "\n".join(errors)


def test_the_compose_schema_rejects_a_misspelt_field(compose, schema_validator):
    broken = copy.deepcopy(compose)
    broken["services"]["nats"]["healthchek"] = broken["services"]["nats"].pop("healthcheck")
    assert list(schema_validator.iter_errors(broken))


def test_docker_compose_accepts_the_file(tmp_path):
    command = compose_cli()
    if command is None:
        pytest.skip(
            "neither `docker compose` nor `docker-compose` is installed (Debian: apt-get install docker-compose)"
        )
    out = subprocess.run(
        [*command, "-f", str(COMPOSE), "--project-directory", str(REPO), "config"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    resolved = yaml.safe_load(out.stdout)
    assert set(resolved["services"]) == set(yaml.safe_load(COMPOSE.read_text())["services"])


def test_every_service_module_runs_in_a_compose_service(compose):
    assert sorted(module_of(s) for s in muster_services(compose).values()) == service_modules()


def test_every_system_service_is_in_compose(compose):
    from muster.runtime.system import SERVICES

    assert set(SERVICES) <= {module_of(s) for s in muster_services(compose).values()}


def test_services_are_built_from_the_dockerfile_here(compose):
    for name, s in muster_services(compose).items():
        build = s["build"]
        context = build if isinstance(build, str) else build["context"]
        assert (REPO / context / "Dockerfile").resolve() == DOCKERFILE, name


def test_the_servers_are_nats_with_jetstream_postgres_and_jaeger(compose):
    services = compose["services"]
    assert services["nats"]["image"].startswith("nats:2.10")
    assert {"-js", "--jetstream"} & set(services["nats"]["command"])
    assert services["postgres"]["image"] == "postgres:16"
    assert services["jaeger"]["image"].startswith("jaegertracing/all-in-one:")


def test_every_service_is_wired_to_nats_postgres_and_jaeger(compose):
    services = compose["services"]
    for name, s in muster_services(compose).items():
        env = s["environment"]
        assert urlsplit(env["MUSTER_NATS_URL"]).hostname == "nats", name
        assert urlsplit(env["MUSTER_PG_DSN"]).hostname == "postgres", name
        assert urlsplit(env["OTEL_EXPORTER_OTLP_ENDPOINT"]).hostname == "jaeger", name
        # 4318 is OTLP over HTTP, the exporter muster installs.
        assert urlsplit(env["OTEL_EXPORTER_OTLP_ENDPOINT"]).port == 4318, name
        for server in ("nats", "postgres", "jaeger"):
            assert server in s["depends_on"], (name, server)
        for server in ("nats", "postgres"):
            assert s["depends_on"][server]["condition"] == "service_healthy", (name, server)
            assert "healthcheck" in services[server], server


def test_the_postgres_password_in_the_dsn_is_the_servers(compose):
    postgres = compose["services"]["postgres"]["environment"]
    for name, s in muster_services(compose).items():
        dsn = urlsplit(s["environment"]["MUSTER_PG_DSN"])
        assert (dsn.username, dsn.password, dsn.path) == (
            postgres["POSTGRES_USER"],
            postgres["POSTGRES_PASSWORD"],
            "/" + postgres["POSTGRES_DB"],
        ), name


def test_every_allocator_names_its_pool(compose):
    allocators = {n: s for n, s in muster_services(compose).items() if module_of(s) == "allocator"}
    assert allocators
    for name, s in allocators.items():
        assert name == f"allocator-{s['environment']['MUSTER_POOL']}"


# --- the Dockerfile the services are built from ----------------------------


def dockerfile_instructions() -> list[tuple[str, str]]:
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("#")]
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1]) for line in lines]


def final_stage() -> list[tuple[str, str]]:
    instructions = dockerfile_instructions()
    last_from = max(i for i, (op, _) in enumerate(instructions) if op == "FROM")
    return instructions[last_from:]


def test_the_image_is_python_3_11_slim():
    assert final_stage()[0] == ("FROM", "python:3.11-slim")


def test_the_image_runs_as_a_numeric_non_root_user():
    users = [arg for op, arg in final_stage() if op == "USER"]
    assert users, "no USER in the final stage"
    uid = users[-1].split(":")[0]
    assert uid.isdigit() and int(uid) != 0


def test_the_entrypoint_is_python_dash_m():
    (entrypoint,) = [arg for op, arg in final_stage() if op == "ENTRYPOINT"]
    assert json.loads(entrypoint) == ["python", "-m"]


def test_the_image_installs_the_project_with_pip():
    runs = [arg for op, arg in dockerfile_instructions() if op == "RUN"]
    assert any(re.search(r"pip install .*\s\.$", run) for run in runs)


def test_the_build_context_keeps_what_pip_install_needs():
    ignore = [line.strip() for line in (REPO / ".dockerignore").read_text().splitlines()]
    kept = {line[1:].rstrip("/") for line in ignore if line.startswith("!")}
    assert "*" in ignore
    assert {"pyproject.toml", "libs", "services"} <= kept
    for op, arg in dockerfile_instructions():
        if op == "COPY" and not arg.startswith("--from"):
            for source in arg.split()[:-1]:
                if not any(ch in source for ch in "*?["):
                    assert (REPO / source).exists(), source
                    assert source.rstrip("/") in kept, f"{source} is copied but .dockerignore drops it"


def test_the_dashboard_published_on_the_host_has_a_token_a_user_can_read(compose):
    # It listens on 0.0.0.0 in its container, so its API takes a token: one generated inside the
    # container would lock the user out.
    env = compose["services"]["dashboard"]["environment"]
    assert env["MUSTER_DASHBOARD_HOST"] == "0.0.0.0"
    assert env["MUSTER_DASHBOARD_TOKEN"]

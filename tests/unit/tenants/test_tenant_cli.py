"""``muster tenant``: declare, list and remove tenants under MUSTER_HOME, with errors naming the field."""

from __future__ import annotations

import json

import pytest
from muster.cli.completion_cmd import words
from muster.cli.main import build_parser, main


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("MUSTER_HOME", str(tmp_path))
    monkeypatch.delenv("MUSTER_TENANT", raising=False)
    return tmp_path


def test_an_added_tenant_is_listed_with_its_queues_and_user(home, capsys):
    assert main(["tenant", "add", "team-a", "--queue", "qa", "--queue", "qb"]) == 0
    capsys.readouterr()
    assert main(["tenant", "list", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "team-a": {"queues": ["qa", "qb"], "user": "tenant-team-a"}
    }


def test_adding_prints_where_the_login_is_but_never_the_password(home, capsys):
    main(["tenant", "add", "team-a", "--queue", "qa"])
    out = capsys.readouterr().out
    password = json.loads((home / "secrets" / "tenants" / "team-a.json").read_text())["password"]
    assert "secrets/tenants/team-a.json" in out and password not in out


def test_a_bad_name_exits_2_naming_the_field(home, capsys):
    assert main(["tenant", "add", "Team_A", "--queue", "qa"]) == 2
    assert 'muster tenant: name: "Team_A" is not a valid tenant name' in capsys.readouterr().err


def test_removing_an_unknown_tenant_exits_2(home, capsys):
    assert main(["tenant", "remove", "nobody"]) == 2
    assert "no tenant 'nobody'" in capsys.readouterr().err


def test_submitting_as_an_undeclared_tenant_is_refused_before_anything_is_sent(home, tmp_path, capsys):
    path = tmp_path / "pod.yaml"
    path.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c}]}\n")
    (home / "endpoints.json").write_text(json.dumps({"nats_url": "nats://127.0.0.1:1", "pg_dsn": "x"}))
    assert main(["submit", "-f", str(path), "--tenant", "team-z"]) == 2
    assert "tenant: no login for 'team-z'" in capsys.readouterr().err


def test_completion_knows_the_tenant_command_and_the_tenant_flag():
    table = words(build_parser())
    assert "tenant" in table[""] and {"add", "list", "remove"} <= set(table["tenant"])
    assert "--tenant" in table["submit"] and "--tenant" in table["run"] and "--tenant" in table["cancel"]

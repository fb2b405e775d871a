"""Mistakes caught at the door: mistyped commands, the version, error prefixes, unknown queues."""

from __future__ import annotations

import calendar

import pytest
from muster.agent.procs import start_banner
from muster.cli.common import CliError
from muster.cli.main import main
from muster.cli.parsing import version
from muster.cli.queue_check import note_unchecked, queue_refusal, refuse_unknown_queues
from muster.tenants import TenantLogin

LIVE = frozenset({"default-queue", "team-a", "research"})
TEAM = TenantLogin(tenant="team-a", queues=("team-a", "team-a-big"), user="tenant-team-a", password="pw")


@pytest.fixture
def nowhere(tmp_path, monkeypatch):
    """No running system: a command that needs one fails after parsing, naming itself."""
    for key in ("MUSTER_NATS_URL", "MUSTER_PG_DSN", "MUSTER_TENANT"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("MUSTER_HOME", str(tmp_path))


def exit_code_of(argv: list[str]) -> int:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    return exited.value.code


def test_version_prints_the_package_version_and_exits_0(capsys):
    assert exit_code_of(["--version"]) == 0
    assert capsys.readouterr().out == f"muster {version()}\n"


def test_a_mistyped_command_exits_2_with_the_command_meant(capsys):
    assert exit_code_of(["stauts"]) == 2
    assert 'invalid choice: "stauts"; did you mean "status"?' in capsys.readouterr().err


def test_a_mistyped_verb_of_a_command_gets_the_verb_meant(capsys):
    assert exit_code_of(["queues", "aply", "-f", "q.yaml"]) == 2
    assert 'did you mean "apply"?' in capsys.readouterr().err


def test_a_command_like_none_still_lists_the_commands_there_are(capsys):
    assert exit_code_of(["xyzzy"]) == 2
    err = capsys.readouterr().err
    assert "did you mean" not in err and "choose from" in err and "'status'" in err


def test_a_mistyped_choice_of_a_flag_gets_the_choice_meant(capsys):
    assert exit_code_of(["completion", "bsh"]) == 2
    assert 'did you mean "bash"?' in capsys.readouterr().err


def test_run_names_itself_in_its_errors_not_its_command_line(nowhere, capsys):
    assert main(["run", "--queue", "q", "--", "/bin/true"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("muster run: ") and "[" not in err.split(":")[0]


def test_a_verbs_error_is_prefixed_with_its_command(nowhere, capsys):
    assert main(["tenant", "remove", "nobody"]) == 2
    assert capsys.readouterr().err.startswith("muster tenant: ")


def scenario_file(tmp_path, queues: str, job_queue: str) -> str:
    path = tmp_path / "scenario.yaml"
    path.write_text(
        f"name: door\nnodes: [{{name: n1, resources: {{cpu: 8}}}}]\nqueues: {queues}\n"
        f"jobs: [{{name: j1, queue: {job_queue}, pods: [{{count: 1, resources: {{cpu: 1}}}}]}}]\n"
    )
    return str(path)


def test_apply_refuses_a_job_in_a_queue_the_file_lacks_with_the_files_queue_meant(nowhere, tmp_path, capsys):
    # Refused while reading the file: no system is running, so none was reached.
    path = scenario_file(tmp_path, "[{name: brand-new}]", "brand-nwe")
    assert main(["apply", "-f", path]) == 2
    assert capsys.readouterr().err.strip() == (
        f"muster apply: {path}: jobs[0].queue: 'brand-nwe' is not a queue; did you mean \"brand-new\"?"
    )


def test_apply_offers_only_a_leaf_queue_for_a_job(nowhere, tmp_path, capsys):
    path = scenario_file(tmp_path, "[{name: research}, {name: vision, parent: research}]", "reserch")
    assert main(["apply", "-f", path]) == 2
    assert "did you mean" not in capsys.readouterr().err


def test_a_known_queue_is_accepted():
    assert queue_refusal("team-a", LIVE) is None


def test_a_mistyped_queue_is_refused_with_the_queue_meant():
    assert queue_refusal("defualt-queue", LIVE) == (
        'queue "defualt-queue" does not exist; did you mean "default-queue"?'
    )


def test_a_queue_like_none_is_refused_with_the_queues_there_are():
    assert queue_refusal("nosuch-queue", LIVE) == (
        'queue "nosuch-queue" does not exist; the queues there are: default-queue, research, team-a'
    )


def test_the_default_queue_missing_from_a_system_with_queues_is_refused_saying_what_it_is():
    refusal = queue_refusal("default-queue", frozenset({"team-a"}))
    assert refusal is not None and refusal.startswith(
        'queue "default-queue" does not exist (where a job that names no queue goes)'
    )


def test_a_system_with_no_queues_yet_accepts_the_default_queue_it_will_create():
    assert queue_refusal("default-queue", frozenset()) is None


def test_a_system_with_no_queues_yet_accepts_another_and_says_it_was_not_checked(capsys):
    queues = ["team-a", "default-queue"]
    refuse_unknown_queues(queues, frozenset())
    note_unchecked(queues, frozenset())
    err = capsys.readouterr().err
    assert "has no queues yet" in err and 'queue "team-a" was not checked' in err


def test_a_system_with_queues_says_nothing_of_a_queue_it_has(capsys):
    refuse_unknown_queues(["team-a"], LIVE)
    note_unchecked(["team-a"], LIVE)
    assert capsys.readouterr().err == ""


def test_queues_that_cannot_be_known_are_not_refused():
    assert queue_refusal("anything", None) is None


def test_a_tenant_is_refused_a_queue_not_its_own_with_its_own_meant():
    assert queue_refusal("team-a-bgi", LIVE | {"team-a-big"}, tenant=TEAM) == (
        'queue "team-a-bgi" is not one of tenant team-a\'s queues; did you mean "team-a-big"?'
    )


def test_a_tenant_is_refused_another_teams_existing_queue():
    refusal = queue_refusal("research", LIVE, tenant=TEAM)
    assert refusal is not None and "is not one of tenant team-a's queues" in refusal


def test_a_tenant_is_refused_its_own_queue_when_the_system_no_longer_has_it():
    # team-a-big is the tenant's but not live; only the tenant's live queues are offered.
    assert queue_refusal("team-a-big", LIVE, tenant=TEAM) == (
        'queue "team-a-big" does not exist; did you mean "team-a"?'
    )


def test_a_tenant_is_held_to_its_own_queues_even_when_the_live_ones_cannot_be_known():
    assert queue_refusal("team-a-big", None, tenant=TEAM) is None
    assert queue_refusal("research", None, tenant=TEAM) is not None


def test_every_unknown_queue_is_named_once_in_one_refusal_that_exits_2():
    with pytest.raises(CliError) as refused:
        refuse_unknown_queues(["teem-a", "research", "teem-a", "reserch"], LIVE)
    assert refused.value.code == 2
    assert str(refused.value).splitlines() == [
        'queue "teem-a" does not exist; did you mean "team-a"?',
        'queue "reserch" does not exist; did you mean "research"?',
    ]


def test_a_pods_log_header_says_when_it_started_in_utc_not_epoch_seconds():
    at = calendar.timegm((2026, 12, 3, 21, 42, 5)) + 0.75
    assert start_banner(("train", 0), "gpu-1", at) == (
        "--- muster agent: starting train pod 0 on gpu-1 at 2026-12-03 21:42:05Z\n"
    )

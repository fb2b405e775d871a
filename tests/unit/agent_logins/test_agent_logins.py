"""Node logins for machine agents: one per node, kept where only their owner reads, allowed that node's
subjects only; ``muster node`` makes them and ``muster agent --node`` uses them."""

from __future__ import annotations

import json
import stat

import pytest
from muster import agent_logins
from muster.agent_logins import AgentLogin, AgentLoginError
from muster.cli.agent_cmd import own_login
from muster.cli.main import main
from muster.runtime.security import NatsAuth, agent_permissions, nats_permissions, render_nats_conf
from muster.subjects import Subjects, subject_matches

S = Subjects("muster")


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("MUSTER_HOME", str(tmp_path))
    return tmp_path


def allowed(patterns: tuple[str, ...], subject: str) -> bool:
    return any(subject_matches(p, subject) for p in patterns)


@pytest.mark.parametrize("node", ["Node-A", "node_a", "-a", "", "a*", "a>", "a b"])
def test_a_node_name_that_is_no_node_name_is_refused_naming_the_field(tmp_path, node):
    with pytest.raises(AgentLoginError, match="^node: "):
        agent_logins.add(tmp_path, node)


def test_each_node_gets_its_own_password_in_a_login_file_only_its_owner_reads(tmp_path):
    a, b = agent_logins.add(tmp_path, "a"), agent_logins.add(tmp_path, "b")
    assert a.password and b.password and a.password != b.password
    path = agent_logins.login_path(tmp_path, "a")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert json.loads(path.read_text())["user"] == "agent-a"


def test_adding_a_node_again_keeps_its_password(tmp_path):
    first = agent_logins.add(tmp_path, "a")
    assert agent_logins.add(tmp_path, "a", nats_url="nats://h:4222").password == first.password


def test_a_removed_nodes_login_is_gone_and_removing_an_unknown_one_is_refused(tmp_path):
    agent_logins.add(tmp_path, "a")
    agent_logins.remove(tmp_path, "a")
    assert agent_logins.load(tmp_path) == [] and agent_logins.find(tmp_path, "a") is None
    with pytest.raises(AgentLoginError, match="^node: no agent login for 'a'"):
        agent_logins.remove(tmp_path, "a")


def test_a_dotted_node_logs_in_as_one_token_so_no_other_users_inbox_holds_its_replies():
    assert AgentLogin("rack-1.b", "p").user == "agent-rack-1_b"


def test_a_node_login_may_publish_facts_on_its_own_nodes_subjects_only():
    publish = agent_permissions("muster", "a").publish
    assert allowed(publish, S.node_pods("gpu", "a")) and allowed(publish, S.node_facts("gpu", "a"))
    for other in (S.node_pods("gpu", "b"), S.node_facts("gpu", "b"), S.pods("gpu"), S.nodes("gpu")):
        assert not allowed(publish, other), other
    assert not allowed(publish, S.decisions("gpu")) and not allowed(publish, S.workloads)


def test_a_node_login_hears_its_own_nodes_log_requests_and_replies_only():
    perms = agent_permissions("muster", "a")
    assert allowed(perms.subscribe, S.agent_logs("a")) and not allowed(perms.subscribe, S.agent_logs("b"))
    assert not allowed(perms.subscribe, "_INBOX.agent.x") and allowed(perms.subscribe, "_INBOX.agent-a.x")
    assert perms.allow_responses


def test_the_embedded_servers_config_holds_each_nodes_user_beside_the_shared_agent():
    passwords = {user: f"pw-{user}" for user in nats_permissions("muster")}
    auth = NatsAuth("muster", passwords, agents=[AgentLogin("a", "secret-a")])
    conf = render_nats_conf(auth, host="127.0.0.1", port=4222, store_dir="/s", log_file="/l", server_name="x")
    assert '{ user: "agent-a", password: "secret-a",' in conf and '{ user: "agent", ' in conf
    assert '"muster.pods.*.a"' in conf


def test_muster_agent_uses_its_nodes_login_when_there_is_one(home):
    login = agent_logins.add(home, "a")
    credentials = own_login(home, "a", "nats://127.0.0.1:4222", env={})
    assert (credentials.user, credentials.password) == ("agent-a", login.password)
    assert own_login(home, "b", "nats://127.0.0.1:4222", env={}) is None


def test_a_login_asked_for_explicitly_wins_over_the_nodes_own(home):
    agent_logins.add(home, "a")
    assert own_login(home, "a", "nats://127.0.0.1:4222", env={"MUSTER_NATS_USER": "agent"}) is None
    assert own_login(home, "a", "nats://agent:pw@127.0.0.1:4222", env={}) is None


def test_muster_node_add_lists_the_node_and_prints_where_its_login_is_but_never_the_password(home, capsys):
    assert main(["node", "add", "a"]) == 0
    out = capsys.readouterr().out
    password = json.loads(agent_logins.login_path(home, "a").read_text())["password"]
    assert "secrets/agents/a.json" in out and password not in out
    assert main(["node", "list", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"a": {"user": "agent-a"}}


def test_muster_node_add_of_a_bad_name_exits_2_naming_the_field(home, capsys):
    assert main(["node", "add", "Node_A"]) == 2
    assert "muster node: node: " in capsys.readouterr().err


def test_a_nodes_snapshot_store_is_written_by_its_own_login_alone_and_read_by_the_projector_and_cli():
    from muster.runtime.security import agent_user
    from muster.snapshots import snapshot_bucket

    bucket = snapshot_bucket("MUSTER", agent_user("rack-1.a"))
    assert bucket == "MUSTER_SNAPSHOTS_AGENT_RACK-1_A"
    chunk, info = f"$O.{bucket}.C.chunk", f"$JS.API.STREAM.INFO.OBJ_{bucket}"
    assert allowed(agent_permissions("muster", "rack-1.a").publish, chunk)
    assert not allowed(agent_permissions("muster", "rack-1-a").publish, chunk)
    system = nats_permissions("muster", ["rack-1.a"])
    assert {user for user, p in system.items() if allowed(p.publish, chunk)} == set()
    assert {user for user, p in system.items() if allowed(p.publish, info)} == {"projector", "cli"}


def test_nodes_whose_tokens_differ_only_past_a_hundred_characters_get_stores_apart():
    from muster.snapshots import snapshot_bucket

    one, other = snapshot_bucket("S", "agent-" + "a" * 120), snapshot_bucket("S", "agent-" + "a" * 119 + "b")
    assert one != other and max(len(one), len(other)) < 200

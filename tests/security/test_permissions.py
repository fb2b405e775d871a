"""Who may publish where: the permission tables every deployment is built from."""

from __future__ import annotations

import pytest
from muster.bus.nats import subject_matches
from muster.runtime.security import (
    NATS_USERS,
    SNAPSHOT_OWNERS,
    NatsAuth,
    inbox_prefix,
    nats_permissions,
    render_nats_conf,
    render_permissions,
)
from muster.snapshots import snapshot_bucket
from muster.subjects import Subjects

S = Subjects("muster")
PERMISSIONS = nats_permissions("muster")


def may_publish(user: str, subject: str) -> bool:
    return any(subject_matches(p, subject) for p in PERMISSIONS[user].publish)


def publishers(subject: str) -> set[str]:
    return {user for user in NATS_USERS if may_publish(user, subject)}


def test_only_the_allocator_may_publish_decisions():
    assert publishers(S.decisions("default")) == {"allocator"}
    assert publishers(S.decisions("a100")) == {"allocator"}


def test_only_the_binder_nodewatch_and_agents_may_publish_pod_facts():
    assert publishers(S.pods("default")) == {"binder", "nodewatch", "agent"}


def test_frameworks_may_publish_only_submissions_to_the_stream():
    stream_subjects = [p for p in PERMISSIONS["framework"].publish if subject_matches(S.all, p)]
    assert stream_subjects == [S.workloads]


@pytest.mark.parametrize(
    ("subject", "who"),
    [
        (S.podgroups, {"podgrouper", "cli"}),
        (S.queues, {"queue-controller"}),
        (S.queue_status, {"allocator"}),
        (S.queue_requests, {"cli"}),
        (S.workloads, {"cli", "framework"}),
        (S.nodes("default"), {"nodewatch", "cli", "agent"}),
    ],
)
def test_each_flow_has_only_its_producers(subject, who):
    assert publishers(subject) == who


def test_every_consumer_may_dead_letter_but_frameworks_and_the_dashboard_may_not():
    assert publishers(S.deadletter) == {
        "projector", "queue-controller", "podgrouper", "allocator", "binder", "nodewatch", "agent",
    }  # fmt: skip


def test_nobody_may_publish_to_the_whole_stream_or_everything():
    for user in NATS_USERS:
        assert not {">", S.all, "$JS.API.>", "$JS.>"} & set(PERMISSIONS[user].publish), user


def test_only_the_cli_may_create_the_stream_and_only_the_allocator_the_lease_bucket():
    assert publishers(f"$JS.API.STREAM.CREATE.{S.stream}") == {"cli"}
    assert publishers(f"$JS.API.STREAM.CREATE.KV_{S.stream}_LEASES") == {"allocator"}


def test_nobody_may_delete_consumers_or_streams():
    for subject in (f"$JS.API.CONSUMER.DELETE.{S.stream}.projector", f"$JS.API.STREAM.DELETE.{S.stream}"):
        assert publishers(subject) == set(), subject


def test_jetstream_api_access_is_scoped_to_the_systems_stream():
    other = Subjects("other")
    for user in NATS_USERS:
        assert not may_publish(user, f"$JS.API.CONSUMER.MSG.NEXT.{other.stream}.x"), user
        assert not may_publish(user, f"$JS.API.STREAM.INFO.{other.stream}"), user


def may_subscribe(user: str, subject: str) -> bool:
    return any(subject_matches(p, subject) for p in PERMISSIONS[user].subscribe)


def test_every_user_may_receive_replies_on_its_own_inboxes_only():
    for user in NATS_USERS:
        assert may_subscribe(user, f"{inbox_prefix(user)}.abc.1"), user
        others = [u for u in NATS_USERS if u != user]
        assert not any(may_subscribe(user, f"{inbox_prefix(o)}.abc.1") for o in others), user


def test_nobody_may_read_every_inbox_or_publish_into_one():
    for user in NATS_USERS:
        assert "_INBOX.>" not in PERMISSIONS[user].subscribe, user
        assert not may_publish(user, f"{inbox_prefix('cli')}.abc.1"), user


def test_only_agents_and_allocators_may_answer_requests_and_only_on_the_reply_subject_they_received():
    assert {u for u in NATS_USERS if PERMISSIONS[u].allow_responses} == {"agent", "allocator"}
    assert "allow_responses: true" in render_permissions(PERMISSIONS["agent"])
    assert "allow_responses" not in render_permissions(PERMISSIONS["cli"])


def test_only_allocators_ask_after_each_other_and_answer():
    alive = S.alive("default", "a1")
    assert {u for u in NATS_USERS if any(subject_matches(p, alive) for p in PERMISSIONS[u].subscribe)} == {
        "allocator"
    }
    assert publishers(alive) == {"allocator"}


def test_only_agents_listen_for_log_requests_and_only_the_cli_sends_them():
    logs = S.agent_logs("node-a")
    assert {u for u in NATS_USERS if any(subject_matches(p, logs) for p in PERMISSIONS[u].subscribe)} == {
        "agent"
    }
    assert publishers(logs) == {"cli"}


def test_permissions_follow_the_prefix():
    team = Subjects("team-a")
    assert nats_permissions("team-a")["allocator"].publish.count(team.decisions(">")) == 1
    assert not any(p.startswith("muster.") for p in nats_permissions("team-a")["allocator"].publish)


def test_the_generated_config_names_every_user_with_its_password(tmp_path):
    passwords = {u: f"pw-{u}" for u in NATS_USERS}
    conf = render_nats_conf(
        NatsAuth("muster", passwords), host="127.0.0.1", port=4222, store_dir=tmp_path, log_file=tmp_path / "l",
        server_name="s",
    )  # fmt: skip
    for user in NATS_USERS:
        assert f'user: "{user}", password: "pw-{user}"' in conf


def test_without_passwords_the_config_has_no_users(tmp_path):
    conf = render_nats_conf(
        NatsAuth("muster"), host="127.0.0.1", port=4222, store_dir=tmp_path, log_file=tmp_path / "l",
        server_name="s",
    )  # fmt: skip
    assert "authorization" not in conf and "user:" not in conf


def test_a_nats_auth_never_shows_its_passwords():
    auth = NatsAuth("muster", {"cli": "very-secret"})
    assert "very-secret" not in repr(auth)


def test_each_snapshot_store_is_written_by_its_own_login_alone():
    for owner in SNAPSHOT_OWNERS:
        bucket = snapshot_bucket(S.stream, owner)
        assert publishers(f"$O.{bucket}.C.chunk") == {owner or "allocator"}, owner


def test_the_cli_may_forget_snapshots_but_never_write_one():
    for owner in SNAPSHOT_OWNERS:
        bucket = snapshot_bucket(S.stream, owner)
        assert publishers(f"$O.{bucket}.M.record") == {owner or "allocator", "cli"}, owner
        assert publishers(f"$JS.API.STREAM.PURGE.OBJ_{bucket}") == {owner or "allocator", "cli"}, owner

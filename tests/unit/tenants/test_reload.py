"""Reloading a running NATS's users signals only the server that runs this home's config."""

from __future__ import annotations

import json
import os

from muster.runtime import nats_reload
from muster.runtime.embedded import NATS_PID_FILE, NATS_STATE_FILE


def state(home, users: bool = True) -> None:
    record = {"host": "127.0.0.1", "port": 4222, "prefix": "muster", "users": users, "tls": False}
    (home / NATS_STATE_FILE).write_text(json.dumps(record))


def test_a_stale_pid_file_naming_another_process_is_not_signalled(tmp_path):
    state(tmp_path)
    # This very test process: SIGHUP would end it.
    (tmp_path / NATS_PID_FILE).write_text(str(os.getpid()))
    assert nats_reload.reload_users(tmp_path) is False
    assert not (tmp_path / "nats.conf").exists()


def test_nothing_is_reloaded_where_no_server_was_started(tmp_path):
    assert nats_reload.reload_users(tmp_path) is False


def test_a_pid_file_of_a_process_that_has_ended_is_ignored(tmp_path):
    state(tmp_path)
    (tmp_path / NATS_PID_FILE).write_text("999999999")
    assert nats_reload.reload_users(tmp_path) is False

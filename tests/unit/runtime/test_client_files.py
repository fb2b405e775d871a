"""Stopping takes the client logins away, including one a stop interrupted while it was being written."""

from __future__ import annotations

from muster.runtime import security


def test_clearing_removes_the_logins_and_a_half_written_one(tmp_path):
    security.write_client_files(
        tmp_path, "nats://127.0.0.1:4222", None, {"cli": "a", "agent": "b", "framework": "c"}, pg_reader="x"
    )
    folder = security.secrets_dir(tmp_path)
    (folder / f"{security.PGPASS_FILE}.tmp").write_text("a line cut short")
    (folder / "secrets.json").write_text("{}")  # the system's own secrets stay
    security.clear_client_files(tmp_path)
    assert sorted(p.name for p in folder.iterdir()) == ["secrets.json"]

"""A demo's home of its own: a fresh one under ``MUSTER_HOME/demos`` each time, the oldest pruned."""

from __future__ import annotations

import contextlib
import dataclasses
import shutil
from pathlib import Path

from muster.runtime.home_lock import HomeLocked, home_lock
from muster.runtime.settings import Settings

DEMOS_KEPT = 3
"""Demo homes kept under ``MUSTER_HOME/demos``, this one included: older ones are removed."""


def fresh_demo_settings(settings: Settings, stamp: str) -> Settings:
    """Settings for a demo of its own: a new home under ``MUSTER_HOME/demos`` (and, on servers given by
    MUSTER_NATS_URL / MUSTER_PG_DSN, a new prefix), so no earlier demo's jobs show in this one."""
    root = settings.home / "demos"
    _prune(root, keep=DEMOS_KEPT - 1)
    external = settings.nats_url is not None or settings.pg_dsn is not None
    prefix = f"demo{stamp.replace('-', '')}" if external else settings.prefix
    return dataclasses.replace(settings, home=root / stamp, prefix=prefix)


def _prune(root: Path, keep: int) -> None:
    """Remove all but the newest ``keep`` demo homes under ``root``; one still running is left alone."""
    homes = sorted(p for p in root.glob("*") if p.is_dir()) if root.is_dir() else []
    for home in homes[: max(0, len(homes) - keep)]:
        with contextlib.suppress(HomeLocked), home_lock(home):
            shutil.rmtree(home, ignore_errors=True)

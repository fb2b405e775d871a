"""Compiled kernels are cached under a digest of every module a kernel depends on."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from muster.kernels import jit

PACKAGE = Path(jit.__file__).resolve().parents[1]


def test_every_module_that_defines_a_kernel_is_in_the_digest():
    defining = {
        path.relative_to(PACKAGE).as_posix()
        for path in PACKAGE.rglob("*.py")
        if "from muster.kernels.jit import" in path.read_text() or "import njit" in path.read_text()
    }
    covered = {
        p
        for p in defining
        if any(p == source or p.startswith(source.rstrip("/") + "/") for source in jit.SOURCES)
    }
    assert defining - covered == set()


def test_no_module_compiles_a_kernel_with_numba_directly():
    direct = [
        path.relative_to(PACKAGE).as_posix()
        for path in PACKAGE.rglob("*.py")
        if "from numba import njit" in path.read_text() and path.name != "jit.py"
    ]
    assert direct == []


def test_the_cache_folder_follows_numba_cache_dir(tmp_path):
    program = "from muster.kernels import jit; import numba; print(jit.cache_folder()); print(numba.config.CACHE_DIR)"
    env = {"NUMBA_CACHE_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True, env=env)
    folder, configured = out.stdout.split()
    assert folder == configured
    assert Path(folder).parent == tmp_path and Path(folder).name.startswith("kernels-")


def test_a_changed_kernel_source_changes_the_folder(tmp_path, monkeypatch):
    tree = tmp_path / "muster"
    for source in jit.SOURCES:
        origin = PACKAGE / source
        files = [origin] if origin.is_file() else sorted(origin.rglob("*.py"))
        for path in files:
            target = tree / path.relative_to(PACKAGE)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(path.read_bytes())
    monkeypatch.setattr(jit, "_PACKAGE", tree)
    before = jit.cache_folder()
    callee = tree / "scheduler" / "capacity.py"
    callee.write_text(callee.read_text() + "\n# changed\n")
    assert jit.cache_folder() != before

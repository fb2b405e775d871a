"""The warm-up says which kernel it compiles and how long each took: a first install is never silent."""

from __future__ import annotations

import itertools

import numba
from muster.warmup import CompileReport
from numba.core import event


def test_each_outermost_compile_is_named_when_it_starts_and_timed_when_it_ends():
    lines: list[str] = []
    ticks = itertools.count(0.0, 2.0)
    report = CompileReport(lines.append, clock=lambda: next(ticks))

    @numba.njit
    def inner(x):
        return x + 1

    @numba.njit
    def outer(x):
        return inner(x) * 2

    with event.install_listener("numba:compile", report):
        assert outer(1) == 4
    # The callee compiles inside its caller: one start line and one end line for the caller only.
    name = f"{__name__}.{outer.py_func.__qualname__}"
    assert len(lines) == 2 and report.compiled == 1
    assert lines[0].endswith(f"loading: compiling {name} ...")
    assert f"{name} took " in lines[1] and lines[1].endswith("s")

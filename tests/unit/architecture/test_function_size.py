"""The scheduler's core reads in pieces: no function in it runs past a screen."""

from __future__ import annotations

import ast

from tests.unit.architecture.imports import PACKAGES

LONGEST = 80
CORE = [PACKAGES["muster"] / "scheduler", PACKAGES["muster"] / "kernels"]


def long_functions() -> list[str]:
    found = []
    for folder in CORE:
        for path in sorted(folder.rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    length = node.end_lineno - node.lineno + 1
                    if length > LONGEST:
                        found.append(f"{path.name}:{node.lineno} {node.name} ({length} lines)")
    return found


def test_no_function_in_the_scheduler_core_is_longer_than_a_screen():
    assert long_functions() == []

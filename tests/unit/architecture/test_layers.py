"""The layers hold: libraries never import services, a service never imports another, no loops."""

from __future__ import annotations

from tests.unit.architecture.imports import Import, cycles, imports, modules

KNOWN = modules()
EDGES = imports(KNOWN)


def _service(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == "services" and len(parts) > 1 else None


def _shown(found: list[Import]) -> list[str]:
    return [f"{i.source}:{i.line} imports {i.target}" for i in found]


def test_the_graph_is_read_from_the_whole_tree():
    assert "muster.scheduler.engine" in KNOWN and "services.allocator.app" in KNOWN
    assert any(i.source == "services.allocator.app" and i.target.startswith("muster.") for i in EDGES)


def test_no_library_imports_a_service():
    found = [i for i in EDGES if i.source.startswith("muster") and i.target.split(".")[0] == "services"]
    assert _shown(found) == []


def test_no_service_imports_another_service():
    found = [
        i
        for i in EDGES
        if _service(i.source) and _service(i.target) and _service(i.source) != _service(i.target)
    ]
    assert _shown(found) == []


def test_no_modules_import_each_other_in_a_loop():
    # Imports under ``if TYPE_CHECKING`` never run; every other import, at load or inside a
    # function, is a dependency.
    assert cycles([i for i in EDGES if i.when != "typing"]) == []


def test_a_service_folder_holds_only_what_runs_it():
    wiring = {"__init__", "__main__", "app", "handlers", "snapshot"}
    extra = {
        # The podgrouper answers tenants on subjects of their own, the projector overlaps
        # preparing and committing batches, the dashboard serves its API from its queries
        # behind a guard of who it answers.
        "services.podgrouper.tenant_handlers",
        "services.projector.pipeline",
        "services.dashboard.api",
        "services.dashboard.queries",
        "services.dashboard.guard",
    }
    found = [
        m
        for m in KNOWN
        if _service(m) and m.count(".") == 2 and m.split(".")[2] not in wiring and m not in extra
    ]
    assert found == []


def test_a_loop_is_found_however_long():
    edges = [Import("a", "b", 1, "load"), Import("b", "c", 1, "call"), Import("c", "a", 1, "load")]
    assert cycles(edges) == [["a", "b", "c"]]
    assert cycles(edges[:2]) == []

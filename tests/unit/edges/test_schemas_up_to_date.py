"""schemas/ is generated from the event Structs and must match them."""

from pathlib import Path

from muster.schemas import generate

SCHEMAS = Path(__file__).resolve().parents[3] / "schemas"


def test_every_event_schema_in_the_repo_matches_the_structs():
    wanted = generate()
    on_disk = {p.name: p.read_bytes() for p in SCHEMAS.glob("*.json")}
    stale = sorted(name for name in wanted if on_disk.get(name) != wanted[name])
    extra = sorted(set(on_disk) - set(wanted))
    assert not stale and not extra, f"run `make schemas`: stale {stale}, not an event any more {extra}"

"""JSON Schema of every event, generated from the Structs (``make schemas``).

One file per event type plus ``Envelope.json``, so producers in any
language can validate what they emit. A test fails when ``schemas/`` is
out of date.
"""

from __future__ import annotations

import sys
from pathlib import Path

import msgspec

from muster.events import EVENT_TYPES, Envelope


def generate() -> dict[str, bytes]:
    """File name -> contents for every schema."""
    files = {}
    for kind in (*EVENT_TYPES, Envelope):
        name = kind.__struct_config__.tag if kind is not Envelope else "Envelope"
        schema = msgspec.json.schema(kind)
        schema["$id"] = f"https://muster.dev/schemas/{name}.json"
        files[f"{name}.json"] = msgspec.json.format(msgspec.json.encode(schema), indent=2) + b"\n"
    return dict(sorted(files.items()))


def write(folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    wanted = generate()
    for stale in folder.glob("*.json"):
        if stale.name not in wanted:
            stale.unlink()
    paths = []
    for name, data in wanted.items():
        path = folder / name
        path.write_bytes(data)
        paths.append(path)
    return paths


if __name__ == "__main__":
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "schemas")
    print(f"wrote {len(write(out))} schemas to {out}/")

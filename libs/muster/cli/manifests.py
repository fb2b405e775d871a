"""Reading manifest and scenario files for the CLI, with errors that name the file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from muster.cli.common import fail
from muster.grouping.errors import ManifestError
from muster.grouping.nesting import load_yaml_documents


def read_documents(path: str) -> list[Any]:
    """Every document of a YAML (``---``-separated) or JSON file; exits 2 naming the file on bad input."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        fail(f"{path}: {exc.strerror or exc}")
    except UnicodeDecodeError as exc:
        fail(f"{path}: not UTF-8 text: {exc.reason} at byte {exc.start}")
    try:
        docs = load_yaml_documents(text)
    except yaml.YAMLError as exc:
        fail(f"{path}: not valid YAML: {exc}")
    except ManifestError as exc:  # nested too deep, or aliases that expand too far
        fail(f"{path}: {exc}")
    if not docs:
        fail(f"{path}: the file holds no document")
    return docs


def read_manifests(path: str) -> list[dict[str, Any]]:
    """Every document of a manifest file, each a mapping; exits 2 naming the file on bad input."""
    docs = read_documents(path)
    for i, doc in enumerate(docs):
        if not isinstance(doc, dict):
            fail(f"{path}: document {i}: expected a mapping, got {type(doc).__name__}")
    return docs

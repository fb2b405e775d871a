"""Poison messages, as an attacker or a broken producer would publish them."""

from __future__ import annotations

import json


def deep_envelope(levels: int = 5000) -> bytes:
    """A submission whose manifest nests ``levels`` lists deep (valid JSON, past any reader's patience)."""
    nested = b"[" * levels + b"]" * levels
    return b'{"events": [{"type": "WorkloadSubmitted", "uid": "u", "manifests": [{"a": ' + nested + b"}]}]}"


def raw_envelope(*events: dict) -> bytes:
    """An envelope of events written as plain JSON objects, bypassing the Structs' types."""
    return json.dumps({"events": list(events)}).encode()

"""Where this process's spans are to go, as its environment says, read without loading OpenTelemetry.

``OTEL_EXPORTER_OTLP_ENDPOINT`` (or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) exports them over
OTLP/HTTP; ``MUSTER_TRACE_CONSOLE=1`` prints them. With neither, nothing would see a span, and a
process that only reads (most CLI calls) need not import OpenTelemetry at all.
"""

from __future__ import annotations

import os
from collections.abc import Mapping


def otlp_endpoint(env: Mapping[str, str] | None = None) -> str | None:
    """The OTLP endpoint spans are exported to, if one is set."""
    env = os.environ if env is None else env
    return env.get("OTEL_EXPORTER_OTLP_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or None


def to_console(env: Mapping[str, str] | None = None) -> bool:
    """Whether spans are printed to the console."""
    env = os.environ if env is None else env
    return env.get("MUSTER_TRACE_CONSOLE") == "1"


def requested(env: Mapping[str, str] | None = None) -> bool:
    """Whether anything would see this process's spans."""
    return otlp_endpoint(env) is not None or to_console(env)

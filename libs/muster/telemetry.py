"""OpenTelemetry set-up and W3C trace context in bus headers.

Only the bus adapter injects and extracts context; services see a
``Context`` on each delivery and pass it back when they publish what that
delivery caused. Exporters follow the standard ``OTEL_*`` variables;
``MUSTER_TRACE_CONSOLE=1`` prints spans to the console.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.propagators.textmap import DefaultGetter, DefaultSetter
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from muster import span_export

_propagator = TraceContextTextMapPropagator()
_setter = DefaultSetter()
_getter = DefaultGetter()
_configured = False


def configure(service_name: str, env: Mapping[str, str] | None = None) -> None:
    """Install a tracer provider for this process once, exporting as OTEL_* says."""
    global _configured
    if _configured:
        return
    env = os.environ if env is None else env
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter

    _configured = True
    otlp, console = span_export.otlp_endpoint(env), span_export.to_console(env)
    if not (otlp or console):
        # Nothing would see the spans: keep the no-op tracer, which still passes on
        # any trace context that arrives, at no cost on hot paths.
        return
    provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
    if otlp:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    if console:
        provider.add_span_processor(BatchSpanProcessor(ConsoleSpanExporter()))
    trace.set_tracer_provider(provider)


def recording() -> bool:
    """Whether spans go anywhere: a tracer provider has been installed (here, or by a test).

    Hot paths ask first and skip per-job span work when nothing would record it.
    """
    return not isinstance(trace.get_tracer_provider(), (trace.ProxyTracerProvider, trace.NoOpTracerProvider))


def tracer(name: str = "muster") -> trace.Tracer:
    return trace.get_tracer(name)


def inject(headers: dict[str, str], ctx: Context | None = None) -> dict[str, str]:
    """Write the W3C ``traceparent`` of ``ctx`` (default: the current one) into ``headers``."""
    _propagator.inject(
        headers, context=ctx if ctx is not None else otel_context.get_current(), setter=_setter
    )
    return headers


def extract(headers: Mapping[str, str] | None) -> Context:
    """The trace context carried by a message's headers (empty if none)."""
    return _propagator.extract(dict(headers or {}), getter=_getter)


class JobContexts:
    """Each job's trace context, as the message that created its pod group carried it.

    A job's trace starts at submission; every service that later acts on the
    job (placing it, binding it) records its span under that context, so one
    trace shows the job's whole path even though decisions travel in batches.
    """

    def __init__(self) -> None:
        self._contexts: dict[str, Context] = {}

    def note(self, events, context: Context | None) -> None:
        from muster.events import PodGroupCreated

        if context is None or not recording():
            return
        for event in events:
            if isinstance(event, PodGroupCreated):
                self._contexts[event.name] = context

    def get(self, job: str) -> Context | None:
        return self._contexts.get(job)


def job_span(name: str, job: str, contexts: JobContexts, attributes: dict | None = None, links=()) -> None:
    """Record one finished span about ``job`` inside its trace."""
    span = tracer().start_span(
        name,
        context=contexts.get(job),
        attributes={"muster.job": job, **(attributes or {})},
        links=list(links),
    )
    span.end()

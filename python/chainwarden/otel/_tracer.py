"""The OpenTelemetry side: one tracer per export, spans opened from a ``SpanShape`` and closed with a status.

Only the OpenTelemetry API is used, so any SDK (or a vendor's distribution) configured by the application
receives the spans; without ``tracer_provider`` the global provider is used.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Link, NonRecordingSpan, Span, SpanContext, SpanKind, Status, StatusCode

from chainwarden._core import __version__
from chainwarden.errors import InvalidArgumentType
from chainwarden.otel._mapping import CLIENT, SpanShape, error_description, event_fields
from chainwarden.otel._metrics import GenAiMetrics
from chainwarden.vocab import ENDED_NODE_STATUSES

__all__ = ["Tracer", "add_events", "as_parent", "capture_from_environment", "current_context"]

_KINDS = {CLIENT: SpanKind.CLIENT}


def current_context() -> otel_context.Context:
    """The caller's active context: exported spans without a recorded parent hang under its current span."""
    return otel_context.get_current()


def capture_from_environment() -> bool:
    """The conventions' switch for message content: ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``."""
    value = os.environ.get("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "")
    return value.strip().lower() in ("true", "1", "yes")


class Tracer:
    """Opens and closes spans for recorded nodes, and records the GenAI metrics of each ended one.

    ``capture_content`` exports captured content (docs/containment.md "Content capture") as the conventions'
    opt-in message attributes; None reads ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``."""

    __slots__ = ("_tracer", "capture_content", "metrics")

    def __init__(
        self, tracer_provider: Any = None, meter_provider: Any = None, capture_content: bool | None = None
    ) -> None:
        if tracer_provider is not None and not callable(getattr(tracer_provider, "get_tracer", None)):
            kind = type(tracer_provider).__name__
            raise InvalidArgumentType(
                f"tracer_provider must be an OpenTelemetry TracerProvider, got {kind}",
                argument="tracer_provider",
            )
        if capture_content is not None and not isinstance(capture_content, bool):
            raise InvalidArgumentType(
                f"capture_content must be a bool or None, got {type(capture_content).__name__}",
                argument="capture_content",
            )
        self.metrics = GenAiMetrics(meter_provider)
        provider = tracer_provider if tracer_provider is not None else trace.get_tracer_provider()
        self._tracer = provider.get_tracer("chainwarden", __version__)
        self.capture_content = capture_from_environment() if capture_content is None else capture_content

    def start(
        self,
        shape: SpanShape,
        *,
        parent: SpanContext | otel_context.Context | None,
        start_ns: int,
        links: Iterable[SpanContext] = (),
    ) -> Span:
        ctx = as_parent(parent) if isinstance(parent, SpanContext) else parent
        return self._tracer.start_span(
            shape.name,
            context=ctx,
            kind=_KINDS.get(shape.kind, SpanKind.INTERNAL),
            attributes=shape.attributes,
            start_time=start_ns,
            links=[Link(link) for link in links] or None,
        )

    def finish(
        self,
        span: Span,
        *,
        start: Mapping[str, Any],
        attributes: dict[str, Any],
        status: str,
        stop_reason: str | None,
        error_class: str | None,
        start_ns: int,
        end_ns: int,
    ) -> None:
        """Sets the end attributes and the status, ends the span at ``end_ns`` and records its metrics
        (``start``: the span's start attributes)."""
        span.set_attributes(attributes)
        description = error_description(status, stop_reason, error_class)
        if description is not None:
            span.set_status(Status(StatusCode.ERROR, description))
        span.end(end_time=end_ns)
        # A node exported still running has no duration of its own yet.
        ended = status in ENDED_NODE_STATUSES
        self.metrics.record(start, attributes, (end_ns - start_ns) / 1e9 if ended else None)


def as_parent(span_context: SpanContext) -> otel_context.Context:
    """A context whose current span is ``span_context``: what a child span starts in."""
    return trace.set_span_in_context(NonRecordingSpan(span_context))


def add_events(span: Span, events: Iterable[Any]) -> None:
    """Adds safety events as span events (their own timestamps when they carry one)."""
    for event in events:
        name, attributes, time_ns, _ = event_fields(event)
        span.add_event(name, attributes, timestamp=time_ns)

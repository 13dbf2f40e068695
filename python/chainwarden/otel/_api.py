"""The implementations behind ``chainwarden.otel``; importing this module imports OpenTelemetry."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from chainwarden._core import ExecutionGraph
from chainwarden.containment import ExecutionContext
from chainwarden.dag.runner import Runner
from chainwarden.errors import InvalidArgumentType
from chainwarden.otel._context_live import ContextExport
from chainwarden.otel._graph_live import GraphExport
from chainwarden.otel._handle import OtelHandle
from chainwarden.otel._runner_live import RunnerExport
from chainwarden.otel._snapshot import export_snapshot_with
from chainwarden.otel._tracer import Tracer, current_context

__all__ = ["export_snapshot", "instrument"]


def export_snapshot(
    snapshot: object,
    *,
    tracer_provider: Any,
    events: Iterable[Any],
    meter_provider: Any,
    capture_content: bool | None,
) -> int:
    if isinstance(events, str | bytes) or not isinstance(events, Iterable):
        raise InvalidArgumentType(
            f"events must be an iterable of safety events, got {type(events).__name__}", argument="events"
        )
    tracer = Tracer(tracer_provider, meter_provider, capture_content)
    return export_snapshot_with(snapshot, tracer, events=list(events))


def instrument(
    target: object, *, tracer_provider: Any, meter_provider: Any, capture_content: bool | None
) -> OtelHandle:
    export: GraphExport | ContextExport | RunnerExport
    if isinstance(target, ExecutionGraph):
        export = GraphExport(
            target, Tracer(tracer_provider, meter_provider, capture_content), current_context()
        )
    elif isinstance(target, ExecutionContext):
        export = ContextExport(
            target, Tracer(tracer_provider, meter_provider, capture_content), current_context()
        )
    elif isinstance(target, Runner):
        export = RunnerExport(
            target, Tracer(tracer_provider, meter_provider, capture_content), current_context()
        )
    else:
        kind = type(target).__name__
        raise InvalidArgumentType(
            f"target must be an ExecutionGraph, an ExecutionContext or a dag.Runner, got {kind}",
            argument="target",
        )
    return OtelHandle(target, export)

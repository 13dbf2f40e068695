"""OpenTelemetry export of recorded runs (``pip install chainwarden[otel]``; docs/integrations.md).

``export_snapshot`` turns a saved graph snapshot into spans after the fact; ``instrument`` exports a run live
from an ``ExecutionGraph``, a DAG ``Runner`` or (at detach) an ``ExecutionContext``. Spans follow the
OpenTelemetry GenAI semantic conventions. The framework is imported on first use, so importing this module
never requires it.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from types import ModuleType
from typing import Any

from chainwarden._extras import require
from chainwarden.otel._handle import OtelHandle

__all__ = ["OtelHandle", "export_snapshot", "instrument"]


def _impl() -> ModuleType:
    """The implementation module, imported on first use (it imports OpenTelemetry)."""
    require("opentelemetry.trace", "otel")
    return importlib.import_module("chainwarden.otel._api")


def export_snapshot(
    snapshot: object,
    *,
    tracer_provider: Any = None,
    events: Iterable[Any] = (),
    meter_provider: Any = None,
    capture_content: bool | None = None,
) -> int:
    """Emits one span per node of a recorded run and returns the number of spans.

    ``snapshot``: an ``ExecutionGraph.snapshot()`` dict, ``snapshot_json()`` bytes, or
    ``ExecutionContext.get_graph_snapshot()``. ``events``: safety events (``SafetyEvent`` objects or event
    dicts such as ``drain_divergence_events()`` returns), added as span events to the node they name or to
    the root. Nothing is emitted when the snapshot or an event is malformed (``TypeError`` / ``ValueError``).
    The GenAI metrics go to ``meter_provider`` (default: the global one); captured content is exported only
    with ``capture_content=True`` (default: ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``).
    """
    count: int = _impl().export_snapshot(
        snapshot,
        tracer_provider=tracer_provider,
        events=events,
        meter_provider=meter_provider,
        capture_content=capture_content,
    )
    return count


def instrument(
    target: object,
    *,
    tracer_provider: Any = None,
    meter_provider: Any = None,
    capture_content: bool | None = None,
) -> OtelHandle:
    """Exports ``target``'s calls as spans as they happen; returns a handle whose ``detach()`` ends it.

    ``ExecutionGraph``: a span per node, opened when it starts, ended when it ends. DAG ``Runner``: a span
    per executed node under one ``invoke_agent {graph_id}`` span per run (through ``Runner.add_listener``).
    ``ExecutionContext``: its graph has no hook, so its calls are exported when the handle is detached. Spans
    without a recorded parent hang under the span that was current when ``instrument`` was called.
    ``meter_provider`` and ``capture_content`` as for ``export_snapshot``.
    """
    handle: OtelHandle = _impl().instrument(
        target,
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
        capture_content=capture_content,
    )
    return handle

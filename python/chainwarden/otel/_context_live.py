"""Export of an ``ExecutionContext``: its graph lives inside the native chain core and has no observer hook
(docs/containment.md), so the handle exports the chain's graph snapshot and its safety events when it is
detached (or its ``with`` block ends): one span per call, with the calls' own times, no polling."""

from __future__ import annotations

import logging
import threading

from opentelemetry import context as otel_context

from chainwarden.containment import ExecutionContext
from chainwarden.otel._snapshot import export_snapshot_with
from chainwarden.otel._tracer import Tracer

__all__ = ["ContextExport"]

_log = logging.getLogger("chainwarden.otel")


class ContextExport:
    def __init__(self, ctx: ExecutionContext, tracer: Tracer, parent: otel_context.Context) -> None:
        self._ctx = ctx
        self._tracer = tracer
        self._parent = parent
        self._lock = threading.Lock()
        self.exported = 0

    def detach(self) -> None:
        with self._lock:
            try:
                self.exported = export_snapshot_with(
                    self._ctx.get_graph_snapshot_json(),
                    self._tracer,
                    parent=self._parent,
                    events=self._ctx.get_snapshot().events,
                )
            except Exception:
                # Detaching ends a `with` block that may be unwinding the caller's own error: export
                # problems are logged, never raised over it (docs/design.md §22).
                _log.warning("OpenTelemetry export of the chain failed", exc_info=True)

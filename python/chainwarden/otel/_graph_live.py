"""Live export of an ``ExecutionGraph``: a span opens when a node starts and ends when the node ends.

Uses the graph's public hooks (docs/recorder.md): the observer's ``on_node_start`` opens the span, a
subscriber receiving the terminal ``NodeEvent`` closes it. A parent's span is opened on demand from
``graph.node()``, so the root (which fires no start hook) and nodes begun before ``instrument`` still get
their place in the tree; a node seen for the first time already finished (stopped before it ran, or ended
before ``instrument``) is exported whole from its record. Span times are the node's own (``start_ts_ms``,
start + ``elapsed_ms``), the same as a snapshot export.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Final

from opentelemetry import context as otel_context
from opentelemetry.trace import Span, SpanContext

from chainwarden._chain_context import otel_attributes, read_labels
from chainwarden._core import ExecutionGraph, NodeEvent
from chainwarden.otel._mapping import end_attributes, shape
from chainwarden.otel._tracer import Tracer, as_parent
from chainwarden.vocab import ENDED_NODE_STATUSES

__all__ = ["GraphExport"]

_NS_PER_MS: Final = 1_000_000
_TERMINAL: Final = ENDED_NODE_STATUSES
# Span contexts of ended nodes are kept so a child begun later still finds its parent; bounded like the
# graph's own memory (docs/design.md §27), oldest forgotten first (a forgotten parent's child hangs under the
# root).
_ENDED_KEPT: Final = 10_000


class GraphExport:
    """Observer + subscriber pair attached to one graph; ``detach()`` removes both and ends open spans."""

    def __init__(self, graph: ExecutionGraph, tracer: Tracer, parent: otel_context.Context) -> None:
        self._graph = graph
        self._tracer = tracer
        self._parent = parent
        self._chain_id = graph.chain_id
        # node id -> (span, start ns, start attributes: what the metrics of its end need)
        self._open: dict[str, tuple[Span, int, dict[str, Any]]] = {}
        self._context: dict[str, Any] = {}  # the run's context as attributes, read from the root
        self._ended: dict[str, SpanContext] = {}
        self._as_parent: dict[str, otel_context.Context] = {}
        self._root: SpanContext | None = None
        # One lock for the span tables: two threads starting children of a not-yet-open parent open it once.
        self._lock = threading.Lock()
        # The same bound-method object must be removed as was added (the graph compares hooks by identity).
        self._subscriber = self._on_end
        graph.add_observer(self)
        graph.add_subscriber(self._subscriber)

    # -- observer protocol (only the start matters; the subscriber carries the richer end facts) -------------

    def on_node_start(self, node_id: str, operation: str, metadata: object) -> None:
        with self._lock:
            if node_id not in self._open and node_id not in self._ended:
                self._context_of(node_id)

    def on_node_complete(self, node_id: str, cost_usd: float, duration_ms: float) -> None:
        return None

    def on_node_failed(self, node_id: str, error: str) -> None:
        return None

    def on_decision(self, node_id: str, decision: str, reason: str) -> None:
        return None

    # -- spans (lock held) -----------------------------------------------------------------------------------

    def _context_of(self, node_id: str) -> SpanContext | otel_context.Context:
        """The span context of ``node_id``, opening its span (and missing ancestors') from the graph."""
        opened = self._open.get(node_id)
        if opened is not None:
            return opened[0].get_span_context()
        ended = self._ended.get(node_id)
        if ended is not None:
            return ended
        try:
            node = self._graph.node(node_id)
        except KeyError:  # pruned: what is left to hang under is the root
            return self._root if self._root is not None else self._parent
        parent_id = node["parent_id"]
        start_ns = int(node["start_ts_ms"]) * _NS_PER_MS
        if parent_id is None:
            self._context = otel_attributes(read_labels(node["metadata"]))
        parent = self._parent_context(parent_id) if parent_id is not None else self._parent
        started = shape(
            node_id=node_id,
            kind=node["kind"],
            name=node["name"],
            model=node["model"],
            is_agent=parent_id is None,
            chain_id=self._chain_id,
            metadata=node["metadata"],
            context=self._context,
        )
        span = self._tracer.start(started, parent=parent, start_ns=start_ns)
        context = span.get_span_context()
        if parent_id is None:
            self._root = context
        if node["status"] in _TERMINAL:
            _finish_from_record(
                self._tracer, span, started.attributes, node, start_ns=start_ns, now_ns=time.time_ns()
            )
            self._remember(node_id, context)
        else:
            self._open[node_id] = (span, start_ns, started.attributes)
        return context

    def _parent_context(self, node_id: str) -> otel_context.Context:
        """The context a child of ``node_id`` starts in; built once per open parent (a root with many children
        would otherwise build one per child)."""
        cached = self._as_parent.get(node_id)
        if cached is None:
            ref = self._context_of(node_id)
            cached = ref if isinstance(ref, otel_context.Context) else as_parent(ref)
            if node_id in self._open:
                self._as_parent[node_id] = cached
        return cached

    def _remember(self, node_id: str, context: SpanContext) -> None:
        self._ended[node_id] = context
        if len(self._ended) > _ENDED_KEPT:
            del self._ended[next(iter(self._ended))]

    # -- subscriber ------------------------------------------------------------------------------------------

    def _on_end(self, event: NodeEvent) -> None:
        node_id = event.node_id
        with self._lock:
            opened = self._open.pop(node_id, None)
            self._as_parent.pop(node_id, None)
            if opened is None:
                if node_id not in self._ended:
                    self._context_of(node_id)  # first seen finished: exported whole from its record
                return
            self._remember(node_id, opened[0].get_span_context())
        span, start_ns, started = opened
        elapsed = event.elapsed_ms
        end_ns = start_ns + round(elapsed * _NS_PER_MS) if elapsed is not None else time.time_ns()
        retries = 0
        metadata: Any = None
        if event.status != "success" or event.kind == "llm":
            # Retries and metadata are not part of a NodeEvent: read the node for an unsuccessful end, and
            # for a model call (what its integration learnt from the response: id, finish reasons, cache
            # tokens, captured content).
            try:
                record = self._graph.node(node_id)
                retries, metadata = int(record["retries_used"]), record["metadata"]
            except KeyError:
                pass
        self._tracer.finish(
            span,
            start=started,
            attributes=end_attributes(
                status=event.status,
                cost_usd=event.cost_usd,
                tokens_in=event.tokens_in,
                tokens_out=event.tokens_out,
                retries=retries,
                stop_reason=event.stop_reason,
                error_class=event.error_class,
                kind=event.kind,
                model=event.model,
                metadata=metadata,
                capture_content=self._tracer.capture_content,
            ),
            status=event.status,
            stop_reason=event.stop_reason,
            error_class=event.error_class,
            start_ns=start_ns,
            end_ns=max(start_ns, end_ns),
        )

    def detach(self) -> None:
        """Stops listening, then ends the spans still open (the root, unfinished calls) as they stand now."""
        self._graph.remove_observer(self)
        self._graph.remove_subscriber(self._subscriber)
        with self._lock:
            still_open = list(self._open.items())
            self._open.clear()
            self._ended.clear()
            self._as_parent.clear()
        now = time.time_ns()
        for node_id, (span, start_ns, started) in reversed(still_open):  # children before parents
            try:
                node: dict[str, Any] = self._graph.node(node_id)
            except KeyError:
                node = {"status": "running"}
            _finish_from_record(self._tracer, span, started, node, start_ns=start_ns, now_ns=now)


def _finish_from_record(
    tracer: Tracer, span: Span, started: dict[str, Any], node: dict[str, Any], *, start_ns: int, now_ns: int
) -> None:
    """Ends ``span`` with what the node record says (end time, or ``now_ns`` for a node still in flight)."""
    status = str(node["status"])
    end_ms = node.get("end_ts_ms")
    end_ns = int(end_ms) * _NS_PER_MS if end_ms is not None else now_ns
    tracer.finish(
        span,
        start=started,
        attributes=end_attributes(
            status=status,
            cost_usd=node.get("cost_usd", 0.0),
            tokens_in=node.get("tokens_in"),
            tokens_out=node.get("tokens_out"),
            retries=int(node.get("retries_used", 0)),
            stop_reason=node.get("stop_reason"),
            error_class=node.get("error_class"),
            kind=str(node.get("kind", "")),
            model=node.get("model"),
            metadata=node.get("metadata"),
            capture_content=tracer.capture_content,
        ),
        status=status,
        stop_reason=node.get("stop_reason"),
        error_class=node.get("error_class"),
        start_ns=start_ns,
        end_ns=max(start_ns, end_ns),
    )

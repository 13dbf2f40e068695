"""``export_snapshot``: a recorded run as spans, after the fact (docs/integrations.md)."""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry.trace import SpanContext

from chainwarden._chain_context import otel_attributes, read_labels
from chainwarden.otel._mapping import end_attributes, event_fields, shape
from chainwarden.otel._nodes import read_snapshot
from chainwarden.otel._tracer import Tracer, add_events, current_context

__all__ = ["export_snapshot_with"]


def export_snapshot_with(
    snapshot: object,
    tracer: Tracer,
    *,
    parent: otel_context.Context | None = None,
    events: Iterable[Any] = (),
) -> int:
    """Emits one span per node of ``snapshot`` (parents first) and returns how many.

    Nodes whose parent is absent (pruned) hang under the root; the root, and everything when there is no root,
    under ``parent`` (default: the caller's current context). A node still running is exported as it stands,
    ended at the snapshot's time, without an error status."""
    snap = read_snapshot(snapshot)
    # An event goes on the span of the node it names; chain-level events (and those naming a node the snapshot
    # no longer has) on the root, or on the first span when there is no root.
    known = {node.node_id for node in snap.nodes}
    home = snap.root_id if snap.root_id is not None else (snap.nodes[0].node_id if snap.nodes else None)
    by_node: dict[str | None, list[Any]] = {}
    for event in [*snap.events, *events]:
        _, _, _, node_id = event_fields(event)  # validates every event before anything is emitted
        by_node.setdefault(node_id if node_id in known else home, []).append(event)
    base = parent if parent is not None else current_context()
    root = next((node for node in snap.nodes if node.node_id == snap.root_id), None)
    context = otel_attributes(read_labels(root.metadata)) if root is not None else {}
    fallback_end = snap.taken_ns if snap.taken_ns is not None else time.time_ns()
    spans: dict[str, SpanContext] = {}
    for node in snap.nodes:
        is_root = node.node_id == snap.root_id
        if node.parent_id is not None and node.parent_id in spans:
            parent_ref: SpanContext | otel_context.Context = spans[node.parent_id]
        elif not is_root and snap.root_id is not None and snap.root_id in spans:
            parent_ref = spans[snap.root_id]
        else:
            parent_ref = base
        started = shape(
            node_id=node.node_id,
            kind=node.kind,
            name=node.name,
            model=node.model,
            is_agent=is_root,
            chain_id=snap.chain_id,
            metadata=node.metadata,
            context=context,
        )
        span = tracer.start(started, parent=parent_ref, start_ns=node.start_ns)
        add_events(span, by_node.pop(node.node_id, ()))
        tracer.finish(
            span,
            start=started.attributes,
            attributes=end_attributes(
                status=node.status,
                cost_usd=node.cost_usd,
                tokens_in=node.tokens_in,
                tokens_out=node.tokens_out,
                retries=node.retries,
                stop_reason=node.stop_reason,
                error_class=node.error_class,
                kind=node.kind,
                model=node.model,
                metadata=node.metadata,
                capture_content=tracer.capture_content,
            ),
            status=node.status,
            stop_reason=node.stop_reason,
            error_class=node.error_class,
            start_ns=node.start_ns,
            end_ns=max(node.start_ns, node.end_ns if node.end_ns is not None else fallback_end),
        )
        spans[node.node_id] = span.get_span_context()
    return len(snap.nodes)

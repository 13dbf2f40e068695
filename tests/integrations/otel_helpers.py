"""Shared checks for the OpenTelemetry tests: a recorded run and what its spans must look like."""

from __future__ import annotations

from typing import Any

from opentelemetry.sdk.trace import ReadableSpan

from chainwarden import ExecutionGraph


def sample_run(graph: ExecutionGraph) -> dict[str, str]:
    """Root agent -> plan (llm, tokens) -> search (tool, nested, fails); a halted llm; one still running."""
    root = graph.create_root("support_agent", metadata={"ticket": "T-1"})
    plan = graph.begin_node(root, "llm", "plan", model="gpt-4o", running=True)
    search = graph.begin_node(plan, "tool", "web_search", running=True)
    graph.increment_retries(search)
    graph.mark_failure(search, error_class="TimeoutError", stop_reason="deadline")
    graph.mark_success(plan, cost_usd=0.25, tokens_in=1200, tokens_out=300)
    halted = graph.begin_node(root, "llm", "answer", model="claude-x")
    graph.mark_halt(halted, stop_reason="budget_exceeded")
    pending = graph.begin_node(root, "memory_read", "notes", running=True)
    return {"root": root, "plan": plan, "search": search, "halted": halted, "pending": pending}


def parent_node(span: ReadableSpan, by_span_id: dict[int, ReadableSpan]) -> str | None:
    """The chainwarden node id of a span's parent span, or None for a span without one in the set."""
    if span.parent is None or span.parent.span_id not in by_span_id:
        return None
    return str((by_span_id[span.parent.span_id].attributes or {})["chainwarden.node_id"])


def tree(spans: list[ReadableSpan]) -> dict[str, Any]:
    """Per node id: name, kind, parent node id, status, description, attributes, times, event names."""
    by_id = {s.context.span_id: s for s in spans}
    out: dict[str, Any] = {}
    for s in spans:
        attrs = dict(s.attributes or {})
        out[str(attrs["chainwarden.node_id"])] = {
            "name": s.name,
            "kind": s.kind.name,
            "parent": parent_node(s, by_id),
            "status": s.status.status_code.name,
            "description": s.status.description,
            "attributes": attrs,
            "start": s.start_time,
            "end": s.end_time,
            "events": [e.name for e in s.events],
        }
    return out

"""Live OpenTelemetry export: what it adds per recorded node, next to the OTel SDK's own cost of one span.

Three loops of N nodes in one session, all on the real SDK (`TracerProvider` + `SimpleSpanProcessor` over an
exporter that drops the batch, so no I/O is timed):

- `graph`: `begin_node(running=True) + mark_success` on a plain `ExecutionGraph` (the recorder alone);
- `graph+otel`: the same loop with `chainwarden.otel.instrument(graph)` attached (the recorder plus export);
- `sdk-span`: `start_span` + `set_attributes` + `end` with the very attributes the exporter writes;
- `sdk-child-span`: the same as a child of an open span with explicit start and end times, which is what the
  exporter asks of the SDK (a child pays for the parent-based sampler and its context).

Overhead of live export per node = (`graph+otel` - `graph`) / N; the SDK's own cost of one span is
`sdk-span` / N (`sdk-child-span` / N for a nested one).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import NonRecordingSpan, SpanKind, set_span_in_context

from chainwarden import ExecutionGraph
from chainwarden.otel import instrument

N = 10_000

START_ATTRS = {
    "chainwarden.node_id": "n000002",
    "chainwarden.kind": "llm",
    "chainwarden.name": "step",
    "chainwarden.chain_id": "bench",
    "gen_ai.operation.name": "chat",
    "gen_ai.request.model": "gpt-4o",
}
END_ATTRS = {
    "chainwarden.status": "success",
    "chainwarden.cost_usd": 0.001,
    "gen_ai.response.model": "gpt-4o",
    "gen_ai.usage.input_tokens": 10,
    "gen_ai.usage.output_tokens": 20,
}


class DropExporter(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


def provider() -> TracerProvider:
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(DropExporter()))
    return tp


def record(graph: ExecutionGraph, root: str) -> None:
    begin, success = graph.begin_node, graph.mark_success
    for _ in range(N):
        success(begin(root, "llm", "step", "gpt-4o", running=True), 0.001, 10, 20)


@pytest.mark.benchmark(group="otel: live export per recorded node (10k nodes)")
@pytest.mark.parametrize("impl", ["graph", "graph+otel", "sdk-span", "sdk-child-span"])
def test_live_export_overhead(benchmark: Any, impl: str) -> None:
    tp = provider()
    if impl == "sdk-span":
        tracer = tp.get_tracer("bench")

        def spans() -> None:
            start, client = tracer.start_span, SpanKind.CLIENT
            for _ in range(N):
                span = start("chat gpt-4o", kind=client, attributes=START_ATTRS)
                span.set_attributes(END_ATTRS)
                span.end()

        benchmark.pedantic(spans, rounds=5, iterations=1)
    elif impl == "sdk-child-span":
        tracer = tp.get_tracer("bench")
        root = tracer.start_span("invoke_agent run")

        def child_spans() -> None:
            start, client, now = tracer.start_span, SpanKind.CLIENT, time.time_ns
            parent = set_span_in_context(NonRecordingSpan(root.get_span_context()))
            for _ in range(N):
                span = start("chat gpt-4o", parent, client, START_ATTRS, start_time=now())
                span.set_attributes(END_ATTRS)
                span.end(end_time=now())

        benchmark.pedantic(child_spans, rounds=5, iterations=1)
        root.end()
    else:
        handles: list[Any] = []

        def setup() -> tuple[tuple[ExecutionGraph, str], dict[str, Any]]:
            for handle in handles:
                handle.detach()
            graph = ExecutionGraph(chain_id="bench")
            if impl == "graph+otel":
                handles.append(instrument(graph, tracer_provider=tp))
            return (graph, graph.create_root("run")), {}

        benchmark.pedantic(record, setup=setup, rounds=5, iterations=1)
        for handle in handles:
            handle.detach()
    benchmark.extra_info["nodes"] = N
    tp.shutdown()

"""Over the wire: spans exported with the real OTLP/HTTP exporter to a local receiver that decodes them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from chainwarden import ExecutionGraph
from chainwarden.otel import export_snapshot, instrument

from .otel_helpers import sample_run
from .otlp_receiver import OtlpReceiver, attributes

MS = 1_000_000


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as r:
        yield r


def otlp_provider(receiver: OtlpReceiver) -> TracerProvider:
    provider = TracerProvider(resource=Resource.create({"service.name": "chainwarden-test"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=receiver.endpoint, timeout=10)))
    return provider


def by_node(spans: list[Span]) -> dict[str, Span]:
    return {str(attributes(s)["chainwarden.node_id"]): s for s in spans}


@pytest.mark.parametrize("live", [False, True], ids=["snapshot", "live"])
def test_spans_arrive_decoded_with_names_attributes_parents_statuses_and_times(
    receiver: OtlpReceiver, live: bool
) -> None:
    provider = otlp_provider(receiver)
    graph = ExecutionGraph(chain_id="wire")
    if live:
        with instrument(graph, tracer_provider=provider):
            ids = sample_run(graph)
    else:
        ids = sample_run(graph)
        export_snapshot(graph.snapshot_json(), tracer_provider=provider)
    assert provider.force_flush(timeout_millis=10_000)
    provider.shutdown()

    snapshot = graph.snapshot()
    got = by_node(receiver.spans)
    assert set(got) == set(ids.values()) and receiver.requests >= 1
    root, plan, search, halted = (got[ids[k]] for k in ("root", "plan", "search", "halted"))

    assert root.name == "invoke_agent support_agent" and root.parent_span_id == b""
    assert plan.name == "chat gpt-4o" and plan.kind == Span.SPAN_KIND_CLIENT
    assert plan.parent_span_id == root.span_id
    assert search.parent_span_id == plan.span_id
    assert {s.trace_id for s in receiver.spans} == {root.trace_id}

    assert attributes(plan) == {
        "chainwarden.node_id": ids["plan"],
        "chainwarden.kind": "llm",
        "chainwarden.name": "plan",
        "chainwarden.chain_id": "wire",
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "gpt-4o",
        "chainwarden.status": "success",
        "chainwarden.cost_usd": 0.25,
        "gen_ai.usage.input_tokens": 1200,
        "gen_ai.usage.output_tokens": 300,
        "gen_ai.response.model": "gpt-4o",
    }
    assert search.name == "execute_tool web_search" and search.kind == Span.SPAN_KIND_INTERNAL
    assert (search.status.code, search.status.message) == (Status.STATUS_CODE_ERROR, "TimeoutError")
    assert (halted.status.code, halted.status.message) == (Status.STATUS_CODE_ERROR, "budget_exceeded")
    assert plan.status.code == Status.STATUS_CODE_UNSET

    for key in ("plan", "search", "halted"):
        node = snapshot["nodes"][ids[key]]
        span = got[ids[key]]
        assert (span.start_time_unix_nano, span.end_time_unix_nano) == (
            node["start_ts_ms"] * MS,
            node["end_ts_ms"] * MS,
        )

"""export_snapshot: a recorded run as GenAI-convention spans, checked on the real OpenTelemetry SDK."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from opentelemetry import trace

from chainwarden import ExecutionConfig, ExecutionContext, ExecutionGraph
from chainwarden.containment import WrapOptions
from chainwarden.otel import export_snapshot

from .conftest import Spans
from .otel_helpers import sample_run, tree

MS = 1_000_000


def test_one_span_per_node_with_convention_names_attributes_and_parents(spans: Spans) -> None:
    graph = ExecutionGraph(chain_id="chain-7")
    ids = sample_run(graph)
    snapshot = graph.snapshot()
    assert export_snapshot(snapshot, tracer_provider=spans.provider) == 5
    got = tree(spans.finished())
    assert len(got) == 5
    root, plan, search, halted, pending = (
        got[ids[k]] for k in ("root", "plan", "search", "halted", "pending")
    )

    assert (root["name"], root["kind"], root["parent"]) == ("invoke_agent support_agent", "INTERNAL", None)
    assert root["attributes"]["gen_ai.operation.name"] == "invoke_agent"
    assert root["attributes"]["gen_ai.agent.name"] == "support_agent"
    assert root["attributes"]["chainwarden.metadata.ticket"] == "T-1"

    assert (plan["name"], plan["kind"], plan["parent"], plan["status"]) == (
        "chat gpt-4o",
        "CLIENT",
        ids["root"],
        "UNSET",
    )
    assert plan["attributes"] == {
        "chainwarden.node_id": ids["plan"],
        "chainwarden.kind": "llm",
        "chainwarden.name": "plan",
        "chainwarden.chain_id": "chain-7",
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "gpt-4o",
        "chainwarden.status": "success",
        "chainwarden.cost_usd": 0.25,
        "gen_ai.usage.input_tokens": 1200,
        "gen_ai.usage.output_tokens": 300,
        "gen_ai.response.model": "gpt-4o",
    }

    assert (search["name"], search["kind"], search["parent"]) == (
        "execute_tool web_search",
        "INTERNAL",
        ids["plan"],
    )
    assert (search["status"], search["description"]) == ("ERROR", "TimeoutError")
    assert search["attributes"]["gen_ai.tool.name"] == "web_search"
    assert search["attributes"]["error.type"] == "TimeoutError"
    assert search["attributes"]["chainwarden.stop_reason"] == "deadline"
    assert search["attributes"]["chainwarden.retries"] == 1

    assert (halted["name"], halted["status"], halted["description"]) == (
        "chat claude-x",
        "ERROR",
        "budget_exceeded",
    )
    assert halted["attributes"]["chainwarden.status"] == "halt"
    assert "gen_ai.usage.input_tokens" not in halted["attributes"]

    # Still running at snapshot time: exported as it stands, ended at the snapshot's time, no error.
    assert (pending["name"], pending["status"]) == ("memory_read notes", "UNSET")
    assert pending["attributes"]["chainwarden.status"] == "running"
    assert pending["end"] == snapshot["snapshot_ts_ms"] * MS

    # Times are the nodes' own; every span is in one trace.
    for key, node_id in ids.items():
        node = snapshot["nodes"][node_id]
        assert got[node_id]["start"] == node["start_ts_ms"] * MS, key
        if node["end_ts_ms"] is not None:
            assert got[node_id]["end"] == node["end_ts_ms"] * MS, key
    assert len({s.context.trace_id for s in spans.finished()}) == 1


def test_dict_json_bytes_and_str_export_the_same(spans: Spans) -> None:
    graph = ExecutionGraph()
    sample_run(graph)
    snapshot = graph.snapshot()
    results = []
    for form in (snapshot, graph.snapshot_json(), json.dumps(snapshot)):
        spans.exporter.clear()
        assert export_snapshot(form, tracer_provider=spans.provider) == 5
        results.append(
            {
                k: {f: v[f] for f in ("name", "parent", "status", "attributes", "start", "end")}
                for k, v in tree(spans.finished()).items()
            }
        )
    assert results[0] == results[2]
    # snapshot_json() is taken later than snapshot(): only the still-running node's end differs.
    for node_id, expected in results[0].items():
        got = results[1][node_id]
        assert {k: v for k, v in got.items() if k != "end"} == {
            k: v for k, v in expected.items() if k != "end"
        }


def test_context_snapshot_with_safety_events_as_span_events(spans: Spans) -> None:
    ctx = ExecutionContext(ExecutionConfig(max_cost_usd=0.3, max_steps=10, max_retries_total=1))

    def outer() -> None:
        ctx.wrap_tool_call(lambda: None, WrapOptions("lookup"))

    ctx.wrap_llm_call(outer, WrapOptions("draft", cost_estimate_hint=0.2))
    ctx.wrap_llm_call(lambda: None, WrapOptions("rewrite", cost_estimate_hint=0.2))  # refused: budget
    snapshot = ctx.get_graph_snapshot()
    events = ctx.get_snapshot().events
    assert export_snapshot(snapshot, tracer_provider=spans.provider, events=events) == 4
    got = {v["attributes"]["chainwarden.name"]: v for v in tree(spans.finished()).values()}
    assert got["chain_root"]["name"] == "invoke_agent chain_root"
    assert got["lookup"]["parent"] == got["draft"]["attributes"]["chainwarden.node_id"]
    assert (got["rewrite"]["status"], got["rewrite"]["description"]) == ("ERROR", "budget_exceeded")
    # The refused call is its own error span, and the stop event is on it, with its decision and reason.
    assert got["rewrite"]["events"] == ["budget_exceeded"] and got["chain_root"]["events"] == []
    [stop] = [e for s in spans.finished() for e in s.events if e.name == "budget_exceeded"]
    assert stop.attributes is not None
    assert stop.attributes["chainwarden.decision"] == "HALT"
    assert stop.attributes["chainwarden.hook"] == "ExecutionContext"


def test_divergence_events_naming_a_node_land_on_its_span(spans: Spans) -> None:
    graph = ExecutionGraph(cost_rate_threshold_usd_per_sec=0.001)
    root = graph.create_root("run")
    node = graph.begin_node(root, "llm", "pricey", running=True)
    graph.mark_success(node, cost_usd=5.0)
    events = graph.drain_divergence_events()
    assert [e["node_id"] for e in events] == [node]
    export_snapshot(graph.snapshot(), tracer_provider=spans.provider, events=events)
    assert tree(spans.finished())[node]["events"] == ["COST_RATE_EXCEEDED"]


def test_pruned_parent_hangs_its_children_under_the_root(spans: Spans) -> None:
    graph = ExecutionGraph(max_nodes=3)
    root = graph.create_root("run")
    a = graph.begin_node(root, "llm", "a", running=True)
    b = graph.begin_node(a, "tool", "b", running=True)
    graph.mark_success(a, cost_usd=0.0)
    c = graph.begin_node(root, "tool", "c", running=True)  # evicts a, the oldest terminal node
    assert a not in graph and graph.pruned_count == 1
    export_snapshot(graph.snapshot(), tracer_provider=spans.provider)
    got = tree(spans.finished())
    assert (got[b]["parent"], got[c]["parent"]) == (root, root)


def test_exported_under_the_callers_current_span(spans: Spans) -> None:
    graph = ExecutionGraph()
    sample_run(graph)
    tracer = spans.provider.get_tracer("app")
    with tracer.start_as_current_span("request") as outer:
        export_snapshot(graph.snapshot(), tracer_provider=spans.provider)
    exported = [s for s in spans.finished() if s.name != "request"]
    [root] = [s for s in exported if s.name.startswith("invoke_agent")]
    assert root.parent is not None and root.parent.span_id == outer.get_span_context().span_id
    assert {s.context.trace_id for s in exported} == {outer.get_span_context().trace_id}


@pytest.mark.parametrize(
    ("bad", "error", "match"),
    [
        (42, TypeError, "snapshot must be"),
        (b"{not json", ValueError, "not valid JSON"),
        ({"nodes": []}, ValueError, "nodes"),
        ({"nodes": {"n1": {"node_id": "n1", "kind": 3}}}, ValueError, "kind"),
        (
            {
                "nodes": {
                    "n1": {
                        "node_id": "n1",
                        "parent_id": None,
                        "kind": "llm",
                        "name": "x",
                        "start_ts_ms": -1,
                        "status": "success",
                    }
                }
            },
            ValueError,
            "start_ts_ms",
        ),
        (
            {
                "nodes": {
                    "a": {
                        "node_id": "a",
                        "parent_id": "b",
                        "kind": "llm",
                        "name": "x",
                        "start_ts_ms": 1,
                        "status": "success",
                    },
                    "b": {
                        "node_id": "b",
                        "parent_id": "a",
                        "kind": "llm",
                        "name": "y",
                        "start_ts_ms": 1,
                        "status": "success",
                    },
                }
            },
            ValueError,
            "cycle",
        ),
    ],
)
def test_bad_snapshots_are_refused_and_emit_nothing(
    spans: Spans, bad: object, error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        export_snapshot(bad, tracer_provider=spans.provider)
    assert spans.finished() == []


def test_bad_events_and_provider_are_refused_before_any_span(spans: Spans) -> None:
    graph = ExecutionGraph()
    sample_run(graph)
    with pytest.raises(ValueError, match="event_type"):
        export_snapshot(graph.snapshot(), tracer_provider=spans.provider, events=[{"severity": "warn"}])
    with pytest.raises(TypeError, match="events"):
        export_snapshot(graph.snapshot(), tracer_provider=spans.provider, events=42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="tracer_provider"):
        export_snapshot(graph.snapshot(), tracer_provider="nope")
    assert spans.finished() == []


def test_without_a_provider_the_global_one_is_used() -> None:
    # The global provider can be set once per process: check it in a fresh interpreter.
    code = """
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from chainwarden import ExecutionGraph
from chainwarden.otel import export_snapshot
exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)
g = ExecutionGraph()
g.mark_success(g.begin_node(g.create_root("r"), "tool", "t", running=True), cost_usd=0.0)
print(export_snapshot(g.snapshot()), sorted(s.name for s in exporter.get_finished_spans()))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "2 ['execute_tool t', 'invoke_agent r']"


def test_missing_framework_names_the_extra() -> None:
    code = """
import sys
sys.modules["opentelemetry"] = None  # as if the extra were not installed
import chainwarden.otel  # importing the module needs nothing
try:
    chainwarden.otel.export_snapshot({"nodes": {}})
except ImportError as exc:
    print(exc)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert "pip install 'chainwarden[otel]'" in out.stdout


def test_no_op_global_provider_is_harmless() -> None:
    # Without any SDK configured the API's no-op tracer takes the spans: the call still counts them.
    graph = ExecutionGraph()
    sample_run(graph)
    assert isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider | trace.NoOpTracerProvider)
    assert export_snapshot(graph.snapshot()) == 5

"""OpenTelemetry per the GenAI conventions: response facts, cache tokens, the run's context, opt-in content,
the two GenAI metrics and the cost counter, on the real SDK (spans in memory, metrics through an in-memory
reader)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from chainwarden import ExecutionGraph
from chainwarden.containment import ChainMetadata, ExecutionConfig, ExecutionContext, WrapOptions
from chainwarden.dag import ExecutionResult, Graph, Runner
from chainwarden.otel import export_snapshot, instrument

from .conftest import Spans


@pytest.fixture
def meters() -> Iterator[tuple[MeterProvider, InMemoryMetricReader]]:
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    yield provider, reader
    provider.shutdown()


def _points(reader: InMemoryMetricReader) -> dict[str, list[Any]]:
    data = reader.get_metrics_data()
    out: dict[str, list[Any]] = {}
    for resource in data.resource_metrics if data is not None else []:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                out.setdefault(metric.name, []).extend(metric.data.data_points)
    return out


def _provider_call(graph: ExecutionGraph) -> dict[str, str]:
    root = graph.create_root(
        "agent",
        metadata={
            "user_id": "u-1",
            "session_id": "s-1",
            "tags": {"env": "prod"},
            "attributes": {"plan": "pro"},
        },
    )
    call = graph.begin_node(
        root, "llm", "anthropic.messages", model="claude-haiku-4-5-20251001", running=True
    )
    graph.annotate(
        call,
        {
            "provider": "anthropic",
            "request_model": "claude-haiku-4-5",
            "response_id": "msg_01",
            "finish_reasons": ["end_turn"],
            "cache_read_tokens": 1000,
            "cache_write_tokens": 24,
            "content_input": '[{"role": "user", "content": "hi"}]',
            "content_output": "hello",
        },
    )
    graph.mark_success(call, 0.0042, tokens_in=1224, tokens_out=30)
    tool = graph.begin_node(root, "tool", "lookup", metadata={"content_input": "q"}, running=True)
    graph.mark_failure(tool, "TimeoutError")
    graph.mark_success(root, 0.0)
    return {"root": root, "call": call, "tool": tool}


def test_a_model_call_carries_the_conventions_response_and_usage_attributes(spans: Spans) -> None:
    graph = ExecutionGraph(chain_id="c")
    ids = _provider_call(graph)
    export_snapshot(graph.snapshot_json(), tracer_provider=spans.provider)
    got = spans.by_node()
    call = dict(got[ids["call"]].attributes or {})
    assert got[ids["call"]].name == "chat claude-haiku-4-5"  # named after the model asked for
    assert {k: call[k] for k in call if k.startswith("gen_ai.")} == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "anthropic",
        "gen_ai.request.model": "claude-haiku-4-5",
        "gen_ai.response.model": "claude-haiku-4-5-20251001",
        "gen_ai.response.id": "msg_01",
        "gen_ai.response.finish_reasons": ("end_turn",),
        "gen_ai.usage.input_tokens": 1224,
        "gen_ai.usage.output_tokens": 30,
        "gen_ai.usage.cache_read.input_tokens": 1000,
        "gen_ai.usage.cache_creation.input_tokens": 24,
    }
    # Content is opt-in, and the facts are not repeated as plain metadata.
    assert not any(k.startswith("chainwarden.metadata.") for k in call)
    tool = dict(got[ids["tool"]].attributes or {})
    assert tool["error.type"] == "TimeoutError" and "gen_ai.tool.call.arguments" not in tool


def test_the_runs_context_is_on_every_span(spans: Spans) -> None:
    graph = ExecutionGraph(chain_id="c")
    _provider_call(graph)
    export_snapshot(graph.snapshot(), tracer_provider=spans.provider)
    for span in spans.finished():
        attrs = span.attributes or {}
        assert (attrs["user.id"], attrs["session.id"]) == ("u-1", "s-1"), span.name
        assert attrs["chainwarden.tags"] == ("env=prod",) and attrs["chainwarden.attribute.plan"] == "pro"
    root = next(s for s in spans.finished() if s.name == "invoke_agent agent")
    assert not any(k.startswith("chainwarden.metadata.") for k in root.attributes or {})


def test_a_contexts_metadata_reaches_its_spans(spans: Spans) -> None:
    meta = ChainMetadata(request_id="r", chain_id="c", user_id="u-9", session_id="s-9", tags=["beta"])
    ctx = ExecutionContext(ExecutionConfig(1.0, 5, 1), metadata=meta)
    with instrument(ctx, tracer_provider=spans.provider):
        ctx.wrap_llm_call(lambda: None, WrapOptions("draft"))
    assert {
        ((s.attributes or {})["user.id"], (s.attributes or {})["chainwarden.tags"]) for s in spans.finished()
    } == {("u-9", ("beta",))}


def test_captured_content_is_exported_only_when_asked(spans: Spans, monkeypatch: pytest.MonkeyPatch) -> None:
    graph = ExecutionGraph(chain_id="c")
    ids = _provider_call(graph)
    export_snapshot(graph.snapshot(), tracer_provider=spans.provider, capture_content=True)
    call = spans.by_node()[ids["call"]].attributes or {}
    assert call["gen_ai.input.messages"] == '[{"role": "user", "content": "hi"}]'
    assert call["gen_ai.output.messages"] == "hello"
    assert (spans.by_node()[ids["tool"]].attributes or {})["gen_ai.tool.call.arguments"] == "q"
    spans.exporter.clear()
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    export_snapshot(graph.snapshot(), tracer_provider=spans.provider)
    assert "gen_ai.output.messages" in (spans.by_node()[ids["call"]].attributes or {})
    spans.exporter.clear()
    export_snapshot(graph.snapshot(), tracer_provider=spans.provider, capture_content=False)
    assert "gen_ai.output.messages" not in (spans.by_node()[ids["call"]].attributes or {})
    with pytest.raises(TypeError, match="capture_content"):
        export_snapshot(graph.snapshot(), tracer_provider=spans.provider, capture_content="yes")  # type: ignore[arg-type]


def test_token_usage_duration_and_cost_metrics(
    spans: Spans, meters: tuple[MeterProvider, InMemoryMetricReader]
) -> None:
    provider, reader = meters
    graph = ExecutionGraph(chain_id="c")
    with instrument(graph, tracer_provider=spans.provider, meter_provider=provider):
        _provider_call(graph)
    points = _points(reader)
    tokens = {p.attributes["gen_ai.token.type"]: p for p in points["gen_ai.client.token.usage"]}
    assert (tokens["input"].sum, tokens["output"].sum) == (1224, 30)
    assert tokens["input"].attributes["gen_ai.provider.name"] == "anthropic"
    assert tokens["input"].attributes["gen_ai.response.model"] == "claude-haiku-4-5-20251001"
    assert tokens["input"].explicit_bounds[:3] == (1, 4, 16)  # the conventions' buckets
    durations = {p.attributes["gen_ai.operation.name"]: p for p in points["gen_ai.client.operation.duration"]}
    assert set(durations) == {"chat", "execute_tool"}
    assert durations["execute_tool"].attributes["error.type"] == "TimeoutError"
    assert "error.type" not in durations["chat"].attributes and durations["chat"].count == 1
    [cost] = points["chainwarden.cost"]
    assert cost.value == pytest.approx(0.0042)


def _dag() -> Graph:
    g = Graph(graph_id="conv-9")
    with g.mutate() as m:
        m.create_node("user_message", "finished", content="count the rows", node_id="u")
        m.create_node("task", node_id="t", input={"name": "sql"})
        m.create_edge("u", "t", "sequence")
    return g


def _tool(node: dict[str, Any], context: list[dict[str, Any]]) -> ExecutionResult:
    return ExecutionResult.finished(output={"rows": 3})


def _agent(node: dict[str, Any], context: list[dict[str, Any]]) -> ExecutionResult:
    return ExecutionResult.finished(content="3 rows", metadata={"cost_usd": 0.01, "model": "gpt-4o"})


class _Listener:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    def on_claim(self, node: dict[str, Any], context: list[dict[str, Any]]) -> None:
        self.seen.append(("claim", node["node_id"]))

    def on_result(self, node: dict[str, Any], result: ExecutionResult) -> None:
        self.seen.append(("result", result.outcome))

    def on_run_end(self, stats: Any) -> None:
        self.seen.append(("end", str(stats.executed)))


def test_the_runner_tells_its_listeners_and_a_failing_one_never_stops_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    runner = Runner(_dag(), {"task": _tool, "agent_message": _agent})
    listener = _Listener()

    class Broken:
        def on_claim(self, node: object, context: object) -> None:
            raise RuntimeError("listener bug")

    runner.add_listener(listener)
    runner.add_listener(listener)  # once only
    runner.add_listener(Broken())
    with caplog.at_level("WARNING", logger="chainwarden.dag"):
        stats = runner.run_until_idle()
    assert stats.outcomes == {"finished": 2}
    assert listener.seen[:2] == [("claim", "t"), ("result", "finished")]
    assert listener.seen[-1] == ("end", "2") and len(listener.seen) == 5
    assert (
        sum("listener bug" in (r.exc_text or "") or "Broken" in r.getMessage() for r in caplog.records) == 2
    )
    runner.remove_listener(listener)
    with pytest.raises(TypeError, match="on_claim"):
        runner.add_listener(object())


def test_the_runner_exporter_listens_and_ends_the_run_span_with_the_run(spans: Spans) -> None:
    runner = Runner(_dag(), {"task": _tool, "agent_message": _agent})
    handle = instrument(runner, tracer_provider=spans.provider)
    runner.run_until_idle()
    # The run is over: its agent span ended with it, before the handle is detached; nothing was patched.
    names = sorted(s.name for s in spans.finished())
    assert names == ["chat", "execute_tool sql", "invoke_agent conv-9"]  # the model is known only at its end
    assert "_execute" not in vars(runner) and runner._listeners == (handle._export,)  # type: ignore[attr-defined]
    handle.detach()
    assert runner._listeners == ()
    assert len(spans.finished()) == 3


def test_a_contained_runner_puts_its_chains_context_on_its_spans(spans: Spans) -> None:
    meta = ChainMetadata(request_id="r", chain_id="c", user_id="u-dag", tags={"team": "ml"})
    ctx = ExecutionContext(ExecutionConfig(1.0, 10, 1), metadata=meta)
    runner = Runner(_dag(), {"task": _tool, "agent_message": _agent}, execution_context=ctx)
    with instrument(runner, tracer_provider=spans.provider):
        runner.run_until_idle()
    assert {
        ((s.attributes or {})["user.id"], (s.attributes or {})["chainwarden.tags"]) for s in spans.finished()
    } == {("u-dag", ("team=ml",))}

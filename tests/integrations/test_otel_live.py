"""instrument(): live export from an ExecutionGraph, a DAG Runner and an ExecutionContext."""

from __future__ import annotations

import asyncio
import threading

import pytest

from chainwarden import ExecutionConfig, ExecutionContext, ExecutionGraph
from chainwarden.containment import WrapOptions
from chainwarden.dag import ExecutionResult, Graph, Runner
from chainwarden.otel import OtelHandle, export_snapshot, instrument

from .conftest import Spans
from .otel_helpers import sample_run, tree


def comparable(spans: Spans) -> dict[str, dict[str, object]]:
    return {
        node_id: {
            k: v[k] for k in ("name", "kind", "parent", "status", "description", "attributes", "start", "end")
        }
        for node_id, v in tree(spans.finished()).items()
    }


# -- ExecutionGraph ------------------------------------------------------------------------------------------


def test_live_graph_export_matches_the_snapshot_export(spans: Spans) -> None:
    graph = ExecutionGraph(chain_id="live")
    handle = instrument(graph, tracer_provider=spans.provider)
    ids = sample_run(graph)
    pending = ids["pending"]
    graph.mark_success(pending, cost_usd=0.0)
    root = ids["root"]
    graph.mark_success(root, cost_usd=0.0)
    handle.detach()
    live = comparable(spans)

    spans.exporter.clear()
    export_snapshot(graph.snapshot(), tracer_provider=spans.provider)
    assert live == comparable(spans)
    assert len(live) == 5 and live[ids["search"]]["parent"] == ids["plan"]


def test_a_span_ends_when_its_node_ends_not_at_detach(spans: Spans) -> None:
    graph = ExecutionGraph()
    with instrument(graph, tracer_provider=spans.provider):
        root = graph.create_root("agent")
        step = graph.begin_node(root, "llm", "step", model="m", running=True)
        assert spans.finished() == []
        graph.mark_success(step, cost_usd=0.01, tokens_in=3, tokens_out=4)
        [span] = spans.finished()
        assert span.name == "chat m"
        assert span.parent is not None  # its root span is open, not yet exported
        assert (span.attributes or {})["gen_ai.usage.output_tokens"] == 4
    # Detaching ends what is still open: the root, as it stands.
    names = sorted(s.name for s in spans.finished())
    assert names == ["chat m", "invoke_agent agent"]
    assert (spans.by_node()[root].attributes or {})["chainwarden.status"] == "created"


def test_nodes_stopped_before_running_and_begun_before_instrument_are_exported(spans: Spans) -> None:
    graph = ExecutionGraph()
    root = graph.create_root("agent")
    early = graph.begin_node(root, "tool", "early", running=True)  # before instrument
    handle = instrument(graph, tracer_provider=spans.provider)
    never_ran = graph.begin_node(root, "llm", "refused")
    graph.mark_halt(never_ran, stop_reason="step_limit_exceeded")
    graph.mark_failure(early, error_class="ValueError")
    handle.detach()
    got = tree(spans.finished())
    assert (got[never_ran]["status"], got[never_ran]["description"]) == ("ERROR", "step_limit_exceeded")
    assert (got[early]["status"], got[early]["description"]) == ("ERROR", "ValueError")
    assert got[early]["parent"] == got[never_ran]["parent"] == root


def test_detach_stops_export_and_is_idempotent(spans: Spans) -> None:
    graph = ExecutionGraph()
    root = graph.create_root("agent")
    handle = instrument(graph, tracer_provider=spans.provider)
    assert isinstance(handle, OtelHandle) and handle.target is graph and not handle.detached
    graph.mark_success(graph.begin_node(root, "tool", "a", running=True), cost_usd=0.0)
    handle.detach()
    handle.detach()
    count = len(spans.finished())
    graph.mark_success(graph.begin_node(root, "tool", "b", running=True), cost_usd=0.0)
    assert len(spans.finished()) == count == 2
    assert handle.detached and "detached" in repr(handle)


def test_concurrent_nodes_from_threads_each_get_one_span_under_the_root(spans: Spans) -> None:
    graph = ExecutionGraph()
    root = graph.create_root("agent")
    barrier = threading.Barrier(4)

    def work(worker: int) -> None:
        barrier.wait(timeout=10)
        for i in range(50):
            node = graph.begin_node(root, "tool", f"t{worker}", running=True)
            graph.mark_success(node, cost_usd=0.001 * i)

    with instrument(graph, tracer_provider=spans.provider):
        threads = [threading.Thread(target=work, args=(w,)) for w in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
    got = tree(spans.finished())
    assert len(got) == 201
    assert {v["parent"] for k, v in got.items() if k != root} == {root}
    assert len({s.context.span_id for s in spans.finished()}) == 201


def test_instrument_rejects_other_targets_and_providers(spans: Spans) -> None:
    with pytest.raises(TypeError, match="target must be"):
        instrument(object(), tracer_provider=spans.provider)
    graph = ExecutionGraph()
    with pytest.raises(TypeError, match="tracer_provider"):
        instrument(graph, tracer_provider=42)
    # The refused call attached nothing: the graph runs as before and no span appears.
    graph.mark_success(graph.begin_node(graph.create_root("r"), "tool", "t", running=True), cost_usd=0.0)
    assert spans.finished() == []


# -- ExecutionContext ----------------------------------------------------------------------------------------


def test_context_calls_are_exported_at_detach(spans: Spans) -> None:
    ctx = ExecutionContext(ExecutionConfig(max_cost_usd=1.0, max_steps=3, max_retries_total=2))
    with instrument(ctx, tracer_provider=spans.provider):

        def plan() -> None:
            ctx.wrap_tool_call(lambda: None, WrapOptions("search"))

        ctx.wrap_llm_call(plan, WrapOptions("plan", cost_estimate_hint=0.1))
        ctx.wrap_llm_call(lambda: None, WrapOptions("answer", cost_estimate_hint=0.1))
        ctx.wrap_llm_call(lambda: None, WrapOptions("extra"))  # step limit: refused
        assert spans.finished() == []  # no hook inside the chain core: nothing until detach
    got = {v["attributes"]["chainwarden.name"]: v for v in tree(spans.finished()).values()}
    assert set(got) == {"chain_root", "plan", "search", "answer", "extra"}
    assert got["search"]["parent"] == got["plan"]["attributes"]["chainwarden.node_id"]
    assert (got["extra"]["status"], got["extra"]["description"]) == ("ERROR", "step_limit_exceeded")
    assert got["extra"]["events"] == ["step_limit_exceeded"]  # the stop event is on the refused call
    assert got["plan"]["attributes"]["chainwarden.cost_usd"] == 0.1


# -- DAG Runner ----------------------------------------------------------------------------------------------


def _dag() -> Graph:
    g = Graph(graph_id="conv-1")
    with g.mutate() as m:
        m.create_node("user_message", "finished", content="count the rows", node_id="u")
        m.create_node("task", node_id="t", input={"name": "sql", "arguments": {"q": "select 1"}})
        m.create_node("task", node_id="bad", input={"name": "flaky"})
        m.create_edge("u", "t", "sequence")
        m.create_edge("u", "bad", "sequence")
    return g


def _run_tool(node: dict[str, object], context: list[dict[str, object]]) -> ExecutionResult:
    if node["node_id"] == "bad":
        raise ConnectionError("reset by peer")
    return ExecutionResult.finished(output={"result": 3}, metadata={"usage": {"input_tokens": 5}})


def _run_agent(node: dict[str, object], context: list[dict[str, object]]) -> ExecutionResult:
    return ExecutionResult.finished(content="3 rows", metadata={"model": "gpt-4o"})


def test_runner_spans_per_execution_under_one_agent_span(spans: Spans) -> None:
    g = _dag()
    runner = Runner(g, {"task": _run_tool, "agent_message": _run_agent})
    handle = instrument(runner, tracer_provider=spans.provider)
    stats = runner.run_until_idle()
    handle.detach()
    assert stats.outcomes == {"finished": 3, "errored": 1}
    finished = spans.finished()
    [root] = [s for s in finished if s.name == "invoke_agent conv-1"]
    nodes = {(s.attributes or {})["chainwarden.node_id"]: s for s in finished if s is not root}
    assert all(s.parent is not None and s.parent.span_id == root.context.span_id for s in nodes.values())
    assert nodes["t"].name == "execute_tool sql"
    assert (nodes["t"].attributes or {})["gen_ai.usage.input_tokens"] == 5
    assert nodes["bad"].status.status_code.name == "ERROR"
    assert nodes["bad"].status.description == "ConnectionError"
    # Leaf repair appended one agent reply after each task; each links to the task span it follows.
    agents = [
        s for s in nodes.values() if (s.attributes or {})["chainwarden.dag.node_type"] == "agent_message"
    ]
    assert [s.name for s in agents] == ["chat", "chat"]
    linked = {link.context.span_id for a in agents for link in a.links}
    assert {nodes["t"].context.span_id, nodes["bad"].context.span_id} <= linked
    # Detached: the runner is back to itself.
    assert "_execute" not in vars(runner) and "_aexecute" not in vars(runner)


def test_async_runner_exports_sync_and_async_executors_once_each(spans: Spans) -> None:
    async def run_agent(node: dict[str, object], context: list[dict[str, object]]) -> ExecutionResult:
        await asyncio.sleep(0)
        return ExecutionResult.finished(content="ok")

    g = _dag()
    runner = Runner(g, {"task": _run_tool, "agent_message": run_agent})
    with instrument(runner, tracer_provider=spans.provider):
        asyncio.run(runner.arun_until_idle(concurrency=4))
    ids = [
        (s.attributes or {})["chainwarden.node_id"]
        for s in spans.finished()
        if s.name != "invoke_agent conv-1"
    ]
    assert sorted(ids) == sorted(set(ids)) and {"t", "bad"} <= set(ids) and len(ids) == 4


def test_runner_containment_refusal_is_a_halt(spans: Spans) -> None:
    ctx = ExecutionContext(ExecutionConfig(max_cost_usd=1.0, max_steps=1, max_retries_total=1))
    g = Graph(graph_id="conv-2")
    with g.mutate() as m:
        m.create_node("user_message", "finished", content="count the rows", node_id="u")
        m.create_node("task", node_id="t", input={"name": "sql"})
        m.create_edge("u", "t", "sequence")
    runner = Runner(g, {"task": _run_tool, "agent_message": _run_agent}, execution_context=ctx)
    with instrument(runner, tracer_provider=spans.provider):
        runner.run_until_idle()
    # The task used the only step; the agent reply after it was refused by containment.
    by_node = {(s.attributes or {})["chainwarden.node_id"]: s for s in spans.finished()}
    assert (by_node["t"].attributes or {})["chainwarden.status"] == "success"
    [halted] = [s for s in spans.finished() if (s.attributes or {}).get("chainwarden.status") == "halt"]
    assert (halted.name, halted.status.status_code.name) == ("chat", "ERROR")
    assert halted.status.description == "step_limit_exceeded"


def test_live_graph_spans_hang_under_the_span_current_at_instrument(spans: Spans) -> None:
    tracer = spans.provider.get_tracer("app")
    graph = ExecutionGraph()
    with tracer.start_as_current_span("http request") as outer:
        handle = instrument(graph, tracer_provider=spans.provider)
    # The run happens later, outside that span: the trace still hangs under it.
    root = graph.create_root("agent", metadata={"tags": ["a", "b"], "limits": {"steps": 3}})
    graph.mark_success(graph.begin_node(root, "tool", "t", running=True), cost_usd=0.0)
    handle.detach()
    exported = spans.by_node()
    assert exported[root].parent is not None
    assert exported[root].parent.span_id == outer.get_span_context().span_id
    attrs = exported[root].attributes or {}
    # The root's tags are the run's context: exported as such, on every span of the run.
    assert attrs["chainwarden.tags"] == ("a", "b") and "chainwarden.metadata.tags" not in attrs
    assert all((s.attributes or {})["chainwarden.tags"] == ("a", "b") for s in exported.values())
    assert attrs["chainwarden.metadata.limits"] == '{"steps": 3}'


def test_context_and_runner_handles_export_once(spans: Spans) -> None:
    ctx = ExecutionContext(ExecutionConfig(max_cost_usd=1.0, max_steps=3, max_retries_total=1))
    handle = instrument(ctx, tracer_provider=spans.provider)
    ctx.wrap_llm_call(lambda: None, WrapOptions("only"))
    handle.detach()
    handle.detach()
    assert sorted(s.name for s in spans.finished()) == ["chat", "invoke_agent chain_root"]
    spans.exporter.clear()
    runner = Runner(_dag(), {"task": _run_tool, "agent_message": _run_agent})
    runner_handle = instrument(runner, tracer_provider=spans.provider)
    runner_handle.detach()
    runner_handle.detach()
    runner.run_until_idle()  # after detach: not exported
    assert [s.name for s in spans.finished()] == ["invoke_agent conv-1"]


class _BrokenTracer:
    def start_span(self, *args: object, **kwargs: object) -> None:
        raise RuntimeError("collector misconfigured")


class _BrokenProvider:
    def get_tracer(self, *args: object, **kwargs: object) -> _BrokenTracer:
        return _BrokenTracer()


def test_a_failing_tracer_never_stops_a_runner(caplog: pytest.LogCaptureFixture) -> None:
    runner = Runner(_dag(), {"task": _run_tool, "agent_message": _run_agent})
    with pytest.raises(RuntimeError, match="collector"):  # the root span cannot even start: refused up front
        instrument(runner, tracer_provider=_BrokenProvider())
    assert "_execute" not in vars(runner)


def test_export_errors_during_a_run_are_logged_and_the_run_goes_on(
    spans: Spans, caplog: pytest.LogCaptureFixture
) -> None:
    runner = Runner(_dag(), {"task": _run_tool, "agent_message": _run_agent})
    handle = instrument(runner, tracer_provider=spans.provider)
    handle._export._tracer._tracer = _BrokenTracer()  # type: ignore[attr-defined]  # the SDK breaks mid-run
    with caplog.at_level("WARNING", logger="chainwarden.otel"):
        stats = runner.run_until_idle()
    handle.detach()
    assert stats.outcomes == {"finished": 3, "errored": 1}
    assert len([r for r in caplog.records if r.name == "chainwarden.otel"]) == 4


def test_context_export_failure_is_logged_not_raised_over_the_callers_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    ctx = ExecutionContext(ExecutionConfig(max_cost_usd=1.0, max_steps=3, max_retries_total=1))
    handle = instrument(ctx, tracer_provider=_BrokenProvider())
    logs = caplog.at_level("WARNING", logger="chainwarden.otel")
    with logs, pytest.raises(KeyError, match="the caller's"), handle:
        ctx.wrap_llm_call(lambda: None)
        raise KeyError("the caller's own error")
    assert [r.getMessage() for r in caplog.records if r.name == "chainwarden.otel"] == [
        "OpenTelemetry export of the chain failed"
    ]

"""The Runner: executors per node type, outcomes, propagation and repair after each result, containment."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable
from typing import Any

import pytest

from chainwarden.dag import DagInvalidArgumentError, ExecutionResult, Graph, Runner

Node = dict[str, Any]
Ctx = list[dict[str, Any]]


def plan() -> Graph:
    """user -> agent(planner) -> two tools (dependency) -> agent(answer) depending on both tools."""
    g = Graph()
    with g.mutate() as m:
        m.create_node("user_message", "finished", content="weather in Paris and Rome?", node_id="u")
        m.create_node("agent_message", node_id="plan")
        m.create_node("task", node_id="t_paris", input={"name": "weather", "arguments": {"city": "Paris"}})
        m.create_node("task", node_id="t_rome", input={"name": "weather", "arguments": {"city": "Rome"}})
        m.create_node("agent_message", node_id="answer")
        m.create_edge("u", "plan", "sequence")
        m.create_edge("plan", "t_paris", "dependency")
        m.create_edge("plan", "t_rome", "dependency")
        m.create_edge("t_paris", "answer", "dependency")
        m.create_edge("t_rome", "answer", "dependency")
    return g


def agent(node: Node, context: Ctx) -> ExecutionResult:
    return ExecutionResult.finished(content=f"seen {len(context) - 1} earlier nodes")


def tool(node: Node, context: Ctx) -> ExecutionResult:
    return ExecutionResult.finished(
        output={"result": {"city": node["input"]["arguments"]["city"], "temp": 20}}
    )


def test_happy_path_runs_everything_in_dependency_order() -> None:
    g = plan()
    seen: list[str] = []

    def record(fn: Callable[[Node, Ctx], ExecutionResult]) -> Callable[[Node, Ctx], ExecutionResult]:
        def run(node: Node, context: Ctx) -> ExecutionResult:
            seen.append(node["node_id"])
            assert context[-1]["node_id"] == node["node_id"]
            return fn(node, context)

        return run

    stats = Runner(g, {"agent_message": record(agent), "task": record(tool)}).run_until_idle()
    assert seen == ["plan", "t_paris", "t_rome", "answer"]
    assert stats.executed == 4 and stats.outcomes == {"finished": 4}
    assert g.node("answer")["output"] == {"content": "seen 4 earlier nodes"}
    assert g.node("t_rome")["output_preview"] == {"result": '{"city":"Rome","temp":20}'}
    assert g.check_invariants() is None


def test_tick_returns_claimed_ids_in_order() -> None:
    g = plan()
    runner = Runner(g, {"agent_message": agent, "task": tool})
    assert runner.tick() == ["plan"]
    assert runner.tick(limit=1) == ["t_paris"]
    assert runner.tick() == ["t_rome"]
    assert runner.tick() == ["answer"]
    assert runner.tick() == []


def test_a_failing_tool_skips_its_dependents_and_leaves_get_repaired() -> None:
    g = plan()

    def flaky(node: Node, context: Ctx) -> ExecutionResult:
        if node["input"]["arguments"]["city"] == "Rome":
            raise TimeoutError("upstream timed out")
        return tool(node, context)

    stats = Runner(g, {"agent_message": agent, "task": flaky}).run_until_idle()
    rome = g.node("t_rome")
    assert (rome["state"], rome["metadata"]["error"]) == ("errored", "TimeoutError: upstream timed out")
    answer = g.node("answer")
    assert answer["state"] == "skipped"
    assert answer["metadata"]["blocked_by"][0]["node_id"] == "t_rome"
    assert stats.propagated_skips == 1
    # the skipped answer is a terminal non-agent?  No: it is an agent_message, so it is a valid leaf.
    assert g.leaves() == ["answer"]


def test_outcomes_map_to_states() -> None:
    results = {
        "errored": ExecutionResult.errored("e"),
        "rejected": ExecutionResult.rejected("user said no"),
        "cancelled": ExecutionResult.cancelled("stopped"),
    }
    for state, result in results.items():
        g = Graph()
        with g.mutate() as m:
            m.create_node("task", node_id="t")
        Runner(g, {"task": lambda n, c, r=result: r}).tick()
        node = g.node("t")
        assert node["state"] == state
        key = "error" if state == "errored" else "reason"
        assert node["metadata"][key] == result.message
        # a terminal task leaf is repaired with an agent_message after the result
        assert len(g.leaves()) == 1 and g.leaves() != ["t"]


def test_skipped_for_a_running_node_becomes_errored() -> None:
    g = Graph()
    with g.mutate() as m:
        m.create_node("task", node_id="t")
    Runner(g, {"task": lambda n, c: ExecutionResult.skipped("nothing to do")}).tick()
    node = g.node("t")
    assert node["state"] == "errored"
    assert node["metadata"] == {
        "error": "invalid_execution_result_state=skipped_for_running_node",
        "reason": "nothing to do",
    }


def test_missing_executor_and_bad_return_values() -> None:
    g = Graph()
    with g.mutate() as m:
        m.create_node("task", node_id="t")
        m.create_node("agent_message", node_id="a")
        m.create_node("agent_message", node_id="b")
    runner = Runner(g, {"agent_message": lambda n, c: "plain string" if n["node_id"] == "a" else None})
    runner.run_until_idle()
    assert g.node("t")["metadata"]["error"] == "No executor registered for node_type=task"
    assert g.node("a")["metadata"]["error"] == "invalid_execution_result_type=str"
    assert g.node("b")["metadata"]["error"] == "invalid_execution_result_type=NoneType"


def test_unstorable_output_errors_the_node_instead_of_leaving_it_running() -> None:
    g = Graph()
    with g.mutate() as m:
        m.create_node("task", node_id="t")
    Runner(g, {"task": lambda n, c: ExecutionResult.finished(output={"x": math.nan})}).tick()
    node = g.node("t")
    assert node["state"] == "errored"
    assert node["metadata"]["error"].startswith("invalid_execution_result:")


def test_executors_may_mutate_the_graph() -> None:
    g = Graph()
    with g.mutate() as m:
        m.create_node("user_message", "finished", content="hi", node_id="u")
    (first,) = g.leaves()

    def planner(node: Node, context: Ctx) -> ExecutionResult:
        if node["node_id"] == first:
            with g.mutate() as m:
                t = m.create_node("task", input={"name": "lookup"}, node_id="spawned")
                m.create_edge(node["node_id"], t, "dependency")
        return ExecutionResult.finished(content="ok")

    Runner(g, {"agent_message": planner, "task": tool_noargs}).run_until_idle()
    assert g.node("spawned")["state"] == "finished"
    assert all(g.node(leaf)["node_type"] == "agent_message" for leaf in g.leaves())


def tool_noargs(node: Node, context: Ctx) -> ExecutionResult:
    return ExecutionResult.finished(output={"result": "done"})


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, math.nan])
def test_run_limits_are_validated(bad: object) -> None:
    runner = Runner(Graph(), {"task": tool})
    with pytest.raises(DagInvalidArgumentError):
        runner.run_until_idle(max_ticks=bad)  # type: ignore[arg-type]
    with pytest.raises(DagInvalidArgumentError):
        asyncio.run(runner.arun_until_idle(concurrency=bad))  # type: ignore[arg-type]


async def test_async_executors_overlap() -> None:
    g = plan()
    both_started = asyncio.Event()
    running: set[str] = set()

    async def atool(node: Node, context: Ctx) -> ExecutionResult:
        running.add(node["node_id"])
        if len(running) == 2:
            both_started.set()
        # Each tool waits until the other one started: only concurrent execution can finish.
        await asyncio.wait_for(both_started.wait(), timeout=30)
        return tool(node, context)

    async def aagent(node: Node, context: Ctx) -> ExecutionResult:
        await asyncio.sleep(0)
        return agent(node, context)

    stats = await Runner(g, {"agent_message": aagent, "task": atool}).arun_until_idle(concurrency=4)
    assert running == {"t_paris", "t_rome"}
    assert g.node("answer")["state"] == "finished"
    assert stats.outcomes == {"finished": 4}


async def test_async_runner_accepts_sync_executors_and_failures() -> None:
    g = plan()

    async def broken(node: Node, context: Ctx) -> ExecutionResult:
        raise ValueError("no data")

    await Runner(g, {"agent_message": agent, "task": broken}).arun_until_idle(concurrency=1)
    assert g.node("t_paris")["metadata"]["error"] == "ValueError: no data"
    assert g.node("answer")["state"] == "skipped"


class FakeDecision:
    """Mimics an Enum-valued decision: the runner reads `.value`."""

    def __init__(self, value: str) -> None:
        self.value = value


class FakeContext:
    """A small real containment context: a call budget, a record of calls, a halt reason."""

    def __init__(self, max_calls: int) -> None:
        self.max_calls = max_calls
        self.calls: list[tuple[str, object]] = []
        self.halt_reason: str | None = None

    def _wrap(self, kind: str, fn: Callable[[], Any], options: object) -> FakeDecision:
        if len(self.calls) >= self.max_calls:
            self.halt_reason = "step_limit_exceeded"
            return FakeDecision("HALT")
        self.calls.append((kind, options))
        try:
            fn()
        except Exception:
            return FakeDecision("RETRY")
        return FakeDecision("ALLOW")

    def wrap_llm_call(self, fn: Callable[[], Any], options: object = None) -> FakeDecision:
        return self._wrap("llm", fn, options)

    def wrap_tool_call(self, fn: Callable[[], Any], options: object = None) -> FakeDecision:
        return self._wrap("tool", fn, options)

    def get_snapshot(self) -> Any:
        return type("Snap", (), {"abort_reason": self.halt_reason, "events": ()})()


def test_execution_context_wraps_each_call_by_kind() -> None:
    g = plan()
    ctx = FakeContext(max_calls=10)
    runner = Runner(
        g,
        {"agent_message": agent, "task": tool},
        execution_context=ctx,
        wrap_options=lambda node: {"operation_name": node["node_id"]},
    )
    runner.run_until_idle()
    assert ctx.calls == [
        ("llm", {"operation_name": "plan"}),
        ("tool", {"operation_name": "t_paris"}),
        ("tool", {"operation_name": "t_rome"}),
        ("llm", {"operation_name": "answer"}),
    ]
    assert g.node("answer")["state"] == "finished"


def test_containment_halt_errors_the_node() -> None:
    g = plan()
    ctx = FakeContext(max_calls=2)
    Runner(g, {"agent_message": agent, "task": tool}, execution_context=ctx).run_until_idle()
    assert g.node("t_paris")["state"] == "finished"
    rome = g.node("t_rome")
    assert (rome["state"], rome["metadata"]["error"]) == ("errored", "halted:step_limit_exceeded")
    assert g.node("answer")["state"] == "skipped"


def test_contained_executor_failure_is_reported_and_counted() -> None:
    g = Graph()
    with g.mutate() as m:
        m.create_node("task", node_id="t")

    def boom(node: Node, context: Ctx) -> ExecutionResult:
        raise RuntimeError("kaput")

    ctx = FakeContext(max_calls=5)
    Runner(g, {"task": boom}, execution_context=ctx).tick()
    assert ctx.calls == [("tool", None)]
    assert g.node("t")["metadata"]["error"] == "RuntimeError: kaput"


class FakeAsyncContext(FakeContext):
    """Adds the coroutine variants chainwarden's ExecutionContext offers (docs/design.md §6)."""

    async def _awrap(self, kind: str, fn: Callable[[], Any], options: object) -> FakeDecision:
        if len(self.calls) >= self.max_calls:
            self.halt_reason = "budget_exceeded"
            return FakeDecision("HALT")
        self.calls.append((kind, options))
        try:
            await fn()
        except Exception:
            return FakeDecision("RETRY")
        return FakeDecision("ALLOW")

    async def wrap_llm_call_async(self, fn: Callable[[], Any], options: object = None) -> FakeDecision:
        return await self._awrap("llm", fn, options)

    async def wrap_tool_call_async(self, fn: Callable[[], Any], options: object = None) -> FakeDecision:
        return await self._awrap("tool", fn, options)


async def test_async_execution_context_wraps_coroutines() -> None:
    g = plan()

    async def atool(node: Node, context: Ctx) -> ExecutionResult:
        await asyncio.sleep(0)
        return tool(node, context)

    async def aagent(node: Node, context: Ctx) -> ExecutionResult:
        return agent(node, context)

    ctx = FakeAsyncContext(max_calls=3)
    await Runner(g, {"agent_message": aagent, "task": atool}, execution_context=ctx).arun_until_idle()
    assert [kind for kind, _ in ctx.calls] == ["llm", "tool", "tool"]
    answer = g.node("answer")
    assert (answer["state"], answer["metadata"]["error"]) == ("errored", "halted:budget_exceeded")


async def test_sync_only_context_cannot_wrap_coroutines() -> None:
    g = Graph()
    with g.mutate() as m:
        m.create_node("task", node_id="t")

    async def atool(node: Node, context: Ctx) -> ExecutionResult:
        return ExecutionResult.finished(output={"result": 1})

    await Runner(g, {"task": atool}, execution_context=FakeContext(max_calls=5)).arun_until_idle()
    error = g.node("t")["metadata"]["error"]
    assert error == "execution_context cannot wrap coroutines (no wrap_*_call_async)"


async def test_async_callable_objects_are_awaited() -> None:
    g = Graph()
    with g.mutate() as m:
        m.create_node("task", node_id="t")

    class AsyncTool:
        async def __call__(self, node: Node, context: Ctx) -> ExecutionResult:
            await asyncio.sleep(0)
            return ExecutionResult.finished(output={"result": "from a callable object"})

    await Runner(g, {"task": AsyncTool()}).arun_until_idle()
    assert g.node("t")["output"] == {"result": "from a callable object"}


def test_sync_runner_refuses_async_executors_cleanly() -> None:
    g = Graph()
    with g.mutate() as m:
        m.create_node("task", node_id="t")

    async def atool(node: Node, context: Ctx) -> ExecutionResult:
        return ExecutionResult.finished()

    Runner(g, {"task": atool}).tick()
    assert g.node("t")["metadata"]["error"] == "async executor used with the synchronous runner"

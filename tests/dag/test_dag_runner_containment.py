"""The Runner contained by chainwarden's own ExecutionContext: each execution is a wrapped call,
recorded in the context's call graph, and halted when the chain's limits are reached."""

from __future__ import annotations

import asyncio

from chainwarden.containment import ExecutionConfig, ExecutionContext, WrapOptions
from chainwarden.dag import ExecutionResult, Graph, Runner


def tasks(g: Graph, n: int) -> list[str]:
    with g.mutate() as m:
        return [m.create_node("task", node_id=f"t{i}", input={"name": "lookup"}) for i in range(n)]


def test_step_limit_halts_the_third_execution() -> None:
    g = Graph()
    ids = tasks(g, 4)
    ctx = ExecutionContext(config=ExecutionConfig(max_cost_usd=1.0, max_steps=2, max_retries_total=3))
    runner = Runner(
        g,
        {
            "task": lambda n, c: ExecutionResult.finished(output={"result": n["node_id"]}),
            "agent_message": lambda n, c: ExecutionResult.finished(content="summary"),
        },
        execution_context=ctx,
        wrap_options=lambda node: WrapOptions(operation_name=node["node_id"]),
    )
    runner.run_until_idle()
    assert [g.node(i)["state"] for i in ids] == ["finished", "finished", "errored", "errored"]
    assert g.node("t2")["metadata"]["error"] == "halted:step_limit_exceeded"
    graph = ctx.get_graph_snapshot()
    tool_nodes = [n for n in graph["nodes"].values() if n["kind"] == "tool"]
    assert [n["name"] for n in tool_nodes[:2]] == ["t0", "t1"]
    assert [n["status"] for n in tool_nodes] == ["success", "success", "halt", "halt"]
    assert ctx.get_snapshot().step_count == 2


def test_async_executions_are_wrapped_and_cost_is_charged() -> None:
    g = Graph()
    with g.mutate() as m:
        user = m.create_node("user_message", state="finished", content="hi")
        reply = m.create_node("agent_message")
        m.create_edge(user, reply, "sequence")
    ctx = ExecutionContext(config=ExecutionConfig(max_cost_usd=1.0, max_steps=10, max_retries_total=3))

    async def agent(node: dict[str, object], context: list[dict[str, object]]) -> ExecutionResult:
        await asyncio.sleep(0)
        return ExecutionResult.finished(content=f"seen {len(context)} messages")

    runner = Runner(
        g,
        {"agent_message": agent, "task": agent},
        execution_context=ctx,
        wrap_options=lambda node: WrapOptions(operation_name="reply", cost_estimate_hint=0.25),
    )
    asyncio.run(runner.arun_until_idle())
    assert g.node(reply)["state"] == "finished"
    snap = ctx.get_snapshot()
    assert snap.step_count == 1
    assert snap.cost_usd_accumulated == 0.25
    llm = [n for n in ctx.get_graph_snapshot()["nodes"].values() if n["kind"] == "llm"]
    assert [(n["name"], n["status"]) for n in llm] == [("reply", "success")]

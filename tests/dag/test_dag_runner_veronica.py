"""The Runner under veronica-core 3.10's ExecutionContext (the reference chainwarden.containment mirrors)."""

from __future__ import annotations

from veronica_core.containment import ExecutionConfig, ExecutionContext
from veronica_core.containment.types import WrapOptions

from chainwarden.dag import ExecutionResult, Graph, Runner


def test_reference_context_records_calls_and_halts_at_its_step_limit() -> None:
    g = Graph()
    with g.mutate() as m:
        for i in range(4):
            m.create_node("task", node_id=f"t{i}", input={"name": "lookup"})
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
    states = {n: g.node(n)["state"] for n in ("t0", "t1", "t2", "t3")}
    assert states == {"t0": "finished", "t1": "finished", "t2": "errored", "t3": "errored"}
    assert g.node("t2")["metadata"]["error"] == "halted:step_limit_exceeded"
    recorded = [n["name"] for n in ctx.get_graph_snapshot()["nodes"].values() if n["kind"] == "tool"]
    assert recorded[:2] == ["t0", "t1"]

"""Demo section: a conversation DAG with planned tool calls, a failure, propagation, a retry, and Mermaid."""

from __future__ import annotations

from typing import Any, TextIO

from chainwarden.dag import DagError, ExecutionResult, Graph, Runner

Node = dict[str, Any]
Context = list[dict[str, Any]]

TEMPERATURES = {"Paris": 18}


def run(out: TextIO) -> None:
    out.write("== dag ==\n")
    g = Graph(graph_id="demo")
    with g.mutate() as m:
        m.create_node("user_message", "finished", content="Is it warmer in Paris or Rome?", node_id="user")
        m.create_node("agent_message", node_id="plan-1")
        m.create_edge("user", "plan-1", "sequence")
    planner_calls: list[str] = []

    def agent(node: Node, context: Context) -> ExecutionResult:
        if node["node_id"] == "answer":
            seen = [c["payload"]["output_preview"] for c in context if c["node_type"] == "task"]
            return ExecutionResult.finished(content=f"Paris is 18°C; Rome is unknown. Seen: {seen}")
        planner_calls.append(node["node_id"])
        if len(planner_calls) == 1:
            raise ConnectionError("LLM endpoint rate-limited")
        # The planner grows the graph from inside its own execution: two tool calls it depends on,
        # a comparison that needs both, and the final answer after it.
        with g.mutate() as m:
            for city in ("Paris", "Rome"):
                call = {"name": "weather", "arguments": {"city": city}}
                tool = m.create_node("task", input=call, node_id=f"tool-{city.lower()}")
                m.create_edge(node["node_id"], tool, "dependency")
            m.create_node("task", input={"name": "compare", "arguments": {}}, node_id="compare")
            m.create_edge("tool-paris", "compare", "dependency")
            m.create_edge("tool-rome", "compare", "dependency")
            m.create_node("agent_message", node_id="answer")
            m.create_edge("compare", "answer", "sequence")
        return ExecutionResult.finished(content="I will look up both cities, then compare.")

    def tool(node: Node, context: Context) -> ExecutionResult:
        city = node["input"].get("arguments", {}).get("city")
        if node["input"]["name"] == "compare":
            return ExecutionResult.finished(output={"result": "compared"})
        if city not in TEMPERATURES:
            raise TimeoutError(f"weather service timed out for {city}")
        return ExecutionResult.finished(output={"result": {"city": city, "celsius": TEMPERATURES[city]}})

    runner = Runner(g, {"agent_message": agent, "task": tool})
    runner.run_until_idle()
    plan1 = g.node("plan-1")
    out.write(f"planner attempt 1: {plan1['state']} ({plan1['metadata']['error']})\n")

    with g.mutate() as m:
        m.retry("plan-1", new_node_id="plan-2")
    out.write("retry: plan-1 archived, plan-2 pending (attempt 2)\n")

    stats = runner.run_until_idle()
    for node_id in ("plan-2", "tool-paris", "tool-rome", "compare", "answer"):
        node = g.node(node_id)
        why = node["metadata"].get("error") or node["metadata"].get("reason") or ""
        out.write(f"  {node_id:<11} {node['state']:<9} {why}\n")
    blocked = [b["node_id"] for b in g.node("compare")["metadata"]["blocked_by"]]
    out.write(f"propagation: compare skipped, blocked by {blocked}\n")
    out.write(f"runner: {stats.executed} executions, outcomes {dict(sorted(stats.outcomes.items()))}\n")
    try:
        with g.mutate() as m:
            m.retry("tool-rome")
    except DagError as err:
        out.write(f"retrying tool-rome now is refused: {err.code} (its downstream already ended)\n")
    out.write(f"context of the answer: {g.context_ids_for('answer')}\n")
    out.write(g.to_mermaid(include_compressed=True, max_label_chars=48).rstrip("\n") + "\n\n")

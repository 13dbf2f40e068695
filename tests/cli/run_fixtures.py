"""Real runs recorded with the package and saved the way a user saves them, for the CLI tests."""

from __future__ import annotations

import json
from pathlib import Path

from chainwarden import ExecutionGraph
from chainwarden.cli.export import context_snapshot_json
from chainwarden.containment import ChainMetadata, ExecutionConfig, ExecutionContext, WrapOptions
from chainwarden.dag import Graph

# Names a report must show as text, never interpret: markup, Mermaid syntax, quotes, non-ASCII.
HOSTILE = '<script>alert("x")</script> #1 & `tick` [red]bold[/red] é'


def graph_run() -> ExecutionGraph:
    """A small agent run: a plan, three tool calls (one failing after a retry, one halted), an answer."""
    g = ExecutionGraph(chain_id="fixture-chain")
    root = g.create_root("agent_run")
    g.mark_running(root)
    plan = g.begin_node(root, "llm", "plan", model="sim-large", running=True)
    g.mark_success(plan, 0.0042, tokens_in=120, tokens_out=80)
    ok = g.begin_node(plan, "tool", "web_search", running=True)
    g.mark_success(ok, 0.0)
    bad = g.begin_node(plan, "tool", "query_metrics", running=True)
    g.increment_retries(bad)
    g.mark_failure(bad, "TimeoutError", stop_reason="metrics backend timed out")
    halted = g.begin_node(plan, "tool", HOSTILE, running=True)
    g.mark_halt(halted, stop_reason="budget_exceeded")
    answer = g.begin_node(root, "llm", "answer", model="sim-large", running=True)
    g.mark_success(answer, 0.0061, tokens_in=300, tokens_out=150)
    g.mark_success(root, 0.0)
    return g


def save_graph_run(path: Path) -> tuple[ExecutionGraph, Path]:
    g = graph_run()
    doc = json.loads(g.snapshot_json())
    doc["divergence_events"] = g.drain_divergence_events()
    path.write_text(json.dumps(doc), encoding="utf-8")
    return g, path


def save_containment_run(path: Path) -> Path:
    """A chain halted by its cost ceiling on its third call."""
    config = ExecutionConfig(max_cost_usd=0.25, max_steps=10, max_retries_total=2)
    meta = ChainMetadata(request_id="req-fixture", chain_id="fixture-ctx")
    with ExecutionContext(config, metadata=meta) as ctx:
        for name, cost in (("plan", 0.10), ("search", 0.05), ("draft", 0.20), ("polish", 0.05)):
            ctx.wrap_llm_call(lambda: None, WrapOptions(operation_name=name, cost_estimate_hint=cost))
        path.write_bytes(context_snapshot_json(ctx.get_snapshot()))
    return path


def save_dag_run(path: Path) -> tuple[Graph, Path]:
    g = Graph(graph_id="fixture-dag")
    with g.mutate() as m:
        m.create_node("user_message", "finished", content="compare two cities", node_id="ask")
        for city in ("paris", "rome"):
            m.create_node("task", input={"name": "weather", "arguments": {"city": city}}, node_id=f"t-{city}")
            m.create_edge("ask", f"t-{city}", "dependency")
        m.create_node("task", input={"name": "compare", "arguments": {}}, node_id="compare")
        m.create_edge("t-paris", "compare", "dependency")
        m.create_edge("t-rome", "compare", "dependency")
    assert g.claim(10) == ["t-paris", "t-rome"]
    g.mark_finished("t-paris", output={"result": 18})
    g.mark_errored("t-rome", "weather service timed out")
    g.propagate_failures()
    path.write_bytes(g.to_json())
    return g, path


NEEDLE = "reconcile-ledger-7f3a"


def save_big_run(path: Path, calls: int = 100_000) -> tuple[ExecutionGraph, Path, str]:
    """An agent run of ``calls`` calls: steps of one LLM call and 49 tool calls under a root, a few
    failures and halts, metadata on some, and one call named NEEDLE deep in the middle. Returns the graph,
    the file and the needle's node id."""
    g = ExecutionGraph(chain_id=f"big-{calls}")
    root = g.create_root("agent_run", metadata={"user_id": "u-big", "session_id": "s-big", "tags": ["load"]})
    tools = [f"tool_{i}" for i in range(40)]
    needle = ""
    step = root
    for i in range(calls - 1):
        if i % 50 == 0:
            step = g.begin_node(
                root, "llm", "plan", model=("gpt-4o", "claude-haiku-4-5")[i % 2], running=True
            )
            g.mark_success(step, 0.002, tokens_in=800 + i % 97, tokens_out=120)
            continue
        name = NEEDLE if i == calls // 2 + 7 else tools[i % 40]
        node = g.begin_node(step, "tool", name, metadata={"i": i} if i % 10 == 0 else None, running=True)
        if name == NEEDLE:
            needle = node
        if i % 997 == 0:
            g.mark_failure(node, "TimeoutError", stop_reason="backend timed out")
        elif i % 1499 == 0:
            g.mark_halt(node, stop_reason="budget_exceeded")
        else:
            g.mark_success(node, 0.0001 * (i % 7), tokens_in=i % 300, tokens_out=i % 50)
    g.mark_success(root, 0.0)
    path.write_bytes(g.snapshot_json())
    return g, path, needle

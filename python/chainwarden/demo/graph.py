"""Demo section: a simulated agent loop recorded by ExecutionGraph.

The "LLM" and the "tool" are deterministic functions, so the output is the same on
every run and needs no network."""

from __future__ import annotations

from typing import Any, TextIO

from chainwarden import ExecutionGraph

QUESTION = "Which of our three regions had the highest error rate last week?"
REGIONS = ("eu-west", "us-east", "ap-south")
ERROR_RATES = {"eu-west": 0.012, "us-east": 0.031, "ap-south": 0.007}


def fake_llm(prompt: str) -> tuple[str, int, int]:
    """Returns (text, tokens_in, tokens_out); cost follows from the token counts."""
    tokens_in = len(prompt.split()) * 4
    text = f"considered: {prompt[:40]}"
    return text, tokens_in, len(text.split()) * 4


def fake_tool(region: str) -> float:
    if region == "ap-south":
        raise TimeoutError("metrics backend did not answer")
    return ERROR_RATES[region]


def price(tokens_in: int, tokens_out: int) -> float:
    return tokens_in * 3e-6 + tokens_out * 15e-6


def record_run() -> ExecutionGraph:
    g = ExecutionGraph(chain_id="demo-chain")
    root = g.create_root("agent_run", metadata={"question": QUESTION})
    g.mark_running(root)

    plan = g.begin_node(root, "llm", "plan", model="sim-large", running=True)
    _, t_in, t_out = fake_llm(QUESTION)
    g.mark_success(plan, price(t_in, t_out), tokens_in=t_in, tokens_out=t_out)

    rates: dict[str, float] = {}
    for region in REGIONS:
        call = g.begin_node(plan, "tool", "query_metrics", metadata={"region": region}, running=True)
        for attempt in range(2):
            try:
                rates[region] = fake_tool(region)
                g.mark_success(call, 0.0)
                break
            except TimeoutError as exc:
                if attempt == 0:
                    g.increment_retries(call)
                    continue
                g.mark_failure(call, type(exc).__name__, stop_reason=str(exc))

    answer = g.begin_node(root, "llm", "answer", model="sim-large", running=True)
    _, t_in, t_out = fake_llm(f"{QUESTION} data={rates}")
    g.mark_success(answer, price(t_in, t_out), tokens_in=t_in, tokens_out=t_out)
    g.mark_success(root, 0.0)
    return g


def render_tree(snap: dict[str, Any]) -> list[str]:
    children: dict[str | None, list[dict[str, Any]]] = {}
    for node in snap["nodes"].values():
        children.setdefault(node["parent_id"], []).append(node)
    lines: list[str] = []

    def walk(node: dict[str, Any], depth: int) -> None:
        detail = f"{node['kind']:<6} {node['name']:<14} {node['status']}"
        if node["cost_usd"]:
            detail += f" ${node['cost_usd']:.6f}"
        if node["retries_used"]:
            detail += f" retries={node['retries_used']}"
        if node["error_class"]:
            detail += f" {node['error_class']}: {node['stop_reason']}"
        lines.append(f"{'  ' * depth}{node['node_id']} {detail}")
        for child in children.get(node["node_id"], []):
            walk(child, depth + 1)

    for root in children.get(None, []):
        walk(root, 0)
    return lines


def run(out: TextIO) -> None:
    g = record_run()
    snap = g.snapshot()
    out.write("== call graph (ExecutionGraph) ==\n")
    for line in render_tree(snap):
        out.write(line + "\n")
    agg = g.aggregates()
    out.write(
        f"amplification: llm_calls_per_root={agg['llm_calls_per_root']} "
        f"tool_calls_per_root={agg['tool_calls_per_root']} retries_per_root={agg['retries_per_root']}\n"
    )
    out.write(f"total cost: ${agg['total_cost_usd']:.6f}  tokens out: {agg['total_tokens_out']}\n")
    out.write(f"snapshot_json: {len(g.snapshot_json())} bytes\n\n")

"""Demo section: an agent loop stopped by its chain-level cost ceiling."""

from __future__ import annotations

from typing import TextIO

from chainwarden.containment import ChainMetadata, ExecutionConfig, ExecutionContext, WrapOptions
from chainwarden.shield import Decision

# (operation, kind, cost in USD): a research agent that would spend $0.84 if left alone.
PLAN = [
    ("plan", "llm", 0.12),
    ("search", "tool", 0.02),
    ("read", "tool", 0.02),
    ("draft", "llm", 0.18),
    ("critique", "llm", 0.15),
    ("revise", "llm", 0.18),
    ("polish", "llm", 0.17),
]


def run(out: TextIO) -> None:
    out.write("== containment: a chain halted by its cost ceiling ==\n")
    config = ExecutionConfig(max_cost_usd=0.50, max_steps=20, max_retries_total=3)
    meta = ChainMetadata(request_id="req-demo", chain_id="chain-demo", service="research-agent")
    with ExecutionContext(config, metadata=meta) as ctx:
        for name, kind, cost in PLAN:
            wrap = ctx.wrap_llm_call if kind == "llm" else ctx.wrap_tool_call
            decision = wrap(lambda: None, WrapOptions(operation_name=name, cost_estimate_hint=cost))
            spent = ctx.get_snapshot().cost_usd_accumulated
            out.write(
                f"  {kind:<4} {name:<9} ${cost:.2f}  -> {decision.value:<5}  chain total ${spent:.2f}\n"
            )
            if decision is Decision.HALT:
                break
        snap = ctx.get_snapshot()
    spent, ceiling = snap.cost_usd_accumulated, config.max_cost_usd
    out.write(f"steps={snap.step_count} cost=${spent:.2f} (ceiling ${ceiling:.2f})\n")
    out.write("safety events:\n")
    for event in snap.events:
        if event.hook == "ExecutionContext":
            out.write(f"  {event.event_type} [{event.decision.value}] {event.reason}\n")
    halted = [n for n in snap.nodes if n.status != "ok"]
    out.write("halted nodes: " + ", ".join(f"{n.operation_name} ({n.status})" for n in halted) + "\n")
    summary = snap.graph_summary or {}
    llm, tools = summary.get("total_llm_calls"), summary.get("total_tool_calls")
    out.write(f"graph: {llm} llm calls, {tools} tool calls recorded (halted ones included)\n\n")

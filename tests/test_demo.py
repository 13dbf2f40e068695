"""`chainwarden demo` runs end to end and shows what it promises."""

from __future__ import annotations

import subprocess
import sys

from chainwarden.cli import main
from chainwarden.demo import graph


def test_demo_command_runs_every_section() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "chainwarden", "demo"], check=True, capture_output=True, text=True
    ).stdout
    assert "== call graph (ExecutionGraph) ==" in out


def test_graph_section_shows_tree_amplification_and_cost(capsys: object) -> None:
    assert main(["demo", "--only", "graph"]) == 0
    out = capsys.readouterr().out  # type: ignore[attr-defined]
    lines = out.splitlines()
    assert lines[1].startswith("n000001 system agent_run")
    assert any(line.startswith("    n000005 tool   query_metrics  fail") for line in lines)
    assert "llm_calls_per_root=2.0 tool_calls_per_root=3.0 retries_per_root=1.0" in out
    g = graph.record_run()
    assert f"total cost: ${g.aggregates()['total_cost_usd']:.6f}" in out


def test_demo_run_is_deterministic() -> None:
    a = graph.record_run().snapshot()
    b = graph.record_run().snapshot()
    strip = {"start_ts_ms", "end_ts_ms"}
    assert [{k: v for k, v in n.items() if k not in strip} for n in a["nodes"].values()] == [
        {k: v for k, v in n.items() if k not in strip} for n in b["nodes"].values()
    ]


def test_langgraph_section_runs_a_real_graph_billed_once_per_model_call(capsys: object) -> None:
    assert main(["demo", "--only", "langgraph"]) == 0
    out = capsys.readouterr().out  # type: ignore[attr-defined]
    assert "ui: tool_call_start {'tool_call_id': 'call-1', 'name': 'population'" in out
    assert "final: ok=True tokens=1342+29" in out
    assert "billed run-langgraph-1/0/chatcmpl-101" in out and "billed run-langgraph-1/0/chatcmpl-102" in out
    assert "run record: ok, 2 receipts" in out


def test_store_section_two_pools_share_one_store(capsys: object) -> None:
    assert main(["demo", "--only", "store"]) == 0
    out = capsys.readouterr().out  # type: ignore[attr-defined]
    assert "executions: 24 in total for 24 tasks (each exactly once)" in out
    assert "finished: 24/24" in out
    assert "jobs t11 = 121" in out
    assert "  pool-a: " in out and "  pool-b: " in out

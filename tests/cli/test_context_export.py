"""A saved chain loses nothing its graph knew, and every stopped or failed call carries its own reason."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from chainwarden.cli import main
from chainwarden.cli.export import context_snapshot_json
from chainwarden.cli.runfile import parse_run
from chainwarden.containment import (
    ChainMetadata,
    ExecutionConfig,
    ExecutionContext,
    WrapOptions,
    report_cost,
)
from chainwarden.shield import Decision


def busy_chain() -> ExecutionContext:
    """Nested calls with tokens and models, a retried failure, a paid failure, and refusals after them."""
    meta = ChainMetadata(request_id="req-x", chain_id="chain-x", model="gpt-4o")
    ctx = ExecutionContext(
        ExecutionConfig(max_cost_usd=1.0, max_steps=20, max_retries_total=1), metadata=meta
    )

    def plan() -> None:
        ctx.wrap_tool_call(lambda: report_cost(0.01), WrapOptions("search"))
        report_cost(0.25, tokens_in=1200, tokens_out=300)

    def flaky() -> None:
        raise ConnectionError("reset by peer")

    def paid_then_cut() -> None:
        report_cost(0.5, tokens_in=4000)
        raise TimeoutError("stream cut")

    assert ctx.wrap_llm_call(plan, WrapOptions("plan", model="claude-sonnet-4-6")) is Decision.ALLOW
    assert ctx.wrap_llm_call(flaky, WrapOptions("first try")) is Decision.RETRY
    assert ctx.wrap_llm_call(paid_then_cut, WrapOptions("second try")) is Decision.HALT  # no retry left
    assert ctx.wrap_llm_call(lambda: None, WrapOptions("after the stop")) is Decision.HALT
    return ctx


def test_the_export_keeps_what_the_graph_knew() -> None:
    ctx = busy_chain()
    graph = ctx.get_graph_snapshot()["nodes"]
    doc = json.loads(context_snapshot_json(ctx.get_snapshot()))
    run = parse_run(json.dumps(doc))
    assert len(run.calls) == len(doc["nodes"]) == len(graph) - 1  # every call but the chain's root
    for call, record in zip(run.calls, doc["nodes"], strict=True):
        node = graph[call.id]
        parent = node["parent_id"] if node["parent_id"] != ctx.get_graph_snapshot()["root_id"] else None
        assert call.parents == (() if parent is None else (parent,))
        assert (call.tokens_in, call.tokens_out, call.model) == (
            node["tokens_in"],
            node["tokens_out"],
            node["model"],
        ), call
        assert call.cost_usd == node["cost_usd"]
        assert (record["error_class"], record["stop_reason"]) == (node["error_class"], node["stop_reason"])
    by_name = {c.name: c for c in run.calls}
    assert (by_name["plan"].tokens_in, by_name["plan"].model) == (1200, "claude-sonnet-4-6")
    assert by_name["search"].parents == (by_name["plan"].id,)
    assert (by_name["second try"].cost_usd, by_name["second try"].tokens_in) == (0.5, 4000)


def test_each_stopped_call_carries_its_own_reason(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Reasons were paired with the chain's HALT events by position: a retried failure (no event) shifted
    every later reason by one call."""
    path = tmp_path / "chain.json"
    path.write_bytes(context_snapshot_json(busy_chain().get_snapshot()))
    assert main(["inspect", str(path), "--json"]) == 0
    summary: dict[str, Any] = json.loads(capsys.readouterr().out)
    reasons = {h["name"]: (h["status"], h["reason"]) for h in summary["halts"]}
    assert reasons == {
        "first try": ("error", "ConnectionError: reset by peer"),
        "second try": ("error", "provider_error: TimeoutError: stream cut"),
        "after the stop": (
            "halted",
            "retry_budget_exceeded: 1 of 1 retries used, and a failure found none left",
        ),
    }
    assert main(["render", str(path), "-o", str(tmp_path / "report.html")]) == 0
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "ConnectionError: reset by peer" in html
    assert "retry_budget_exceeded: 1 of 1 retries used" in html

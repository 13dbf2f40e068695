"""Exact counters under real threads (docs/design.md §20, §23) and the graph cap (§27)."""

from __future__ import annotations

import math
import threading

import pytest

from chainwarden.containment import ExecutionConfig, ExecutionContext, WrapOptions, report_cost
from chainwarden.shield import Decision

THREADS = 8


def hammer(work: object) -> None:
    barrier = threading.Barrier(THREADS)

    def start() -> None:
        barrier.wait()
        work()  # type: ignore[operator]

    threads = [threading.Thread(target=start) for _ in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not any(t.is_alive() for t in threads)


def test_eight_threads_never_take_retries_past_the_budget() -> None:
    ctx = ExecutionContext(ExecutionConfig(max_cost_usd=1e9, max_steps=100_000, max_retries_total=50))
    decisions: list[Decision] = []
    lock = threading.Lock()

    def flaky() -> None:
        raise ConnectionError("flaky provider")

    def work() -> None:
        mine = [ctx.wrap_llm_call(flaky) for _ in range(200)]
        with lock:
            decisions.extend(mine)

    hammer(work)
    snap = ctx.get_snapshot()
    assert snap.retries_used == 50
    # Every retry the chain counts is on exactly one record, and the graph agrees.
    assert sum(n.retries_used for n in snap.nodes) == 50
    assert snap.graph_summary is not None and snap.graph_summary["total_retries"] == 50
    assert decisions.count(Decision.RETRY) == 50  # the 51st failure found none left: provider_error, HALT
    assert all(d in (Decision.RETRY, Decision.HALT) for d in decisions)


def test_eight_threads_counters_equal_a_recomputation_from_records() -> None:
    ctx = ExecutionContext(ExecutionConfig(max_cost_usd=500.0, max_steps=5_000, max_retries_total=300))
    counter = iter(range(10**9))
    lock = threading.Lock()

    def call() -> None:
        with lock:
            i = next(counter)
        if i % 7 == 0:
            raise TimeoutError("slow")
        report_cost((i % 5) * 0.125)

    def work() -> None:
        for _ in range(150):
            ctx.wrap_llm_call(call, WrapOptions("w", cost_estimate_hint=0.25))

    hammer(work)
    snap = ctx.get_snapshot()
    nodes = list(snap.nodes)
    ok = [n for n in nodes if n.status == "ok"]
    assert snap.step_count == len(ok)
    assert math.isclose(snap.cost_usd_accumulated, math.fsum(n.cost_usd for n in ok), abs_tol=1e-9)
    assert snap.retries_used == sum(n.retries_used for n in nodes)
    assert snap.retries_used <= 300
    assert snap.cost_usd_accumulated <= 500.0 + 0.5  # overshoot bounded by actual - estimate in flight
    assert ctx.reserved_usd == 0.0


def test_the_context_graph_keeps_at_most_max_nodes() -> None:
    ctx = ExecutionContext(
        ExecutionConfig(max_cost_usd=1e9, max_steps=10**9, max_retries_total=10**9), max_nodes=50
    )
    for i in range(400):
        if i % 3 == 0:
            ctx.wrap_tool_call(lambda: (_ for _ in ()).throw(ValueError("x")))  # a counted failure
        else:
            ctx.wrap_llm_call(lambda: report_cost(0.5), WrapOptions(f"op{i}"))
    graph = ctx.get_graph_snapshot()
    assert len(graph["nodes"]) <= 51  # the cap, plus the root it never prunes
    snap = ctx.get_snapshot()
    records = list(snap.nodes)
    assert len(records) == 400 == len(snap.nodes)
    assert records[0].operation_name == "" and records[1].operation_name == "op1"
    assert records[1].cost_usd == 0.5
    assert records[-1] == snap.nodes[-1] == snap.nodes[399]
    ok = [r for r in records if r.status == "ok"]
    assert snap.step_count == len(ok)
    assert math.isclose(snap.cost_usd_accumulated, sum(r.cost_usd for r in ok))
    summary = snap.graph_summary
    assert summary is not None
    assert summary["total_llm_calls"] + summary["total_tool_calls"] == 400  # pruning never lowers aggregates


def test_the_default_cap_is_100_000_and_bad_caps_are_refused() -> None:
    cfg = ExecutionConfig(max_cost_usd=1.0, max_steps=1, max_retries_total=1)
    for bad, error in (
        (0, ValueError),
        (-1, ValueError),
        (2**64, ValueError),
        (1.5, TypeError),
        (True, TypeError),
    ):
        with pytest.raises(error, match="max_nodes"):
            ExecutionContext(cfg, max_nodes=bad)  # type: ignore[arg-type]
    assert ExecutionContext.__init__.__kwdefaults__ == {"cost_of": None, "max_nodes": 100_000}

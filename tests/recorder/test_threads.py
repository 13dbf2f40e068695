"""8 real threads hammer one graph; afterwards every invariant holds exactly."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from chainwarden import ExecutionGraph

THREADS = 8
LIFECYCLES = 50_000
COSTS = (0.5, 0.25, 0.125, 0.0)  # dyadic: sums are exact in any order


def worker(g: ExecutionGraph, root: str, seed: int, errors: list[BaseException]) -> None:
    try:
        parent = root
        for i in range(LIFECYCLES):
            kind = "llm" if i % 3 else "tool"
            n = g.begin_node(parent, kind, f"step{i % 5}", running=(i % 2 == 0))
            if i % 2:
                g.mark_running(n)
            if i % 7 == 0:
                g.increment_retries(n)
            outcome = (i + seed) % 4
            if outcome < 2:
                g.mark_success(n, COSTS[i % 4], tokens_in=i % 11, tokens_out=i % 13)
            elif outcome == 2:
                g.mark_failure(n, "E")
            else:
                g.mark_halt(n, "policy")
            # Chains of depth up to 4, then back to the root.
            parent = n if i % 5 < 3 else root
    except BaseException as exc:
        errors.append(exc)


def reader(g: ExecutionGraph, stop: threading.Event, seen: list[dict[str, Any]]) -> None:
    while not stop.is_set():
        seen.append(g.aggregates())
        g.snapshot_json()


@pytest.mark.slow
def test_concurrent_lifecycles_keep_every_invariant() -> None:
    g = ExecutionGraph()
    root = g.create_root("run")
    errors: list[BaseException] = []
    stop = threading.Event()
    seen: list[dict[str, Any]] = []
    watcher = threading.Thread(target=reader, args=(g, stop, seen))
    threads = [threading.Thread(target=worker, args=(g, root, s, errors)) for s in range(THREADS)]
    watcher.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stop.set()
    watcher.join()
    assert errors == []

    snap = g.snapshot()
    nodes = snap["nodes"]
    assert len(nodes) == THREADS * LIFECYCLES + 1 == len(g)
    assert len(set(nodes)) == len(nodes)
    assert sorted(nodes) == [f"n{i:06d}" for i in range(1, len(nodes) + 1)]
    for n in nodes.values():
        assert n["parent_id"] is None or n["parent_id"] in nodes

    depth: dict[str, int] = {}
    for nid, n in nodes.items():  # creation order: parents first
        depth[nid] = 0 if n["parent_id"] is None else depth[n["parent_id"]] + 1
    terminal = [n for n in nodes.values() if n["status"] in ("success", "fail", "halt")]
    success = [n for n in terminal if n["status"] == "success"]
    agg = snap["aggregates"]
    assert agg["total_cost_usd"] == sum(n["cost_usd"] for n in success)
    assert agg["total_llm_calls"] == sum(n["kind"] == "llm" for n in terminal)
    assert agg["total_tool_calls"] == sum(n["kind"] == "tool" for n in terminal)
    assert agg["total_retries"] == sum(n["retries_used"] for n in terminal)
    assert agg["total_tokens_out"] == sum(n["tokens_out"] or 0 for n in success)
    assert agg["max_depth"] == max(depth.values())
    assert agg["total_llm_calls"] + agg["total_tool_calls"] == THREADS * LIFECYCLES

    # Lock-free reads never went backwards.
    for key in ("total_llm_calls", "total_tool_calls", "total_retries", "total_tokens_out"):
        values = [s[key] for s in seen]
        assert values == sorted(values)


def test_pruning_with_unique_names_under_threads_stays_exact() -> None:
    # Eviction, chunk compaction and name freeing all run under contention
    # (docs/design.md §27); the counters and the cap must still hold exactly.
    g = ExecutionGraph(max_nodes=300)
    root = g.create_root("run")
    per_thread = 20_000
    errors: list[BaseException] = []

    def work(t: int) -> None:
        try:
            for i in range(per_thread):
                n = g.begin_node(root, "tool", f"t{t}-{i}", metadata={"i": i}, running=True)
                if i % 2:
                    g.mark_success(n, 0.5, tokens_out=1)
                else:
                    g.mark_failure(n, f"E{i}", stop_reason=f"r{i}")
        except BaseException as e:  # a panic would surface here as a BaseException
            errors.append(e)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors
    total = 4 * per_thread
    a = g.aggregates()
    assert (a["total_tool_calls"], a["total_cost_usd"], a["total_tokens_out"]) == (
        total,
        total / 4,
        total // 2,
    )
    assert len(g) == 300 and g.pruned_count == total + 1 - 300
    nodes = g.snapshot()["nodes"]
    assert list(nodes) == sorted(nodes) and root in nodes

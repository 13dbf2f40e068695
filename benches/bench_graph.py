"""ExecutionGraph: chainwarden vs veronica-core 3.10.0, plus the empty-native-call floor.

Each group holds the same workload for every implementation; `benches/report.py` turns
the medians into ratios."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from veronica_core.containment import ExecutionGraph as VeronicaGraph

import chainwarden._core
from chainwarden import ExecutionGraph

N_NODES = 100_000
SNAPSHOT_NODES = 10_000
MEMORY_NODES = 1_000_000
CAPPED_NODES = 2_000_000
CAP = 1000

IMPLS: dict[str, Callable[[], Any]] = {"chainwarden": ExecutionGraph, "veronica": VeronicaGraph}


def bench_floor() -> Any:
    """`_BenchFloor` exists only in a `make bench` build (cargo feature `bench-floor`)."""
    cls = getattr(chainwarden._core, "_BenchFloor", None)
    if cls is None:
        pytest.fail(
            "chainwarden._core._BenchFloor is missing: this build lacks the `bench-floor` cargo feature; "
            "run `make bench` (maturin develop --release --features bench-floor)"
        )
    return cls()


def lifecycle_loop(g: Any, root: str, n: int) -> None:
    begin, running, success = g.begin_node, g.mark_running, g.mark_success
    for _ in range(n):
        node = begin(root, "llm", "step")
        running(node)
        success(node, 0.001, 10, 20)


def filled(factory: Callable[[], Any], n: int) -> Any:
    g = factory()
    lifecycle_loop(g, g.create_root("run"), n)
    return g


@pytest.mark.benchmark(group="graph: begin+running+success x 100k")
@pytest.mark.parametrize("impl", ["chainwarden", "veronica", "floor"])
def test_per_node_lifecycle(benchmark: Any, impl: str) -> None:
    def setup() -> tuple[tuple[Any, str], dict[str, Any]]:
        if impl == "floor":
            return (bench_floor(), "n000001"), {}
        g = IMPLS[impl]()
        return (g, g.create_root("run")), {}

    benchmark.extra_info["nodes"] = N_NODES
    benchmark.pedantic(lambda g, root: lifecycle_loop(g, root, N_NODES), setup=setup, rounds=5, iterations=1)


def record_loop(g: Any, root: str, n: int) -> None:
    record = g.record_call
    for _ in range(n):
        record(root, "llm", "step", cost_usd=0.001, tokens_in=10, tokens_out=20)


def dict_rows(root: str, n: int) -> list[dict[str, Any]]:
    """What log ingestion holds: one dict per call, built before the batch is recorded."""
    row = {
        "parent": root,
        "kind": "llm",
        "name": "step",
        "cost_usd": 0.001,
        "tokens_in": 10,
        "tokens_out": 20,
    }
    return [dict(row) for _ in range(n)]


# The same finished call, recorded four ways (docs/recorder.md "Recording finished calls"): `chainwarden` is
# `record_call`, the one-call form, and every other row is compared with it. The reference runs last: after
# its rounds (100k-node graphs of Python dicts, built and freed) the allocator hands out memory differently,
# and a form measured after it was up to 2.4x slower than the same form measured before it.
FINISHED_CALL_FORMS = [
    "chainwarden",
    "chainwarden begin+running+success",
    "rows",
    "veronica begin+running+success",
]


@pytest.mark.benchmark(group="graph: one finished call x 100k (record_call vs three calls vs record_calls)")
@pytest.mark.parametrize("impl", FINISHED_CALL_FORMS)
# Five rounds of 100k reference calls outlast the 15 s test timeout on a loaded machine.
@pytest.mark.timeout(300)
def test_finished_call(benchmark: Any, impl: str) -> None:
    def setup() -> tuple[tuple[Any, ...], dict[str, Any]]:
        g = (VeronicaGraph if impl.startswith("veronica") else ExecutionGraph)()
        root = g.create_root("run")
        if impl == "rows":
            return (g, dict_rows(root, N_NODES)), {}
        return (g, root), {}

    def run(g: Any, arg: Any) -> None:
        if impl == "chainwarden":
            record_loop(g, arg, N_NODES)
        elif impl == "rows":
            g.record_calls(arg)
        else:
            lifecycle_loop(g, arg, N_NODES)

    benchmark.extra_info["nodes"] = N_NODES
    # A first, untimed round: whichever form ran first would otherwise pay for the fresh pages the allocator
    # hands out once (most of a round on this machine), the others reusing them.
    benchmark.pedantic(run, setup=setup, rounds=5, iterations=1, warmup_rounds=1)


@pytest.mark.benchmark(group="graph: snapshot() at 10k nodes")
@pytest.mark.parametrize("impl", ["chainwarden", "veronica"])
def test_snapshot(benchmark: Any, impl: str) -> None:
    g = filled(IMPLS[impl], SNAPSHOT_NODES)
    snap = benchmark(g.snapshot)
    assert len(snap["nodes"]) == SNAPSHOT_NODES + 1


@pytest.mark.benchmark(group="graph: JSON snapshot at 10k nodes")
@pytest.mark.parametrize("impl", ["chainwarden", "veronica"])
def test_snapshot_json(benchmark: Any, impl: str) -> None:
    g = filled(IMPLS[impl], SNAPSHOT_NODES)
    encode = g.snapshot_json if impl == "chainwarden" else lambda: json.dumps(g.snapshot())
    out = benchmark(encode)
    assert len(out) > SNAPSHOT_NODES * 100


@pytest.mark.benchmark(group="graph: aggregates at 10k nodes")
@pytest.mark.parametrize("impl", ["chainwarden", "veronica"])
def test_aggregates(benchmark: Any, impl: str) -> None:
    g = filled(IMPLS[impl], SNAPSHOT_NODES)
    # The reference has no counters-only call: its cheapest route is a full snapshot.
    read = g.aggregates if impl == "chainwarden" else lambda: g.snapshot()["aggregates"]
    assert benchmark(read)["total_llm_calls"] == SNAPSHOT_NODES


MEMORY_SCRIPT = Path(__file__).with_name("memory_per_node.py")


@pytest.mark.benchmark(group="graph: memory per node at 1M nodes")
@pytest.mark.parametrize("impl", ["chainwarden", "veronica"])
def test_memory_per_node(benchmark: Any, impl: str) -> None:
    """RSS growth per node, measured in a fresh interpreter (the time shown is the run)."""
    result: dict[str, float] = {}

    def run() -> None:
        out = subprocess.run(
            [sys.executable, str(MEMORY_SCRIPT), impl, str(MEMORY_NODES)],
            check=True,
            capture_output=True,
            text=True,
        )
        result.update(json.loads(out.stdout))

    benchmark.pedantic(run, rounds=1, iterations=1)
    benchmark.extra_info.update(result)
    assert result["nodes"] == MEMORY_NODES


@pytest.mark.benchmark(group="graph: memory per node under max_nodes=1000, 200k to 2M nodes")
def test_memory_under_max_nodes(benchmark: Any) -> None:
    """RSS growth once the cap is reached (docs/design.md §27); about 0 B per node."""
    result: dict[str, float] = {}

    def run() -> None:
        out = subprocess.run(
            [sys.executable, str(MEMORY_SCRIPT), "chainwarden", str(CAPPED_NODES), str(CAP)],
            check=True,
            capture_output=True,
            text=True,
        )
        result.update(json.loads(out.stdout))

    benchmark.pedantic(run, rounds=1, iterations=1)
    benchmark.extra_info.update(result)
    assert result["max_nodes"] == CAP

"""One measurement round against whichever chainwarden is installed in this interpreter.

Run by benches/abi3_vs_version.py in a venv per wheel; prints one JSON line with nanoseconds per operation:
the recorder loop (begin_node + mark_running + mark_success, as benches/bench_graph.py) and the overhead of a
synchronous ``wrap_llm_call`` over a bare call (as benches/bench_context.py). Best of a few repetitions each,
so a round is not dominated by one interruption of the shared machine."""

from __future__ import annotations

import json
import sys
import time

from chainwarden import ExecutionGraph
from chainwarden.containment import ExecutionConfig, ExecutionContext

NODES = 100_000
CALLS = 100_000
REPEAT = 3


def recorder_ns() -> float:
    best = float("inf")
    for _ in range(REPEAT):
        g = ExecutionGraph()
        root = g.create_root("run")
        begin, running, success = g.begin_node, g.mark_running, g.mark_success
        t0 = time.perf_counter_ns()
        for _ in range(NODES):
            node = begin(root, "llm", "step")
            running(node)
            success(node, 0.001, 10, 20)
        best = min(best, (time.perf_counter_ns() - t0) / NODES)
    return best


def noop() -> None:
    return None


def wrap_overhead_ns() -> tuple[float, float]:
    best_wrap = best_bare = float("inf")
    for _ in range(REPEAT):
        ctx = ExecutionContext(ExecutionConfig(max_cost_usd=1e12, max_steps=10**12, max_retries_total=10))
        wrap = ctx.wrap_llm_call
        t0 = time.perf_counter_ns()
        for _ in range(CALLS):
            wrap(noop)
        best_wrap = min(best_wrap, (time.perf_counter_ns() - t0) / CALLS)
        t0 = time.perf_counter_ns()
        for _ in range(CALLS):
            noop()
        best_bare = min(best_bare, (time.perf_counter_ns() - t0) / CALLS)
    return best_wrap, best_bare


if __name__ == "__main__":
    wrap, bare = wrap_overhead_ns()
    json.dump(
        {"recorder_ns": recorder_ns(), "wrap_ns": wrap, "bare_ns": bare, "overhead_ns": wrap - bare},
        sys.stdout,
    )
    sys.stdout.write("\n")

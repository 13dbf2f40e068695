"""Real threads hammering one context; invariants checked afterwards."""

import threading
import time

from chainwarden.containment import ExecutionConfig, ExecutionContext, WrapOptions
from chainwarden.shield import Decision

THREADS = 8


def run_threads(target: object, count: int = THREADS) -> None:
    barrier = threading.Barrier(count)

    def start() -> None:
        barrier.wait()
        target()  # type: ignore[operator]

    threads = [threading.Thread(target=start) for _ in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def test_eight_threads_exact_steps_and_cost() -> None:
    ctx = ExecutionContext(ExecutionConfig(max_cost_usd=1e9, max_steps=100_000, max_retries_total=100_000))
    opts = WrapOptions("work", cost_estimate_hint=0.125)
    decisions: list[Decision] = []
    lock = threading.Lock()

    def work() -> None:
        mine = [ctx.wrap_llm_call(lambda: None, opts) for _ in range(500)]
        mine += [ctx.wrap_tool_call(lambda: None) for _ in range(100)]
        with lock:
            decisions.extend(mine)

    run_threads(work)
    snap = ctx.get_snapshot()
    assert decisions.count(Decision.ALLOW) == THREADS * 600
    assert snap.step_count == THREADS * 600
    assert snap.cost_usd_accumulated == THREADS * 500 * 0.125
    assert len(snap.nodes) == THREADS * 600
    agg = snap.graph_summary
    assert agg is not None
    assert agg["total_llm_calls"] == THREADS * 500
    assert agg["total_tool_calls"] == THREADS * 100


def test_step_limit_is_never_overshot_under_contention() -> None:
    ctx = ExecutionContext(ExecutionConfig(max_cost_usd=1e9, max_steps=1000, max_retries_total=10))
    allowed = []
    lock = threading.Lock()

    def work() -> None:
        mine = sum(ctx.wrap_llm_call(lambda: None) is Decision.ALLOW for _ in range(400))
        with lock:
            allowed.append(mine)

    run_threads(work)
    assert sum(allowed) == 1000
    assert ctx.get_snapshot().step_count == 1000


def test_retries_counted_exactly_across_threads() -> None:
    ctx = ExecutionContext(ExecutionConfig(max_cost_usd=1.0, max_steps=100_000, max_retries_total=100_000))

    def failing() -> None:
        raise OSError("flaky")

    def work() -> None:
        for _ in range(200):
            ctx.wrap_tool_call(failing)

    run_threads(work)
    snap = ctx.get_snapshot()
    assert snap.retries_used == THREADS * 200
    assert snap.step_count == 0
    assert all(n.status == "error" and n.retries_used == 1 for n in snap.nodes)


def test_abort_from_another_thread_stops_running_workers() -> None:
    ctx = ExecutionContext(ExecutionConfig(max_cost_usd=1e9, max_steps=10_000_000, max_retries_total=10))
    started = threading.Barrier(THREADS + 1)
    halted_after: list[int] = []
    lock = threading.Lock()

    def work() -> None:
        started.wait()
        calls = 0
        while ctx.wrap_llm_call(lambda: None) is Decision.ALLOW:
            calls += 1
        with lock:
            halted_after.append(calls)

    workers = [threading.Thread(target=work) for _ in range(THREADS)]
    for t in workers:
        t.start()
    started.wait()
    ctx.abort("operator stop")
    for t in workers:
        t.join()
    snap = ctx.get_snapshot()
    assert len(halted_after) == THREADS
    assert snap.step_count == sum(halted_after)
    assert snap.aborted and snap.abort_reason == "operator stop"
    assert [e.event_type for e in snap.events if e.hook == "ExecutionContext"] == ["aborted"]
    # The graph keeps every node (the record list is capped): one aborted refusal per worker.
    graph_nodes = list(ctx.get_graph_snapshot()["nodes"].values())[1:]
    assert {(n["status"], n["stop_reason"]) for n in graph_nodes} <= {("success", None), ("halt", "aborted")}
    assert sum(n["stop_reason"] == "aborted" for n in graph_nodes) == THREADS
    assert len(graph_nodes) == snap.step_count + THREADS


def test_nesting_is_tracked_per_thread() -> None:
    ctx = ExecutionContext(ExecutionConfig(max_cost_usd=1.0, max_steps=100_000, max_retries_total=5))

    def outer() -> None:
        for _ in range(3):
            ctx.wrap_tool_call(lambda: None, WrapOptions(f"inner-{threading.get_ident()}"))

    def work() -> None:
        for _ in range(50):
            ctx.wrap_llm_call(outer, WrapOptions(f"outer-{threading.get_ident()}"))

    run_threads(work)
    nodes = list(ctx.get_snapshot().nodes)
    outers = {n.node_id: n.operation_name.removeprefix("outer-") for n in nodes if n.kind == "llm"}
    inners = [n for n in nodes if n.kind == "tool"]
    assert len(outers) == THREADS * 50
    assert len(inners) == THREADS * 150
    # Every inner call hangs under an outer call of its own thread.
    assert all(outers[n.parent_id] == n.operation_name.removeprefix("inner-") for n in inners if n.parent_id)
    assert all(n.parent_id is not None for n in inners)


def test_cost_ceiling_is_never_overshot_by_concurrent_estimated_calls() -> None:
    ctx = ExecutionContext(ExecutionConfig(max_cost_usd=10.0, max_steps=100_000, max_retries_total=5))
    opts = WrapOptions("paid", cost_estimate_hint=0.25)
    allowed: list[int] = []
    lock = threading.Lock()

    def slow() -> None:
        time.sleep(0)  # yield the GIL so calls overlap

    def work() -> None:
        mine = sum(ctx.wrap_llm_call(slow, opts) is Decision.ALLOW for _ in range(100))
        with lock:
            allowed.append(mine)

    run_threads(work)
    snap = ctx.get_snapshot()
    assert sum(allowed) == 40
    assert snap.cost_usd_accumulated == 10.0
    assert snap.step_count == 40

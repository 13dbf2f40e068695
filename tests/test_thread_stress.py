"""Many real threads on one object of each engine, on any build: with the GIL, and free-threaded (3.14t),
where the native module declares `gil_used = false` and nothing but the core's own locks keeps the threads
apart. Every total is checked exactly afterwards: the call graph's aggregates, the context's admitted calls
and cost under its ceiling and step limit, the DAG's nodes and claims (none lost, none twice).

The build is only reported (`sys._is_gil_enabled()`, in each test's properties and failure messages), never a
reason to skip: the same assertions hold on both. The release workflow runs this file against the 3.14t wheel.
With the GIL, the switch interval is shortened so the threads interleave inside the wrappers, not only between
whole calls."""

from __future__ import annotations

import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Literal

import pytest

from chainwarden import ExecutionGraph
from chainwarden.containment import ExecutionConfig, ExecutionContext, WrapOptions, report_cost
from chainwarden.dag import Graph
from chainwarden.shield import Decision

THREADS = 8
GIL = getattr(sys, "_is_gil_enabled", lambda: True)()
BUILD = "GIL enabled" if GIL else "free-threaded (no GIL)"


@pytest.fixture(autouse=True)
def _interleave(record_property: Callable[[str, object], None]) -> Iterator[None]:
    record_property("gil_enabled", GIL)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        yield
    finally:
        sys.setswitchinterval(interval)


def _hammer(work: Callable[[int], None], count: int = THREADS) -> None:
    """Runs `work(i)` on `count` threads started together; re-raises the first error any of them hit."""
    barrier = threading.Barrier(count)
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            barrier.wait()
            work(i)
        except BaseException as error:  # handed to the test thread below
            errors.append(error)

    threads = [threading.Thread(target=run, args=(i,), name=f"stress-{i}") for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise AssertionError(f"{len(errors)} thread(s) failed ({BUILD})") from errors[0]


# -- the call graph ------------------------------------------------------------------------------------------

LIFECYCLES = 8_000
COSTS = (0.5, 0.25, 0.125, 0.0)  # dyadic: any order of addition gives the same exact sum


def test_one_execution_graph_keeps_exact_aggregates() -> None:
    g = ExecutionGraph()
    root = g.create_root("run")
    ids: list[list[str]] = [[] for _ in range(THREADS)]
    stop = threading.Event()
    readings: list[dict[str, object]] = []

    def work(t: int) -> None:
        mine = ids[t]
        for i in range(LIFECYCLES):
            kind: Literal["llm", "tool"] = "llm" if (i + t) % 3 else "tool"
            node = g.begin_node(root, kind, f"step{i % 4}", running=i % 2 == 0)
            mine.append(node)
            if i % 2:
                g.mark_running(node)
            if i % 5 == 0:
                g.increment_retries(node)
            if i % 4 == 3:
                g.mark_failure(node, "E")
            else:
                g.mark_success(node, COSTS[i % 4], tokens_in=1, tokens_out=i % 3)

    def read() -> None:
        while not stop.is_set():
            readings.append(g.aggregates())

    reader = threading.Thread(target=read)
    reader.start()
    try:
        _hammer(work)
    finally:
        stop.set()
        reader.join()

    created = [node for mine in ids for node in mine]
    assert len(set(created)) == THREADS * LIFECYCLES, f"a node id was handed out twice ({BUILD})"
    llm = sum(1 for t in range(THREADS) for i in range(LIFECYCLES) if (i + t) % 3)
    succeeded = [i for i in range(LIFECYCLES) if i % 4 != 3]
    aggregates = g.aggregates()
    assert aggregates["total_llm_calls"] == llm, BUILD
    assert aggregates["total_tool_calls"] == THREADS * LIFECYCLES - llm, BUILD
    assert aggregates["total_cost_usd"] == THREADS * sum(COSTS[i % 4] for i in succeeded), BUILD
    assert aggregates["total_tokens_out"] == THREADS * sum(i % 3 for i in succeeded), BUILD
    assert aggregates["total_retries"] == THREADS * len(range(0, LIFECYCLES, 5)), BUILD
    nodes = g.snapshot()["nodes"]
    assert len(nodes) == THREADS * LIFECYCLES + 1, BUILD
    statuses = Counter(node["status"] for node_id, node in nodes.items() if node_id != root)
    assert statuses == {"success": THREADS * len(succeeded), "fail": THREADS * (LIFECYCLES - len(succeeded))}
    # A reader running beside the writers only ever saw counts that grew.
    calls = [int(str(r["total_llm_calls"])) + int(str(r["total_tool_calls"])) for r in readings]
    assert calls == sorted(calls), f"aggregates went backwards under concurrent writes ({BUILD})"


# -- containment ---------------------------------------------------------------------------------------------

ATTEMPTS = 400  # per thread


def test_one_context_admits_exactly_its_step_limit() -> None:
    steps = 1_000  # below THREADS * ATTEMPTS: most threads are refused at some point
    ctx = ExecutionContext(ExecutionConfig(max_cost_usd=1e9, max_steps=steps, max_retries_total=10))
    ran = Counter[int]()
    lock = threading.Lock()
    decisions: list[list[Decision]] = [[] for _ in range(THREADS)]

    def work(t: int) -> None:
        def call() -> None:
            with lock:
                ran[t] += 1

        options = WrapOptions(f"thread{t}", cost_estimate_hint=0.125)
        decisions[t].extend(ctx.wrap_llm_call(call, options) for _ in range(ATTEMPTS))

    _hammer(work)
    admitted = sum(d.count(Decision.ALLOW) for d in decisions)
    assert admitted == steps, f"{admitted} calls admitted under max_steps={steps} ({BUILD})"
    assert sum(ran.values()) == steps, BUILD
    assert all(ran[t] == decisions[t].count(Decision.ALLOW) for t in range(THREADS)), BUILD
    snapshot = ctx.get_snapshot()
    assert snapshot.step_count == steps
    assert snapshot.cost_usd_accumulated == steps * 0.125


def test_one_context_spends_exactly_its_cost_ceiling() -> None:
    ceiling = 12.5  # exactly 100 calls of 0.125: the 101st would pass it
    ctx = ExecutionContext(ExecutionConfig(max_cost_usd=ceiling, max_steps=1_000_000, max_retries_total=10))
    ran = Counter[int]()
    lock = threading.Lock()
    decisions: list[list[Decision]] = [[] for _ in range(THREADS)]

    def work(t: int) -> None:
        def call() -> None:
            report_cost(0.125)  # the cost reaches this thread's own open call, not another thread's
            with lock:
                ran[t] += 1

        options = WrapOptions(f"thread{t}", cost_estimate_hint=0.125)
        decisions[t].extend(ctx.wrap_llm_call(call, options) for _ in range(ATTEMPTS // 4))

    _hammer(work)
    admitted = sum(d.count(Decision.ALLOW) for d in decisions)
    assert admitted == 100, f"{admitted} calls admitted under a ceiling of {ceiling} ({BUILD})"
    assert sum(ran.values()) == 100, BUILD
    snapshot = ctx.get_snapshot()
    assert snapshot.cost_usd_accumulated == ceiling, BUILD
    assert snapshot.step_count == 100
    assert sum(record.cost_usd or 0.0 for record in snapshot.nodes) == ceiling


def test_each_thread_reports_cost_to_its_own_call() -> None:
    ctx = ExecutionContext(ExecutionConfig(max_cost_usd=1e9, max_steps=1_000_000, max_retries_total=10))
    calls = 500

    def cost(t: int) -> float:
        return 2.0 ** -(t % 4 + 1)  # 0.5, 0.25, 0.125, 0.0625: exact sums

    def work(t: int) -> None:
        def call() -> None:
            report_cost(cost(t))

        # The estimate differs from the reported cost: the settled cost is the one reported.
        options = WrapOptions(f"thread{t}", cost_estimate_hint=1.0)
        for _ in range(calls):
            assert ctx.wrap_llm_call(call, options) is Decision.ALLOW

    _hammer(work)
    records = list(ctx.get_snapshot().nodes)
    assert len(records) == THREADS * calls
    by_thread = Counter(record.operation_name for record in records)
    assert by_thread == {f"thread{t}": calls for t in range(THREADS)}
    wrong = [r for r in records if r.cost_usd != cost(int(r.operation_name.removeprefix("thread")))]
    assert wrong == [], f"{len(wrong)} calls were charged another thread's cost ({BUILD})"
    assert ctx.get_snapshot().cost_usd_accumulated == calls * sum(cost(t) for t in range(THREADS))


# -- the DAG -------------------------------------------------------------------------------------------------

CREATORS = THREADS // 2
BLOCKS = 400  # per creator, two tasks each: the second depends on the first


def test_one_dag_graph_loses_and_duplicates_no_node_or_claim() -> None:
    # Without leaf repair every node is one a creator made: how many repairs a run gets depends on when the
    # last block commits relative to the claims (docs/dag.md "Leaves"), and the totals here are exact.
    g = Graph(leaf_repair=False)
    expected = CREATORS * BLOCKS * 2
    created: list[list[str]] = [[] for _ in range(CREATORS)]
    claimed: list[list[str]] = [[] for _ in range(THREADS - CREATORS)]
    finished = Counter[str]()
    lock = threading.Lock()
    # A liveness guard, not a timed assert: a lost ready node would otherwise leave the claimers waiting
    # forever.
    deadline = time.monotonic() + 10

    def create(c: int) -> None:
        for b in range(BLOCKS):
            with g.mutate() as m:
                first = m.create_node("task", input={"creator": c, "block": b})
                second = m.create_node("task", node_id=f"c{c}-b{b}-second")
                m.create_edge(first, second, "dependency")
            created[c] += [first, second]

    def claim(w: int) -> None:
        while time.monotonic() < deadline:
            with lock:
                if sum(finished.values()) >= expected:
                    return
            got = g.claim(3)
            for node in got:
                claimed[w].append(node)
                assert g.mark_finished(node, content=w)
                with lock:
                    finished[node] += 1

    def work(i: int) -> None:
        if i < CREATORS:
            create(i)
        else:
            claim(i - CREATORS)

    _hammer(work)
    made = [node for mine in created for node in mine]
    assert len(made) == expected and len(set(made)) == expected, f"a node id was handed out twice ({BUILD})"
    taken = Counter(node for mine in claimed for node in mine)
    assert [n for n, count in taken.items() if count > 1] == [], f"a node was claimed twice ({BUILD})"
    assert set(taken) == set(made), f"{expected - len(taken)} ready nodes were never claimed ({BUILD})"
    nodes = g.nodes()
    assert len(nodes) == expected
    assert Counter(node["state"] for node in nodes) == {"finished": expected}
    events = Counter(event["event_type"] for event in g.events())
    assert events["node_created"] == expected and events["edge_created"] == expected // 2

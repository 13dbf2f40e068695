"""Workers and the round-trip floor, side by side with raw SQL doing the same work, in one run:

- a committed change on PostgreSQL (a `mutate()` creating one node: lock, catch-up, one node row, one event
  row, the change id and the version) against one raw psycopg transaction writing the same rows — plainly,
  one statement per round trip, and pipelined (`conn.pipeline()`, the least a psycopg user writes);
- a wrapped call with a `PostgresBudgetBackend` (reserve before, settle after) against two bare statements;
- tasks/s of 4 `WorkerPool` processes against 1 on one graph, with a sleep-bound executor.

    .venv/bin/python benches/workers.py      # CHAINWARDEN_TEST_POSTGRES_DSN, else a throwaway server
Medians of several rounds; results go to benches/README.md ("Workers and the round-trip floor").
"""

from __future__ import annotations

import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "dag" / "store"))
sys.path.insert(0, str(ROOT / "tests"))

import psycopg  # noqa: E402

from chainwarden.containment import ExecutionConfig, ExecutionContext, PostgresBudgetBackend, WrapOptions  # noqa: E402
from chainwarden.dag import ExecutionResult, Store, WorkerPool  # noqa: E402

CHANGES = 200
WRAPS = 500
POOL_TASKS = 640
SLEEP_S = 0.05
ROUNDS = 7


def per_op(fns: dict[str, Callable[[], None]], n: int) -> dict[str, float]:
    """Seconds per call of each function: medians of ROUNDS rounds, the functions taking turns round by
    round (a shared machine's load then weighs on all of them alike)."""
    for fn in fns.values():
        for _ in range(20):
            fn()
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(ROUNDS):
        for name, fn in fns.items():
            start = time.perf_counter()
            for _ in range(n):
                fn()
            times[name].append((time.perf_counter() - start) / n)
    return {name: statistics.median(t) for name, t in times.items()}


def store_url(dsn: str, schema: str) -> str:
    from store_urls import postgres_url  # noqa: PLC0415

    os.environ["CHAINWARDEN_TEST_POSTGRES_DSN"] = dsn
    return postgres_url(schema)


# ---- a committed change ------------------------------------------------------------------------------------

RECORD = json.dumps(
    {
        "node_id": "x" * 36,
        "node_type": "task",
        "state": "pending",
        "input": {},
        "output": {},
        "output_preview": {},
        "metadata": {},
        "retry_of_id": None,
        "compressed_by_id": None,
        "compressed_at": None,
        "started_at": None,
        "finished_at": None,
        "created_at": 1.7e9,
    }
)
EVENT = json.dumps(
    {
        "event_type": "node_created",
        "subject_id": "x" * 36,
        "particulars": {"state": "pending"},
        "created_at": 1.7e9,
    }
)


def committed_changes(dsn: str) -> dict[str, float]:
    url = store_url(dsn, f"bw_{uuid.uuid4().hex[:8]}")
    store = Store.open(url)
    g = store.create_graph("store")
    store.create_graph("raw")
    counter = [0]

    def change() -> None:
        counter[0] += 1
        with g.mutate() as m:
            m.create_node("task", node_id=f"n{counter[0]:06d}")

    conn = psycopg.connect(url, autocommit=True)
    cur = conn.cursor()
    seq = [0]

    def rows(version: int) -> tuple[tuple[Any, ...], ...]:
        seq[0] += 1
        return (
            ("raw", seq[0], f"raw{seq[0]}", version, RECORD),
            ("raw", seq[0], version, EVENT),
            ("raw", version, uuid.uuid4().hex),
            (version, "raw"),
        )

    upsert = (
        "INSERT INTO chainwarden_dag_nodes (graph_id, seq, node_id, version, record) "
        "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (graph_id, seq) "
        "DO UPDATE SET record = excluded.record, version = excluded.version"
    )
    event = "INSERT INTO chainwarden_dag_events (graph_id, seq, version, record) VALUES (%s, %s, %s, %s)"
    change_row = "INSERT INTO chainwarden_dag_changes (graph_id, version, change_id) VALUES (%s, %s, %s)"
    bump = "UPDATE chainwarden_dag_graphs SET version = %s WHERE graph_id = %s"
    lock = "SELECT version FROM chainwarden_dag_graphs WHERE graph_id = %s FOR UPDATE"

    def plain() -> None:
        cur.execute("BEGIN")
        cur.execute(lock, ("raw",))
        node, ev, ch, up = rows(cur.fetchone()[0] + 1)
        cur.execute(upsert, node)
        cur.execute(event, ev)
        cur.execute(change_row, ch)
        cur.execute(bump, up)
        cur.execute("COMMIT")

    def pipelined() -> None:
        with conn.pipeline():
            cur.execute("BEGIN")
            cur.execute(lock, ("raw",))
        node, ev, ch, up = rows(cur.fetchone()[0] + 1)
        with conn.pipeline():
            cur.execute(upsert, node)
            cur.execute(event, ev)
            cur.execute(change_row, ch)
            cur.execute(bump, up)
            cur.execute("COMMIT")

    times = per_op({"store": change, "raw_plain": plain, "raw_pipelined": pipelined}, CHANGES)
    conn.close()
    store.close()
    return times


# ---- a wrapped call with the PostgreSQL budget -------------------------------------------------------------


def budget_wraps(dsn: str) -> dict[str, float]:
    backend = PostgresBudgetBackend(dsn, key=f"bench-{uuid.uuid4().hex}")
    ctx = ExecutionContext(ExecutionConfig(1e9, 10**9, 10**9, budget_backend=backend))
    options = WrapOptions("call", cost_estimate_hint=0.001)

    def wrapped() -> None:
        ctx.wrap_llm_call(lambda: None, options)

    backend.get()  # its tables exist from here on
    conn = psycopg.connect(dsn, autocommit=True)
    key = f"bare-{uuid.uuid4().hex}"
    conn.execute("INSERT INTO chainwarden_budget (key) VALUES (%s)", (key,))
    statement = "UPDATE chainwarden_budget SET spent = spent + %s WHERE key = %s RETURNING spent"

    def two_bare() -> None:
        conn.execute(statement, (0.001, key)).fetchone()
        conn.execute(statement, (0.0, key)).fetchone()

    times = per_op({"wrap": wrapped, "two_bare": two_bare}, WRAPS)
    conn.execute("DELETE FROM chainwarden_budget WHERE key = %s", (key,))
    conn.close()
    backend.reset()
    backend.close()
    return times


# ---- 4 pools against 1 -------------------------------------------------------------------------------------


def _sleep(node: dict[str, Any], context: list[dict[str, Any]]) -> ExecutionResult:
    time.sleep(SLEEP_S)
    return ExecutionResult.finished()


def _serve(url: str, worker_id: str, ready: Any, stop: Any) -> None:
    """A pool process: serves the store until `stop` is set."""
    with Store.open(url) as store:
        pool = WorkerPool(
            store, {"task": _sleep}, worker_id=worker_id, concurrency=4, lease_s=30, poll_s=0.05
        )
        threading.Thread(target=lambda: (stop.wait(), pool.stop()), daemon=True).start()
        ready.set()
        pool.run()


def pools_rate(url: str, pools: int) -> float:
    """Tasks/s of `pools` pools already serving the store: from the commit of a graph of POOL_TASKS tasks to
    the last one finished (process start-up is not counted)."""
    ctx = multiprocessing.get_context("spawn")
    stop = ctx.Event()
    readies = [ctx.Event() for _ in range(pools)]
    procs = [ctx.Process(target=_serve, args=(url, f"w{i}", readies[i], stop)) for i in range(pools)]
    for p in procs:
        p.start()
    try:
        for ready in readies:
            assert ready.wait(60)
        time.sleep(0.5)  # every pool idle, listening
        with Store.open(url) as store:
            gid = f"g{pools}-{uuid.uuid4().hex[:6]}"
            g = store.create_graph(gid, leaf_repair=False)
            start = time.perf_counter()
            with g.mutate() as m:
                for i in range(POOL_TASKS):
                    m.create_node("task", node_id=f"t{i:05d}")
            while True:
                index = store._work([gid], 1)
                if not index.graphs and not index.leased:
                    break
                time.sleep(0.01)
            elapsed = time.perf_counter() - start
            assert all(n["state"] == "finished" for n in store.load(gid).nodes())
    finally:
        stop.set()
        for p in procs:
            p.join(60)
    return POOL_TASKS / elapsed


def pools(url: str) -> dict[str, float]:
    one = statistics.median(pools_rate(url, 1) for _ in range(3))
    four = statistics.median(pools_rate(url, 4) for _ in range(3))
    return {"one": one, "four": four}


def main() -> None:
    dsn = os.environ.get("CHAINWARDEN_TEST_POSTGRES_DSN")
    server = None
    if not dsn:
        server = subprocess.run(
            [str(ROOT / "scripts" / "postgres-up.sh")], check=True, capture_output=True, text=True
        ).stdout.strip()
        dsn = f"host={server} port=5432 user=postgres dbname=postgres"
    try:
        print(f"start: {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())} load {os.getloadavg()}")
        c = committed_changes(dsn)
        best_raw = min(c["raw_plain"], c["raw_pipelined"])
        print(
            f"committed change (PostgreSQL): store {c['store'] * 1e6:.0f} µs, "
            f"raw plain {c['raw_plain'] * 1e6:.0f} µs, "
            f"raw pipelined {c['raw_pipelined'] * 1e6:.0f} µs: {c['store'] / best_raw:.2f}x the faster raw "
            "(goal <= 1.5x)"
        )
        b = budget_wraps(dsn)
        print(
            f"wrapped call, PostgreSQL budget: {b['wrap'] * 1e6:.0f} µs, two bare statements "
            f"{b['two_bare'] * 1e6:.0f} µs: {b['wrap'] / b['two_bare']:.2f}x (goal <= 2x)"
        )
        for kind in ("postgres", "sqlite"):
            if kind == "postgres":
                url = store_url(dsn, f"bp_{uuid.uuid4().hex[:8]}")
            else:
                tmp = Path(os.environ.get("TMPDIR", "/tmp"))
                url = f"sqlite:///{tmp / f'bench-pools-{uuid.uuid4().hex[:8]}.db'}"
            p = pools(url)
            print(
                f"{kind}: 4 pools {p['four']:.0f} tasks/s, 1 pool {p['one']:.0f} tasks/s "
                f"({SLEEP_S * 1000:.0f} ms sleep per task, concurrency 4 each): {p['four'] / p['one']:.2f}x "
                "(goal >= 3x)"
            )
        print(f"end: {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())} load {os.getloadavg()}")
    finally:
        if server is not None:
            subprocess.run([str(ROOT / "scripts" / "postgres-down.sh"), server], check=True)


if __name__ == "__main__":
    main()

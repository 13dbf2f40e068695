"""Durable DAG store: committed mutations/s and leased claims/s against a raw-SQL baseline
writing the same rows, and `store.load` of a 40,000-node chat. A script, not a pytest-benchmark suite: the
multi-process rows need their own processes.

    .venv/bin/python benches/dag_store.py   # SQLite; PostgreSQL too with CHAINWARDEN_TEST_POSTGRES_DSN
                                            # (scripts/postgres-up.sh starts a throwaway server)
Results go to benches/README.md ("Durable store").
"""

from __future__ import annotations

import json
import multiprocessing
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent.parent / "tests" / "dag" / "store"))
sys.path.insert(0, str(Path(__file__).parent.parent / "tests"))  # postgres_server

from chainwarden.dag import Store

N = 400
CHAT_TURNS = 20_000


def url_for(kind: str, tmp: Path) -> str:
    if kind == "sqlite":
        return f"sqlite:///{tmp / f'b{uuid.uuid4().hex[:8]}.db'}"
    from store_urls import postgres_url  # noqa: PLC0415 - only with a server

    return postgres_url(f"bench_{uuid.uuid4().hex[:10]}")


def store_mutations(url: str, graph_id: str, n: int) -> float:
    """n committed mutate() blocks, each creating one task node (1 node row + 1 event row + the version)."""
    with Store.open(url) as store:
        g = store.load(graph_id)
        start = time.perf_counter()
        for i in range(n):
            with g.mutate() as m:
                m.create_node("task", node_id=f"{os.getpid()}-{i}")
        return time.perf_counter() - start


def store_claims(url: str, graph_id: str, n: int) -> float:
    with Store.open(url) as store:
        g = store.load(graph_id)
        start = time.perf_counter()
        for _ in range(n):
            g.claim(1, worker_id=f"w{os.getpid()}", lease_s=30)
        return time.perf_counter() - start


def raw_connection(url: str) -> tuple[Any, str]:
    if url.startswith("sqlite"):
        import sqlite3  # noqa: PLC0415

        conn = sqlite3.connect(url[len("sqlite:///") :], isolation_level=None, timeout=30)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")  # as the store
        return conn, "?"
    import psycopg  # noqa: PLC0415

    return psycopg.connect(url, autocommit=True), "%s"


def raw_writes(url: str, graph_id: str, n: int, kind: str) -> float:
    """The same rows as the store writes per change, by hand: lock the graph row, upsert the node row, insert
    the event row, bump the version; a record of the same size as the engine's."""
    conn, mark = raw_connection(url)
    pg = mark == "%s"
    cur = conn.cursor()
    # Row positions follow from the locked version, as the store's follow from its engine: a fresh graph for
    # mutations (version 0, no rows); for claims, a graph of N pending tasks made in one change (version 1).
    v0, rows0 = (0, 0) if kind == "mutation" else (1, N)
    record = json.dumps(
        {
            "node_id": "x" * 36,
            "node_type": "task",
            "state": "running",
            "input": {},
            "output": {},
            "output_preview": {},
            "metadata": {"claimed_by": "w1", "lease_expires_at": 1.5e9},
            "retry_of_id": None,
            "compressed_by_id": None,
            "compressed_at": None,
            "started_at": 1.7e9,
            "finished_at": None,
            "created_at": 1.7e9,
        }
    )
    event = json.dumps(
        {
            "event_type": "node_state_changed",
            "subject_id": "x" * 36,
            "particulars": {"from": "pending", "to": "running"},
            "created_at": 1.7e9,
        }
    )
    start = time.perf_counter()
    for _ in range(n):
        cur.execute("BEGIN" if pg else "BEGIN IMMEDIATE")
        cur.execute(
            f"SELECT version FROM chainwarden_dag_graphs WHERE graph_id = {mark}"
            + (" FOR UPDATE" if pg else ""),
            (graph_id,),
        )
        version = cur.fetchone()[0] + 1
        k = version - v0 - 1
        seq = k if kind == "mutation" else k % N
        cur.execute(
            f"INSERT INTO chainwarden_dag_nodes (graph_id, seq, node_id, version, record) "
            f"VALUES ({mark}, {mark}, {mark}, {mark}, {mark}) ON CONFLICT (graph_id, seq) DO UPDATE "
            "SET record = excluded.record, version = excluded.version",
            (graph_id, seq, f"raw-{seq}", version, record),
        )
        cur.execute(
            "INSERT INTO chainwarden_dag_events (graph_id, seq, version, record) "
            f"VALUES ({mark}, {mark}, {mark}, {mark})",
            (graph_id, rows0 + k, version, event),
        )
        cur.execute(
            f"UPDATE chainwarden_dag_graphs SET version = {mark} WHERE graph_id = {mark}", (version, graph_id)
        )
        cur.execute("COMMIT")
    elapsed = time.perf_counter() - start
    conn.close()
    return elapsed


def _run(args: tuple[Callable[..., float], tuple[Any, ...]]) -> float:
    fn, a = args
    return fn(*a)


def parallel(jobs: list[tuple[Callable[..., float], tuple[Any, ...]]]) -> float:
    start = time.perf_counter()
    with multiprocessing.get_context("spawn").Pool(len(jobs)) as pool:
        pool.map(_run, jobs)
    return time.perf_counter() - start


def fresh(url: str, graph_id: str, tasks: int = 0) -> None:
    with Store.open(url) as store:
        g = store.create_graph(graph_id)
        if tasks:
            with g.mutate() as m:
                for i in range(tasks):
                    m.create_node("task", node_id=f"t{i:05d}")


def rate(n: int, seconds: float) -> str:
    return f"{n / seconds:,.0f}/s"


def main() -> None:
    tmp = Path(tempfile.mkdtemp())
    kinds = ["sqlite"] + (["postgres"] if os.environ.get("CHAINWARDEN_TEST_POSTGRES_DSN") else [])
    print(f"load: {os.getloadavg()}")
    for kind in kinds:
        url = url_for(kind, tmp)
        fresh(url, "m1")
        fresh(url, "r1")
        s, r = store_mutations(url, "m1", N), raw_writes(url, "r1", N, "mutation")
        print(f"{kind} mutations, 1 worker: store {rate(N, s)}, raw SQL {rate(N, r)}, ratio {s / r:.2f}")
        for g in ("a", "b", "c", "d", "ra", "rb", "rc", "rd"):
            fresh(url, g)
        s = parallel([(store_mutations, (url, g, N)) for g in "abcd"])
        r = parallel([(raw_writes, (url, f"r{g}", N, "mutation")) for g in "abcd"])
        print(
            f"{kind} mutations, 4 workers / 4 graphs: "
            f"store {rate(4 * N, s)}, raw {rate(4 * N, r)}, ratio {s / r:.2f}"
        )
        fresh(url, "one")
        fresh(url, "rone")
        s = parallel([(store_mutations, (url, "one", N)) for _ in range(4)])
        r = parallel([(raw_writes, (url, "rone", N, "mutation")) for _ in range(4)])
        print(
            f"{kind} mutations, 4 workers / 1 graph: "
            f"store {rate(4 * N, s)}, raw {rate(4 * N, r)}, ratio {s / r:.2f}"
        )
        fresh(url, "claims", N)
        fresh(url, "rclaims", N)
        s, r = store_claims(url, "claims", N), raw_writes(url, "rclaims", N, "claim")
        print(f"{kind} leased claims, 1 worker: store {rate(N, s)}, raw SQL {rate(N, r)}, ratio {s / r:.2f}")
        with Store.open(url) as store:
            g = store.create_graph("chat")
            with g.mutate() as m:
                previous = None
                for turn in range(CHAT_TURNS):
                    for node_type, text in (("user_message", "question"), ("agent_message", "answer")):
                        n = m.create_node(node_type, "finished", content=f"{text} {turn}")
                        if previous is not None:
                            m.create_edge(previous, n, "sequence")
                        previous = n
            best = min(_timed(lambda: store.load("chat")) for _ in range(3))
            print(f"{kind} store.load of the {len(g):,}-node chat: {best * 1000:.0f} ms (best of 3)")
    print(f"load: {os.getloadavg()}")


def _timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


if __name__ == "__main__":
    main()

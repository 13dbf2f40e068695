"""Demo section: two worker pools in two processes serve one SQLite store — two graphs of dependent tasks —
with leased claims (docs/dag.md, "Workers")."""

from __future__ import annotations

import multiprocessing
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, TextIO

from chainwarden.dag import ExecutionResult, Store, WorkerPool

GRAPHS = ("jobs", "reports")
LAYERS, WIDTH = 3, 4


def _square(node: dict[str, Any], context: list[dict[str, Any]]) -> ExecutionResult:
    time.sleep(0.05)  # a task that takes a moment (a tool call), so both pools get a share
    return ExecutionResult.finished(output={"result": node["input"]["n"] ** 2})


def _pool(url: str, worker_id: str) -> tuple[int, dict[str, int]]:
    """One worker process: a pool serving every graph of the store until nothing is left to do."""
    with Store.open(url) as store:
        stats = WorkerPool(store, {"task": _square}, worker_id=worker_id, concurrency=2, poll_s=0.05).run(
            until_idle=True
        )
    return stats.executed, dict(stats.by_graph)


def run(out: TextIO) -> None:
    out.write("== dag store (two worker pools, two processes, one SQLite store) ==\n")
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'jobs.db'}"
        with Store.open(url) as store:
            for graph_id in GRAPHS:
                g = store.create_graph(graph_id, leaf_repair=False)  # a task workflow
                with g.mutate() as m:
                    for i in range(LAYERS * WIDTH):
                        m.create_node("task", input={"n": i}, node_id=f"t{i:02d}")
                        if i >= WIDTH:  # each task needs one of the layer before
                            m.create_edge(f"t{i - WIDTH:02d}", f"t{i:02d}", "dependency")
        tasks = len(GRAPHS) * LAYERS * WIDTH
        out.write(f"stored {len(GRAPHS)} graphs of {LAYERS * WIDTH} tasks in {LAYERS} layers\n")
        with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as processes:
            results = list(processes.map(_pool, [url, url], ["pool-a", "pool-b"]))
        with Store.open(url) as store:
            done = {graph_id: store.load(graph_id) for graph_id in GRAPHS}
        nodes = [n for g in done.values() for n in g.nodes()]
        finished = sum(n["state"] == "finished" for n in nodes)
        executed = sum(count for count, _ in results)
        out.write(f"executions: {executed} in total for {tasks} tasks (each exactly once)\n")
        out.write("shared between the pools (the split varies from run to run):\n")
        for name, (count, by_graph) in zip(("pool-a", "pool-b"), results, strict=True):
            out.write(f"  {name}: {count} ({', '.join(f'{g} {n}' for g, n in sorted(by_graph.items()))})\n")
        out.write(f"finished: {finished}/{tasks}; leased claims, every result one committed change\n")
        out.write(f"jobs t11 = {done['jobs'].node('t11')['output']['result']}\n\n")

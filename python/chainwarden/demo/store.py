"""Demo section: two worker processes share one graph stored in SQLite, with leased claims (docs/dag.md,
"Stores and workers")."""

from __future__ import annotations

import multiprocessing
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, TextIO

from chainwarden.dag import TERMINAL, ExecutionResult, Runner, Store

GRAPH = "jobs"
LAYERS, WIDTH = 3, 4


def _worker(url: str, worker_id: str) -> int:
    """One worker process: runs what is ready until every node has ended; returns how many tasks it ran."""
    executed = 0

    def square(node: dict[str, Any], context: list[dict[str, Any]]) -> ExecutionResult:
        nonlocal executed
        executed += 1
        return ExecutionResult.finished(output={"result": node["input"]["n"] ** 2, "by": worker_id})

    with Store.open(url) as store:
        graph = store.load(GRAPH)
        # Finished leaf tasks get an agent_message child (leaf repair); this demo's agent just acknowledges.
        ack = lambda node, context: ExecutionResult.finished(content="noted")  # noqa: E731
        runner = Runner(graph, {"task": square, "agent_message": ack}, worker_id=worker_id, lease_s=10)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            runner.run_until_idle()
            graph.refresh()
            if all(n["state"] in TERMINAL for n in graph.nodes()):
                break
            time.sleep(0.01)
    return executed


def run(out: TextIO) -> None:
    out.write("== dag store (two worker processes, one SQLite graph) ==\n")
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'jobs.db'}"
        with Store.open(url) as store:
            g = store.create_graph(GRAPH)
            with g.mutate() as m:
                for i in range(LAYERS * WIDTH):
                    m.create_node("task", input={"n": i}, node_id=f"t{i:02d}")
                    if i >= WIDTH:  # each task needs one of the layer before
                        m.create_edge(f"t{i - WIDTH:02d}", f"t{i:02d}", "dependency")
        out.write(f"stored {LAYERS * WIDTH} tasks in {LAYERS} layers at version {g.version}\n")
        with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
            counts = list(pool.map(_worker, [url, url], ["worker-a", "worker-b"]))
        with Store.open(url) as store:
            done = store.load(GRAPH)
            nodes = [n for n in done.nodes() if n["node_type"] == "task"]
        finished = sum(n["state"] == "finished" for n in nodes)
        out.write(f"executions: {sum(counts)} in total for {len(nodes)} tasks (each exactly once)\n")
        out.write(f"finished: {finished}/{len(nodes)}; committed version {done.version}\n")
        out.write(f"t11 = {done.node('t11')['output']['result']} (claimed with a lease, then finished)\n\n")

"""A worker process for the store tests: a leased Runner on one stored graph until every node is terminal.

Usage: python store_worker.py URL GRAPH_ID WORKER_ID LEASE_S SLEEP_S LOG_PATH
Each execution appends `<node_id>` to LOG_PATH (line-buffered, so a line written survives a SIGKILL).
"""

from __future__ import annotations

import sys
import time
from typing import Any

from chainwarden.dag import TERMINAL, ExecutionResult, Runner, Store


def main(url: str, graph_id: str, worker_id: str, *, lease_s: float, sleep_s: float, log_path: str) -> None:
    with open(log_path, "a", buffering=1) as log, Store.open(url) as store:
        graph = store.load(graph_id)

        def execute(node: dict[str, Any], context: list[dict[str, Any]]) -> ExecutionResult:
            log.write(node["node_id"] + "\n")
            if sleep_s:
                time.sleep(sleep_s)
            return ExecutionResult.finished(content=f"done by {worker_id}")

        runner = Runner(
            graph, {"task": execute, "agent_message": execute}, worker_id=worker_id, lease_s=lease_s
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            runner.run_until_idle()
            graph.refresh()
            if all(n["state"] in TERMINAL for n in graph.nodes()):
                return
            time.sleep(0.01)
        raise SystemExit(f"{worker_id}: graph not finished in time")


if __name__ == "__main__":
    url, graph_id, worker_id, lease, sleep, log_path = sys.argv[1:7]
    main(url, graph_id, worker_id, lease_s=float(lease), sleep_s=float(sleep), log_path=log_path)

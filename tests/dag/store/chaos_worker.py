"""A worker process of the chaos test: a WorkerPool whose process clock is off by SKEW_S seconds (time.time
patched before chainwarden is imported), until SIGTERM.

Usage: python chaos_worker.py URL WORKER_ID SKEW_S LEASE_S LOG_PATH
Each execution appends `<graph> <node_id> <worker_id> <real time>` to LOG_PATH before it runs (line-buffered
append: a line written survives a SIGKILL).
"""

from __future__ import annotations

import random
import signal
import sys
import time
from typing import Any

_real_time = time.time


def main(url: str, worker_id: str, skew_s: float, lease_s: float, log_path: str) -> None:
    time.time = lambda: _real_time() + skew_s  # this host's clock is off

    from chainwarden.dag import ExecutionResult, Store, WorkerPool  # noqa: PLC0415 - after the clock is off

    rng = random.Random(worker_id)
    with open(log_path, "a", buffering=1) as log, Store.open(url, retry_timeout_s=30) as store:

        def run(node: dict[str, Any], context: list[dict[str, Any]]) -> ExecutionResult:
            log.write(f"{node['input']['graph']} {node['node_id']} {worker_id} {_real_time():.3f}\n")
            time.sleep(rng.uniform(0.002, 0.02))
            return ExecutionResult.finished(output={"by": worker_id})

        pool = WorkerPool(
            store, {"task": run}, worker_id=worker_id, concurrency=4, lease_s=lease_s, poll_s=0.5
        )
        signal.signal(signal.SIGTERM, lambda signum, frame: pool.stop())
        pool.run()


if __name__ == "__main__":
    url, worker_id, skew, lease, log_path = sys.argv[1:6]
    main(url, worker_id, float(skew), float(lease), log_path)

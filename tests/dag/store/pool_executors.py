"""Executors for worker processes started by the tests (`chainwarden worker --executors pool_executors:...`).

Each execution appends `<graph> <node_id> <worker pid>` (`graph`: the node's `input["graph"]`) to the file
named by CHAINWARDEN_TEST_EXEC_LOG
(line-buffered append: a line written survives a SIGKILL), sleeps CHAINWARDEN_TEST_EXEC_SLEEP seconds, and
returns the node's number squared.
"""

from __future__ import annotations

import os
import time
from typing import Any

from chainwarden.dag import ExecutionResult


def _log_line(node: dict[str, Any]) -> None:
    path = os.environ.get("CHAINWARDEN_TEST_EXEC_LOG")
    if path:
        with open(path, "a", buffering=1) as log:
            log.write(f"{node['input'].get('graph', '-')} {node['node_id']} {os.getpid()}\n")


def square(node: dict[str, Any], context: list[dict[str, Any]]) -> ExecutionResult:
    _log_line(node)
    time.sleep(float(os.environ.get("CHAINWARDEN_TEST_EXEC_SLEEP", "0")))
    n = node["input"].get("n", 0)
    return ExecutionResult.finished(output={"result": n * n, "by": os.getpid()})


EXECUTORS = {"task": square}

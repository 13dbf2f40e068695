"""Prints the RSS growth per node after recording N node lifecycles: `memory_per_node.py IMPL N`."""

from __future__ import annotations

import gc
import json
import sys

import psutil
from veronica_core.containment import ExecutionGraph as VeronicaGraph

from chainwarden import ExecutionGraph


def main() -> None:
    impl, n = sys.argv[1], int(sys.argv[2])
    # Both modules are imported up front so import cost is outside the measured delta.
    proc = psutil.Process()
    g = ExecutionGraph() if impl == "chainwarden" else VeronicaGraph()
    root = g.create_root("run")
    gc.collect()
    before = proc.memory_info().rss
    for i in range(n):
        node = g.begin_node(root, "llm" if i % 2 else "tool", "step")
        g.mark_running(node)
        g.mark_success(node, 0.001, 10, 20)
    gc.collect()
    after = proc.memory_info().rss
    print(json.dumps({"nodes": n, "bytes_per_node": (after - before) / n}))


if __name__ == "__main__":
    main()

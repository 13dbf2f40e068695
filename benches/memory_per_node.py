"""Prints the RSS growth per node after recording N node lifecycles:
`memory_per_node.py IMPL N [MAX_NODES]`.

With MAX_NODES the graph is capped (docs/design.md §27) and the growth is measured from the
point where a tenth of the nodes have gone through (the graph is long full by then) to the
end: a bounded graph shows about 0 bytes per node."""

from __future__ import annotations

import gc
import json
import sys

import psutil
from veronica_core.containment import ExecutionGraph as VeronicaGraph

from chainwarden import ExecutionGraph


def main() -> None:
    impl, n = sys.argv[1], int(sys.argv[2])
    max_nodes = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    # Both modules are imported up front so import cost is outside the measured delta.
    proc = psutil.Process()
    g = ExecutionGraph(max_nodes=max_nodes) if impl == "chainwarden" else VeronicaGraph(max_nodes=max_nodes)
    root = g.create_root("run")
    start = n // 10 if max_nodes else 0
    gc.collect()
    before = proc.memory_info().rss
    for i in range(n):
        if i == start and start:
            gc.collect()
            before = proc.memory_info().rss
        node = g.begin_node(root, "llm" if i % 2 else "tool", "step")
        g.mark_running(node)
        g.mark_success(node, 0.001, 10, 20)
    gc.collect()
    after = proc.memory_info().rss
    measured = n - start
    print(
        json.dumps(
            {
                "nodes": n,
                "max_nodes": max_nodes,
                "bytes_per_node": (after - before) / measured,
                "rss_growth_bytes": after - before,
            }
        )
    )


if __name__ == "__main__":
    main()

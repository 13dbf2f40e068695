"""Records node lifecycles through `ExecutionGraph(max_nodes=...)` in a fresh process and
prints the RSS at two checkpoints: `_rss_probe.py MODE FIRST TOTAL MAX_NODES`.

MODE `same` reuses one name; `unique` gives every node its own name, model, error class,
stop reason and metadata dict, so every per-node side table is exercised."""

from __future__ import annotations

import gc
import json
import sys

import psutil

from chainwarden import ExecutionGraph


def main() -> None:
    mode, first, total, max_nodes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    proc = psutil.Process()
    g = ExecutionGraph(max_nodes=max_nodes)
    root = g.create_root("run", metadata={"request": "r-1"})
    # A call that stays in flight for the whole run must not pin old storage either.
    g.begin_node(root, "llm", "long-running", running=True)
    begin, running, success, failure = g.begin_node, g.mark_running, g.mark_success, g.mark_failure
    rss: list[int] = []
    for i in range(total):
        if mode == "unique":
            node = begin(root, "tool", f"name-{i}", f"model-{i}", {"i": i, "tags": [str(i), i * 0.5]})
            running(node)
            if i % 2:
                success(node, 0.001, 10, 20)
            else:
                failure(node, f"Error{i}", f"reason {i}")
        else:
            node = begin(root, "llm", "step")
            running(node)
            success(node, 0.001, 10, 20)
        if i + 1 == first:
            gc.collect()
            rss.append(proc.memory_info().rss)
    gc.collect()
    rss.append(proc.memory_info().rss)
    print(json.dumps({"rss": rss, "live": len(g), "pruned": g.pruned_count}))


if __name__ == "__main__":
    main()

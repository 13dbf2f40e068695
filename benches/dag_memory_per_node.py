"""Prints the RSS growth per node after building a chat of N nodes (one edge per node):
`dag_memory_per_node.py IMPL N [SHAPE]` with IMPL chainwarden, rustworkx or networkx, SHAPE `chat` (the
default) or `fan-out` (N children of one hub: per node + edge).

The graphs are the ones `bench_dag_build.py` times (`cw_chat`, `rx_fan_out`, ...); each run is a fresh
process so nothing freed earlier is reused."""

from __future__ import annotations

import gc
import json
import sys

import psutil
from bench_dag_build import CHAT_IMPLS, FAN_OUT_IMPLS


def main() -> None:
    impl, n = sys.argv[1], int(sys.argv[2])
    shape = sys.argv[3] if len(sys.argv) > 3 else "chat"
    build = {"chat": CHAT_IMPLS, "fan-out": FAN_OUT_IMPLS}[shape][impl]
    build(100)  # warm up imports and lazily created module state outside the measured delta
    proc = psutil.Process()
    gc.collect()
    before = proc.memory_info().rss
    graph = build(n)
    gc.collect()
    after = proc.memory_info().rss
    assert len(graph) == (n + 1 if shape == "fan-out" else n)
    print(json.dumps({"impl": impl, "shape": shape, "nodes": n, "bytes_per_node": (after - before) / n}))


if __name__ == "__main__":
    main()

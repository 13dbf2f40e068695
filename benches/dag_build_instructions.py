"""A build of `bench_dag_build.py` to count its instructions (benches/README.md "The build floor").

    valgrind --tool=callgrind .venv/bin/python benches/dag_build_instructions.py fan-out chainwarden 12000

Builds once at 100 nodes (imports, first calls) and once at N; the count per node + edge is the difference
between the runs at two N over the difference of the N. IMPL: chainwarden, rustworkx, networkx, floor.
"""

from __future__ import annotations

import sys

from bench_dag_build import CHAT_IMPLS, FAN_OUT_IMPLS


def main(shape: str, impl: str, n: int) -> None:
    build = {"fan-out": FAN_OUT_IMPLS, "chat": CHAT_IMPLS}[shape][impl]
    build(100)
    build(n)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))

"""A writer process for the consistent-load test: STEPS changes, change v adding node n{v} and an edge from
n{v-1}, as fast as it can.

Usage: python chain_writer.py URL GRAPH_ID STEPS
"""

from __future__ import annotations

import sys

from chainwarden.dag import Store


def main(url: str, graph_id: str, steps: int) -> None:
    with Store.open(url) as store:
        g = store.load(graph_id)
        for _ in range(steps):
            v = g.version + 1
            with g.mutate() as m:
                m.create_node("task", node_id=f"n{v:05d}")
                if v > 1:
                    m.create_edge(f"n{v - 1:05d}", f"n{v:05d}", "dependency")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))

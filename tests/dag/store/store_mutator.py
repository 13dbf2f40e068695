"""A process applying random operations to a stored graph, checking invariants after each committed change.

Usage: python store_mutator.py URL GRAPH_ID SEED STEPS
"""

from __future__ import annotations

import random
import sys

from chainwarden.dag import DagError, Store


def main(url: str, graph_id: str, seed: int, steps: int) -> None:
    rng = random.Random(seed)
    tag = str(seed)
    with Store.open(url) as store:
        g = store.load(graph_id)
        for step in range(steps):
            g.refresh()
            ids = [n["node_id"] for n in g.nodes()]
            op = rng.choice(["task", "edge", "claim", "finish", "fork", "retry", "propagate"])
            try:
                if op == "task":
                    with g.mutate() as m:
                        m.create_node("task", metadata={"by": tag}, node_id=f"n{tag}-{step}")
                elif op == "edge" and len(ids) > 1:
                    a, b = rng.sample(ids, 2)
                    with g.mutate() as m:
                        m.create_edge(a, b, rng.choice(["dependency", "sequence", "branch"]))
                elif op == "claim":
                    g.claim(rng.randint(1, 3), worker_id=tag, lease_s=30)
                elif op == "finish":
                    running = [n["node_id"] for n in g.nodes() if n["state"] == "running"]
                    if running:
                        g.apply_result(rng.choice(running), rng.choice(["finished", "errored"]), message="x")
                elif op == "fork" and ids:
                    with g.mutate() as m:
                        m.fork(rng.choice(ids), "task", metadata={"by": tag}, node_id=f"f{tag}-{step}")
                elif op == "retry" and ids:
                    with g.mutate() as m:
                        m.retry(rng.choice(ids))
                else:
                    g.propagate_failures()
            except DagError:
                pass  # refused by a rule: nothing was written
            problem = g.check_invariants()
            if problem is not None:
                raise SystemExit(f"invariant broken at version {g.version}: {problem}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))

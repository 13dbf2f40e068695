"""Real threads hammering one Graph: claims never overlap, and the graph stays consistent."""

from __future__ import annotations

import threading
from collections import Counter

from chainwarden.dag import Graph

WORKERS = 6
NODES = 600


def test_concurrent_claim_and_mark() -> None:
    g = Graph()
    with g.mutate() as m:
        previous = None
        for i in range(NODES):
            n = m.create_node("task", node_id=f"t{i:04d}")
            # every third node depends on the one before: claims must respect the gating under contention
            if previous is not None and i % 3 == 0:
                m.create_edge(previous, n, "dependency")
            previous = n
    claimed_by: list[list[str]] = [[] for _ in range(WORKERS)]
    barrier = threading.Barrier(WORKERS)
    errors: list[BaseException] = []

    def worker(w: int) -> None:
        try:
            barrier.wait()
            idle_rounds = 0
            while idle_rounds < 50:
                got = g.claim(3)
                if not got:
                    idle_rounds += 1
                    g.propagate_failures()
                    continue
                idle_rounds = 0
                for node_id in got:
                    claimed_by[w].append(node_id)
                    if int(node_id[1:]) % 7 == 0:
                        assert g.mark_errored(node_id, f"worker {w}")
                    else:
                        assert g.mark_finished(node_id, content=w)
                    assert not g.mark_running(node_id)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(WORKERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    counts = Counter(n for claimed in claimed_by for n in claimed)
    assert all(c == 1 for c in counts.values()), "a node was claimed twice"
    g.propagate_failures()
    states = Counter(n["state"] for n in g.nodes())
    assert states["pending"] == 0 and states["running"] == 0
    assert len(counts) + states["skipped"] == NODES
    assert g.check_invariants() is None


def test_concurrent_mutate_blocks_are_isolated() -> None:
    g = Graph()
    with g.mutate() as m:
        root = m.create_node("user_message", "finished", content="root")
    errors: list[BaseException] = []

    def writer(w: int) -> None:
        try:
            for i in range(40):
                try:
                    with g.mutate() as m:
                        n = m.create_node("agent_message", "finished", content=f"{w}-{i}")
                        m.create_edge(root, n, "sequence")
                        if i % 4 == 0:
                            raise KeyError("discard")
                except KeyError:
                    pass
        except BaseException as exc:
            errors.append(exc)

    def reader() -> None:
        try:
            for _ in range(200):
                # A reader never sees a half-built block: every agent reply is wired to the root.
                nodes = g.nodes()
                wired = {e["to_node_id"] for e in g.edges()}
                for node in nodes:
                    if node["node_type"] == "agent_message" and node["state"] == "finished":
                        assert node["node_id"] in wired
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    threads.append(threading.Thread(target=reader))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    replies = [n for n in g.nodes() if n["node_type"] == "agent_message" and n["state"] == "finished"]
    assert len(replies) == 4 * 30
    assert g.check_invariants() is None

"""max_nodes pruning, including where chainwarden deliberately differs from the reference."""

from __future__ import annotations

import contextlib

from veronica_core.containment import ExecutionGraph as RefGraph

from chainwarden import ExecutionGraph


def test_oldest_terminal_node_is_evicted_first() -> None:
    g = ExecutionGraph(max_nodes=4)
    root = g.create_root("r")
    ids = [g.begin_node(root, "tool", f"t{i}") for i in range(3)]
    g.mark_success(ids[1], 0.0)
    g.mark_success(ids[0], 0.0)
    extra = g.begin_node(root, "tool", "t3")  # full: evicts ids[0], the oldest terminal
    assert g.pruned_count == 1
    assert list(g.snapshot()["nodes"]) == [root, ids[1], ids[2], extra]
    assert g.aggregates()["total_tool_calls"] == 2  # pruning never decreases aggregates


def test_in_flight_nodes_are_never_evicted() -> None:
    g = ExecutionGraph(max_nodes=2)
    root = g.create_root("r")
    ids = [g.begin_node(root, "llm", "x", running=True) for _ in range(5)]
    assert g.pruned_count == 0
    assert len(g) == 6
    for n in ids:
        g.mark_success(n, 0.0)
    g.begin_node(root, "llm", "y")
    # Like the reference, each insert evicts at most one node, so the graph shrinks back
    # towards the limit gradually rather than in one burst.
    assert g.pruned_count == 1
    assert len(g) == 6


def test_parent_is_protected_where_the_reference_fails() -> None:
    # The reference prunes before looking up the parent, so attaching a child to the
    # oldest completed node of a full graph evicts that parent and raises KeyError.
    ours, ref = ExecutionGraph(max_nodes=2), RefGraph(max_nodes=2)
    for g in (ours, ref):
        root = g.create_root("r")
        done = g.begin_node(root, "llm", "plan")
        g.mark_success(done, 0.1)
    try:
        ref.begin_node("n000002", "tool", "search")
        raise AssertionError("reference behaviour changed")
    except KeyError:
        pass
    child = ours.begin_node("n000002", "tool", "search")
    assert ours.node(child)["parent_id"] == "n000002"
    assert "n000002" in ours


def test_failed_begin_does_not_prune() -> None:
    g = ExecutionGraph(max_nodes=2)
    root = g.create_root("r")
    n = g.begin_node(root, "llm", "x")
    g.mark_success(n, 0.0)
    with contextlib.suppress(KeyError):
        g.begin_node("n000099", "llm", "y")
    assert g.pruned_count == 0
    assert n in g

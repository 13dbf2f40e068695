"""Every state change of a `Graph` runs through its one seam, `_apply`, and `StoredGraph` extends the graph
through that seam instead of re-listing its methods (docs/dag.md "Stores and workers")."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import TypeVar

import pytest
from dag_helpers import tasks

from chainwarden.dag import Graph
from chainwarden.dag.store.bound import StoredGraph

T = TypeVar("T")


class Counting(Graph):
    """A graph that counts the changes going through the seam (and the ids it is told about)."""

    __slots__ = ("applied", "named")

    def _apply(self, op: Callable[[], T], *, named: Callable[[T], list[str]] | None = None) -> T:
        result = super()._apply(op, named=named)
        self.applied += 1
        if named is not None:
            self.named.extend(named(result))
        return result


def counting() -> Counting:
    g = Counting(leaf_repair=False)
    g.applied, g.named = 0, []
    tasks(g, "a", "b", "c", "d", "e", "f")
    return g


def _compress(g: Graph) -> str:
    with g.mutate() as m:  # a mutate() block is its own transaction, not an operation through the seam
        m.create_edge("a", "b", "sequence")
        m.create_edge("b", "c", "sequence")
    for n in ("a", "b"):
        g.mark_running(n)
        g.mark_finished(n)
    return g.compress(iter(["a", "b"]), "sum")  # an iterator: read once, before the change


# name -> (the calls, how many state changes they make)
CHANGES: dict[str, tuple[Callable[[Graph], object], int]] = {
    "mark_running": (lambda g: g.mark_running("a"), 1),
    "mark_finished": (lambda g: (g.mark_running("a"), g.mark_finished("a")), 2),
    "mark_errored": (lambda g: (g.mark_running("a"), g.mark_errored("a", "boom")), 2),
    "mark_rejected": (lambda g: (g.mark_running("a"), g.mark_rejected("a", "no")), 2),
    "mark_cancelled": (lambda g: (g.mark_running("a"), g.mark_cancelled("a", "stop")), 2),
    "mark_skipped": (lambda g: g.mark_skipped("a", "skip"), 1),
    "claim": (lambda g: g.claim(2), 1),
    "claim_leased": (lambda g: g.claim(2, worker_id="w", lease_s=30), 1),
    "heartbeat": (
        lambda g: (g.claim(1, worker_id="w", lease_s=30), g.heartbeat(["a"], worker_id="w", lease_s=60)),
        2,
    ),
    "release": (lambda g: (g.claim(1, worker_id="w", lease_s=30), g.release(["a"], worker_id="w")), 2),
    "reclaim_expired": (lambda g: g.reclaim_expired(), 1),
    "_claim_leased": (lambda g: g._claim_leased(2, "w", 30), 1),
    "_complete": (
        lambda g: (
            g.claim(1, worker_id="w", lease_s=30),
            g._complete("a", "finished", {}, "w", refill=1, lease_s=30),
        ),
        2,
    ),
    "propagate_failures": (lambda g: g.propagate_failures(), 1),
    "repair_leaves": (lambda g: g.repair_leaves(), 1),
    "apply_result": (lambda g: (g.mark_running("a"), g.apply_result("a", "finished")), 2),
    "compress": (
        _compress,
        5,
    ),
}


@pytest.mark.parametrize("name", sorted(CHANGES))
def test_every_state_change_runs_through_the_seam(name: str) -> None:
    g = counting()
    calls, changes = CHANGES[name]
    calls(g)
    assert g.applied == changes, f"{name}: {g.applied} changes through _apply, expected {changes}"
    if name == "heartbeat":
        assert g.named == ["a"]  # a renewed lease records no event: the seam is told which node it renewed
    else:
        assert g.named == []


def test_reads_do_not_go_through_the_seam() -> None:
    g = counting()
    g.leaves()
    g.nodes()
    g.edges()
    g.node("a")
    g.events()
    g.context_for("a")
    g.context_ids_for("a")
    g.to_mermaid()
    g.to_json()
    g.check_invariants()
    len(g)
    assert g.applied == 0


def test_bad_arguments_are_refused_before_the_seam() -> None:
    g = counting()
    with pytest.raises(ValueError, match="worker_id"):
        g.heartbeat(["a"], worker_id="", lease_s=1)
    with pytest.raises(ValueError, match="lease_s"):
        g.claim(1, worker_id="w", lease_s=-1)
    with pytest.raises(ValueError, match="node_ids"):
        g.release(5, worker_id="w")  # type: ignore[arg-type]
    assert g.applied == 0


def test_stored_graph_extends_graph_through_the_seam_only() -> None:
    """`StoredGraph` overrides `_apply` and what is truly a store's (its clock, its attempts, `mutate()`'s
    transaction, `from_json` handing back a graph in memory), never the operations themselves."""
    graph_methods = {n for n, v in vars(Graph).items() if callable(v) or isinstance(v, classmethod)}
    overridden = graph_methods & set(vars(StoredGraph))
    assert overridden == {"_apply", "_now", "_max_attempts", "mutate", "from_json"}
    assert inspect.signature(StoredGraph._apply) == inspect.signature(Graph._apply)

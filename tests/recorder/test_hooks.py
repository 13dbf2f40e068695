"""Observers and subscribers: order, identity de-duplication, failures swallowed."""

from __future__ import annotations

from typing import Any

import pytest

from chainwarden import ExecutionGraph, NodeEvent


class Broken:
    def on_node_complete(self, *args: Any) -> None:
        raise RuntimeError("observer bug")


def test_failing_hooks_do_not_break_the_graph_or_later_hooks() -> None:
    seen: list[NodeEvent] = []

    def bad(event: NodeEvent) -> None:
        raise ValueError("subscriber bug")

    g = ExecutionGraph(observers=[Broken()])
    g.add_subscriber(bad)
    g.add_subscriber(seen.append)
    root = g.create_root("r")
    n = g.begin_node(root, "llm", "x", model="m")
    g.mark_success(n, 0.5, 1, 2)
    assert g.node(n)["status"] == "success"
    assert len(seen) == 1
    e = seen[0]
    assert (e.node_id, e.status, e.kind, e.name, e.cost_usd, e.tokens_out, e.depth, e.model) == (
        n,
        "success",
        "llm",
        "x",
        0.5,
        2,
        1,
        "m",
    )
    assert e.elapsed_ms is not None and e.elapsed_ms >= 0
    assert e.chain_id == g.chain_id
    assert "NodeEvent(node_id='n000002'" in repr(e)


def test_base_exceptions_from_hooks_propagate() -> None:
    def interrupt(event: NodeEvent) -> None:
        raise KeyboardInterrupt

    g = ExecutionGraph()
    g.add_subscriber(interrupt)
    n = g.begin_node(g.create_root("r"), "tool", "t")
    with pytest.raises(KeyboardInterrupt):
        g.mark_halt(n, "stop")
    assert g.node(n)["status"] == "halt"  # the transition happened before hooks ran


def test_add_is_identity_deduplicated_and_remove_works() -> None:
    seen: list[str] = []

    def sub(event: NodeEvent) -> None:
        seen.append(event.node_id)

    g = ExecutionGraph()
    g.add_subscriber(sub)
    g.add_subscriber(sub)
    root = g.create_root("r")
    a = g.begin_node(root, "tool", "a")
    g.mark_failure(a, "E")
    g.remove_subscriber(sub)
    b = g.begin_node(root, "tool", "b")
    g.mark_failure(b, "E")
    assert seen == [a]
    with pytest.raises(TypeError):
        g.add_subscriber(42)  # type: ignore[arg-type]


def test_hooks_may_call_back_into_the_graph() -> None:
    # Hooks run after the lock is released, so re-entry must not deadlock.
    g = ExecutionGraph()
    snaps: list[int] = []
    g.add_subscriber(lambda e: snaps.append(len(g.snapshot()["nodes"])))
    root = g.create_root("r")
    n = g.begin_node(root, "llm", "x")
    g.mark_success(n, 0.0)
    assert snaps == [2]


def test_node_event_is_frozen_and_comparable() -> None:
    args: dict[str, Any] = dict(
        node_id="n000002",
        status="success",
        kind="llm",
        name="x",
        cost_usd=0.1,
        tokens_in=None,
        tokens_out=3,
        depth=1,
        elapsed_ms=2.0,
        chain_id="c",
        model=None,
        error_class=None,
        stop_reason=None,
    )
    a, b = NodeEvent(**args), NodeEvent(**args)
    assert a == b
    with pytest.raises(AttributeError):
        a.status = "fail"  # type: ignore[misc]

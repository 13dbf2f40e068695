"""Small builders shared by the DAG tests."""

from __future__ import annotations

from chainwarden.dag import Graph

ALL_STATES = ["pending", "running", "finished", "errored", "rejected", "skipped", "cancelled"]


def force_state(g: Graph, node_id: str, state: str) -> None:
    """Drive a pending node through legal transitions to `state`."""
    if state == "pending":
        return
    if state == "skipped":
        assert g.mark_skipped(node_id, "test")
        return
    assert g.mark_running(node_id)
    if state == "finished":
        assert g.mark_finished(node_id)
    elif state == "errored":
        assert g.mark_errored(node_id, "boom")
    elif state == "rejected":
        assert g.mark_rejected(node_id, "no")
    elif state == "cancelled":
        assert g.mark_cancelled(node_id, "stop")


def tasks(g: Graph, *ids: str) -> None:
    with g.mutate() as m:
        for node_id in ids:
            m.create_node("task", node_id=node_id)


def event_types(g: Graph) -> list[str]:
    return [e["event_type"] for e in g.events()]

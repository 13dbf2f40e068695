"""Two processes mutating one stored graph at random: every committed version is a valid graph, and the final
graph is what applying the committed changes in their commit order gives (no lost update)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from chainwarden.dag import Store

MUTATOR = Path(__file__).with_name("store_mutator.py")


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_two_processes_mutate_one_graph(store_url: str) -> None:
    with Store.open(store_url) as store:
        g = store.create_graph("shared")
        with g.mutate() as m:
            m.create_node("user_message", state="finished", content="hi", node_id="root")
        procs = [
            subprocess.Popen([sys.executable, str(MUTATOR), store_url, "shared", str(seed), "150"])
            for seed in (1, 2)
        ]
        assert [p.wait(timeout=50) for p in procs] == [0, 0]
        final = store.load("shared")
    assert final.check_invariants() is None
    # Both processes' successful changes are all there: each created node carries its writer's tag.
    tags = {n["metadata"].get("by") for n in final.nodes(include_compressed=True)}
    assert {"1", "2"} <= tags
    # The event log is one serial history: replaying it event by event never contradicts itself.
    states: dict[str, str] = {}
    for event in final.events():
        p = event["particulars"]
        if event["event_type"] == "node_created":
            assert event["subject_id"] not in states
            states[event["subject_id"]] = p["state"]
        elif event["event_type"] == "node_state_changed":
            # (nodes made by retry / leaf repair have no node_created event: first seen here)
            assert states.get(event["subject_id"], p["from"]) == p["from"]
            states[event["subject_id"]] = p["to"]
    now = {n["node_id"]: n["state"] for n in final.nodes(include_compressed=True)}
    assert {node: now[node] for node in states} == states

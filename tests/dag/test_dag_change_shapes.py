"""The shapes of a change (docs/dag.md "Stores and workers"): a `DagMark` where it starts, a `DagCommit` for a
committed block, a `DagDelta` for the rows it wrote; named fields, one order, the same rows whichever way the
start was taken."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from chainwarden._core import DagCommit, DagDelta, DagEngine, DagMark, dag_change_mark, dag_delta
from chainwarden.dag.store import Store


def chat(engine: DagEngine, n: int) -> list[str]:
    ids = [engine.create_node("user_message", "finished", content="q0")]
    for i in range(1, n):
        ids.append(engine.create_node("user_message", "finished", content=f"q{i}"))
        engine.create_edge(ids[-2], ids[-1], "sequence")
    return ids


def test_a_mark_names_the_lengths_it_holds() -> None:
    engine = DagEngine("g")
    chat(engine, 3)
    mark = dag_change_mark(engine)
    assert isinstance(mark, DagMark)
    assert (mark.nodes, mark.edges) == (len(engine), 2)
    assert mark.events == len(engine.events())
    assert mark == dag_change_mark(engine)
    assert "nodes=3" in repr(mark)


def test_commit_returns_where_the_block_started_and_its_delta_is_the_stores() -> None:
    engine = DagEngine("g")
    first = chat(engine, 2)
    before = dag_change_mark(engine)
    engine.begin()
    child = engine.create_node("task", "finished")
    engine.create_edge(first[-1], child, "sequence")
    done = engine.commit()
    assert isinstance(done, DagCommit)
    assert done.start == before
    # Leaf repair gave the finished task its agent message, inside the commit.
    assert len(done.repaired) == 1
    by_commit = dag_delta(engine, done.start)
    by_mark = dag_delta(engine, before)
    assert isinstance(by_commit, DagDelta)
    assert by_commit.nodes == by_mark.nodes and by_commit.edges == by_mark.edges
    assert by_commit.events == by_mark.events
    created = [row[1] for row in by_commit.nodes]
    assert child in created and done.repaired[0] in created
    # Rows are (position, id, record) and (position, record), positions in arena order.
    # (the parent the new edge names is rewritten too: its record is current).
    for _, node_id, record in by_commit.nodes:
        assert json.loads(record)["node_id"] == node_id
    assert [row[0] for row in by_commit.nodes] == sorted(row[0] for row in by_commit.nodes)
    assert [row[0] for row in by_commit.events] == sorted(row[0] for row in by_commit.events)
    assert all(len(row) == 2 and json.loads(row[1]) for row in by_commit.events)


def test_a_nested_commit_starts_at_its_own_block_and_repairs_nothing() -> None:
    engine = DagEngine("g")
    chat(engine, 1)
    engine.begin()
    chat(engine, 1)
    inner_start = dag_change_mark(engine)
    engine.begin()
    engine.create_node("task", "finished")
    inner = engine.commit()
    assert inner.start == inner_start and inner.repaired == []
    outer = engine.commit()
    assert outer.start.nodes == 1 and outer.repaired
    written = {row[1] for row in dag_delta(engine, outer.start).nodes}
    assert set(outer.repaired) <= written


def test_an_empty_change_has_a_false_delta() -> None:
    engine = DagEngine("g")
    chat(engine, 2)
    mark = dag_change_mark(engine)
    assert not dag_delta(engine, mark)
    engine.create_node("task")
    assert dag_delta(engine, mark)


def test_a_mark_must_be_a_mark() -> None:
    engine = DagEngine("g")
    with pytest.raises(TypeError):
        dag_delta(engine, (0, 0, 0))  # type: ignore[arg-type]


def test_a_stored_block_writes_the_rows_of_its_delta(tmp_path: Path) -> None:
    """What the store writes for a `mutate()` block is its delta, row for row (the mark of an empty engine
    starts at nothing, so the delta from it holds every row)."""
    store = Store.open(f"sqlite:///{tmp_path / 'dag.db'}")
    try:
        graph = store.create_graph("g")
        with graph.mutate() as m:
            root = m.create_node("user_message", "finished", content="hi")
            m.create_edge(root, m.create_node("task", "finished"), "sequence")
        delta = dag_delta(graph._engine, dag_change_mark(DagEngine("empty")))
        with closing(sqlite3.connect(tmp_path / "dag.db")) as conn, conn:
            nodes = conn.execute(
                "SELECT seq, node_id, record FROM chainwarden_dag_nodes WHERE graph_id='g' ORDER BY seq"
            ).fetchall()
            edges = conn.execute(
                "SELECT seq, edge_id, record FROM chainwarden_dag_edges WHERE graph_id='g' ORDER BY seq"
            ).fetchall()
            events = conn.execute(
                "SELECT seq, record FROM chainwarden_dag_events WHERE graph_id='g' ORDER BY seq"
            ).fetchall()
        assert len(delta.nodes) == len(graph) == 3  # the task's agent message came from leaf repair
        assert nodes == delta.nodes and edges == delta.edges and events == delta.events
    finally:
        store.close()

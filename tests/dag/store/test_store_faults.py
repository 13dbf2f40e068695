"""A store under faults (docs/design.md §33): loads next to a writer always see one committed version, and a
connection cut around COMMIT (a real TCP proxy in front of the real server) never applies a change twice."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from postgres_server import postgres_dsn
from psycopg.conninfo import conninfo_to_dict
from store_urls import postgres_url
from tcp_proxy import CommitCutter

from chainwarden.dag import Store, StoreConnectionError

CHAIN_WRITER = Path(__file__).with_name("chain_writer.py")


@pytest.mark.slow
def test_loads_next_to_a_writer_always_equal_a_committed_version(store_url: str) -> None:
    """Each committed change adds node n{v} (and an edge from the one before): a load that mixed two versions
    has a node count, an edge count or an event log that does not match its own version, or fails."""
    with Store.open(store_url) as store:
        store.create_graph("chain")
        writer = subprocess.Popen([sys.executable, str(CHAIN_WRITER), store_url, "chain", "400"])
        loads, versions, errors = 0, set(), []
        try:
            while writer.poll() is None or loads < 20:
                try:
                    g = store.load("chain")
                except Exception as exc:  # counted, never hidden: the test asserts there are none
                    errors.append(repr(exc))
                    continue
                loads += 1
                v = g.version
                versions.add(v)
                nodes, edges = len(g.nodes()), len(g.edges())
                created = [e for e in g.events() if e["event_type"] == "node_created"]
                if (nodes, edges, len(created)) != (v, max(v - 1, 0), v) or g.check_invariants() is not None:
                    errors.append(f"version {v}: {nodes} nodes, {edges} edges, {len(created)} created events")
        finally:
            assert writer.wait(timeout=60) == 0
    assert errors == []
    assert loads >= 20 and len(versions) >= 5, (loads, sorted(versions)[:10])


@pytest.fixture
def cutter() -> CommitCutter:
    host = str(conninfo_to_dict(postgres_dsn())["host"])
    proxy = CommitCutter(os.path.join(host, ".s.PGSQL.5432"))
    yield proxy  # type: ignore[misc]
    proxy.close()


def proxied_url(cutter: CommitCutter) -> str:
    schema = f"cut_{uuid.uuid4().hex[:10]}"
    postgres_url(schema)  # creates the schema
    return cutter.url(schema)


def test_a_change_whose_commit_answer_was_cut_lands_exactly_once(cutter: CommitCutter) -> None:
    url = proxied_url(cutter)
    with Store.open(url) as store:
        g = store.create_graph("g")
        with g.mutate() as m:
            m.create_node("task", node_id="t0")
        cutter.arm("after_commit")
        assert g.claim(1, worker_id="w", lease_s=30) == ["t0"]
        cutter.arm("after_commit")
        with g.mutate() as m:
            m.create_node("task")  # a generated id: a second application would make a second node
        assert cutter.cuts == ["after_commit", "after_commit"]
        assert g.version == 3
        fresh = store.load("g")
    assert fresh.version == 3 and len(fresh.nodes()) == 2
    assert fresh.to_json() == g.to_json()
    changed = [e for e in fresh.events() if e["event_type"] == "node_state_changed"]
    assert len(changed) == 1


def test_a_change_cut_before_its_commit_did_not_land_and_is_done_once(cutter: CommitCutter) -> None:
    url = proxied_url(cutter)
    with Store.open(url) as store:
        g = store.create_graph("g")
        with g.mutate() as m:
            m.create_node("task", node_id="t0")
        cutter.arm("before_commit")
        # A single operation did not land: it is done again, once, on the committed state.
        assert g.claim(1, worker_id="w", lease_s=30) == ["t0"]
        cutter.arm("before_commit")
        # A block's body cannot run again: the caller hears that nothing was written.
        with pytest.raises(StoreConnectionError, match="did not land"), g.mutate() as m:
            m.create_node("task", node_id="t1")
        assert "t1" not in {n["node_id"] for n in store.load("g").nodes()}
        with g.mutate() as m:
            m.create_node("task", node_id="t1")
        assert cutter.cuts == ["before_commit", "before_commit"]
        fresh = store.load("g")
    assert [n["node_id"] for n in fresh.nodes()] == ["t0", "t1"] and fresh.version == 3
    assert fresh.node("t0")["state"] == "running"


def test_a_lost_commit_is_found_by_its_change_id_after_the_graph_moved_on() -> None:
    """Resolution looks the change id up at the version the change would have had, so the answer holds even
    when other changes landed between the lost commit and the look."""
    with Store.open(postgres_url(f"resolve_{uuid.uuid4().hex[:10]}")) as store:
        g = store.create_graph("g")
        with g.mutate() as m:
            m.create_node("task", node_id="a")
        backend = store._backend
        with backend.change("g", 1) as tx:
            pass  # learn nothing; only to get a Tx shaped like the lost one
        tx.version = 0  # the change that made version 1 ...
        ((change_id,),) = raw(store, "SELECT change_id FROM chainwarden_dag_changes WHERE version = 1")
        for _ in range(3):  # ... and the graph moved on since
            with g.mutate() as m:
                m.create_node("task")
        tx.change_id = str(change_id)
        assert backend._landed(tx, OSError("cut")) is True
        tx.change_id = "0" * 32
        assert backend._landed(tx, OSError("cut")) is False


def raw(store: Store, statement: str) -> list[tuple[object, ...]]:
    conn = store._backend._pool.getconn(10)
    try:
        return conn.execute(statement).fetchall()
    finally:
        store._backend._pool.putconn(conn)

"""Store.open, create/load, versions, atomic blocks, typed errors (bad URL, unknown id, lost connection)."""

from __future__ import annotations

import json
import re
import sqlite3
import uuid
from contextlib import closing
from pathlib import Path

import psycopg
import pytest
from postgres_server import postgres_dsn
from store_urls import postgres_url, raw_execute

from chainwarden.dag import (
    DagInvalidArgumentError,
    DagNotFoundError,
    DagPreconditionError,
    Graph,
    Store,
    StoreConflictError,
    StoreConnectionError,
    StoreSchemaError,
    StoreUrlError,
)


def test_changes_are_committed_and_load_equal(store_url: str) -> None:
    with Store.open(store_url) as store:
        g = store.create_graph("chat")
        assert g.version == 0
        with g.mutate() as m:
            u = m.create_node("user_message", state="finished", content="hi")
        assert g.version == 1
        (agent,) = g.claim(5)
        assert g.apply_result(agent, "finished", content="hello")[0]
        assert g.version == 3
        assert not g.mark_running(u)  # a refused transition writes nothing
        assert g.version == 3
        with Store.open(store_url) as other:
            h = other.load("chat")
            assert h.version == 3 and h.to_json() == g.to_json()
            assert other.graph_ids() == ["chat"]


def test_a_block_that_raises_writes_nothing(store_url: str) -> None:
    with Store.open(store_url) as store:
        g = store.create_graph()
        with pytest.raises(RuntimeError), g.mutate() as m:
            m.create_node("task", node_id="a")
            raise RuntimeError("boom")
        assert g.version == 0 and len(g) == 0
        assert len(store.load(g.graph_id)) == 0


def test_two_objects_catch_up(store_url: str) -> None:
    with Store.open(store_url) as s1, Store.open(store_url) as s2:
        g1 = s1.create_graph("g")
        g2 = s2.load("g")
        with g1.mutate() as m:
            m.create_node("task", node_id="a")
        with g2.mutate() as m:  # catches up with g1's change before applying its own
            m.create_node("task", node_id="b")
            m.create_edge("a", "b", "dependency")
        assert g2.version == 2
        assert g1.claim(5) == ["a"]
        assert g2.claim(5) == []  # no double claim: g2 sees a running
        assert g2.refresh() == 3
        assert g1.to_json() == g2.to_json() == s2.load("g").to_json()


def test_leases_reclaim_and_lost_results(store_url: str) -> None:
    with Store.open(store_url, max_attempts=2) as store:
        g = store.create_graph()
        with g.mutate() as m:
            m.create_node("task", node_id="t")
        assert g.claim(1, worker_id="w1", lease_s=30) == ["t"]
        node = g.node("t")
        assert node["metadata"]["claimed_by"] == "w1" and node["metadata"]["lease_expires_at"] > 0
        assert g.heartbeat(["t"], worker_id="w2", lease_s=30) == []
        assert g.heartbeat(["t"], worker_id="w1", lease_s=60) == ["t"]
        renewed = g.node("t")["metadata"]["lease_expires_at"]
        assert store.load(g.graph_id).node("t")["metadata"]["lease_expires_at"] == renewed
        assert g.reclaim_expired() == []
        assert g.reclaim_expired(now=renewed + 1) == ["t"]
        assert g.node("t")["state"] == "pending" and g.node("t")["metadata"]["attempt"] == 1
        assert [e["event_type"] for e in g.events()][-2:] == ["node_lease_expired", "node_state_changed"]
        version = g.version
        with pytest.raises(DagPreconditionError) as info:
            g.apply_result("t", "finished", worker_id="w1")
        assert info.value.code == "dag.claim.lease_lost" and g.version == version
        assert g.claim(1, worker_id="w2", lease_s=30) == ["t"]
        until = g.node("t")["metadata"]["lease_expires_at"]
        assert g.reclaim_expired(now=until + 1) == ["t"]
        assert g.node("t")["state"] == "errored" and g.node("t")["metadata"]["error"] == "lease_expired"
        assert store.load(g.graph_id).to_json() == g.to_json()


@pytest.mark.parametrize("url", ["mysql://x/y", "sqlite:///", "file.db", "", "postgresql:/nohost"])
def test_bad_urls(url: str) -> None:
    with pytest.raises(StoreUrlError, match="url"):
        Store.open(url)


def test_bad_url_type_and_options() -> None:
    with pytest.raises(StoreUrlError, match="url must be a str"):
        Store.open(42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_attempts"):
        Store.open(":memory:", max_attempts=0)


def test_unknown_and_duplicate_ids(store_url: str) -> None:
    with Store.open(store_url) as store:
        with pytest.raises(DagNotFoundError, match="nope") as info:
            store.load("nope")
        assert info.value.code == "dag.graph_not_found"
        store.create_graph("g")
        with pytest.raises(StoreConflictError, match="'g'"):
            store.create_graph("g")
        assert store.graph_ids() == ["g"]


def test_unreachable_sqlite_and_postgres(tmp_path: Path) -> None:
    with pytest.raises(StoreConnectionError, match="SQLite"):
        Store.open(f"sqlite:///{tmp_path}/missing-dir/x.db")
    with pytest.raises(StoreConnectionError, match="PostgreSQL"):
        Store.open(f"postgresql://nobody@/postgres?host={tmp_path}")


def test_unknown_schema_version_is_refused(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/s.db"
    Store.open(url).close()
    with closing(sqlite3.connect(tmp_path / "s.db")) as conn, conn:
        conn.execute("UPDATE chainwarden_schema SET version = 99 WHERE component = 'dag'")
    conn.close()
    with pytest.raises(StoreSchemaError, match="99"):
        Store.open(url)


V1_TABLES = [
    "CREATE TABLE chainwarden_dag_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "INSERT INTO chainwarden_dag_meta VALUES ('schema_version', '1')",
    "CREATE TABLE chainwarden_dag_graphs (graph_id TEXT PRIMARY KEY, version BIGINT NOT NULL,"
    " created_at DOUBLE PRECISION NOT NULL)",
    "CREATE TABLE chainwarden_dag_nodes (graph_id TEXT NOT NULL, seq BIGINT NOT NULL, node_id TEXT NOT NULL,"
    " version BIGINT NOT NULL, record TEXT NOT NULL, PRIMARY KEY (graph_id, seq))",
    "CREATE TABLE chainwarden_dag_edges (graph_id TEXT NOT NULL, seq BIGINT NOT NULL, edge_id TEXT NOT NULL,"
    " version BIGINT NOT NULL, record TEXT NOT NULL, PRIMARY KEY (graph_id, seq))",
    "CREATE TABLE chainwarden_dag_events (graph_id TEXT NOT NULL, seq BIGINT NOT NULL,"
    " version BIGINT NOT NULL, record TEXT NOT NULL, PRIMARY KEY (graph_id, seq))",
]


def test_a_version_1_store_is_upgraded_and_its_graphs_keep_working(tmp_path: Path) -> None:
    """A store written by the first release (no change ids, no work summary) opens, upgrades in place, and
    marks itself so that release refuses it afterwards (`chainwarden_dag_meta` says 2)."""
    path = tmp_path / "v1.db"
    old = Graph(graph_id="old")
    with old.mutate() as m:
        m.create_node("task", node_id="t")
    with closing(sqlite3.connect(path)) as conn, conn:
        for ddl in V1_TABLES:
            conn.execute(ddl)
        conn.execute("INSERT INTO chainwarden_dag_graphs VALUES ('old', 1, 0.0)")
        doc = json.loads(old.to_json())
        for i, node in enumerate(doc["nodes"]):
            conn.execute(
                "INSERT INTO chainwarden_dag_nodes VALUES ('old', ?, ?, 1, ?)",
                (i, node["node_id"], json.dumps(node)),
            )
        for i, event in enumerate(doc["events"]):
            conn.execute("INSERT INTO chainwarden_dag_events VALUES ('old', ?, 1, ?)", (i, json.dumps(event)))
    conn.close()
    with Store.open(f"sqlite:///{path}") as store:
        g = store.load("old")
        assert g.version == 1 and g.node("t")["state"] == "pending"
        # Its work was unknown after the upgrade: it shows as possibly claimable until a change says.
        assert [w.graph_id for w in store._work(None, 10).graphs] == ["old"]
        assert g.claim(1, worker_id="w", lease_s=30) == ["t"]
        assert g.version == 2
        assert store._work(None, 10).graphs == []
    with closing(sqlite3.connect(path)) as conn, conn:
        assert conn.execute("SELECT value FROM chainwarden_dag_meta").fetchone() == ("2",)
        assert conn.execute("SELECT version FROM chainwarden_schema WHERE component = 'dag'").fetchone() == (
            2,
        )
    conn.close()


def _kill_idle_connections() -> None:
    with psycopg.connect(postgres_dsn(), autocommit=True) as admin:
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE pid <> pg_backend_pid() AND query NOT ILIKE '%pg_stat_activity%' "
            "AND datname = current_database() AND backend_type = 'client backend' AND state = 'idle'"
        )


def test_a_lost_connection_is_replaced_and_the_change_lands_once() -> None:
    """Connections killed while idle: the next change fails on its first round trip (nothing sent could
    land), so it is done again on a fresh connection, once."""
    url = postgres_url("dag_lost_conn")
    with Store.open(url) as store:
        g = store.create_graph()
        with g.mutate() as m:
            m.create_node("task", node_id="a")
        _kill_idle_connections()
        assert g.mark_running("a")
        assert store.load(g.graph_id).node("a")["state"] == "running"
        assert g.version == 2
        assert [e["event_type"] for e in g.events()].count("node_state_changed") == 1


def test_reads_on_connections_the_server_dropped_are_run_again() -> None:
    """Every pooled connection killed while idle: each read (load, the graph list, the workers' index, a
    refresh) fails on its first round trip and is run again on a fresh connection, within the retry budget."""
    url = postgres_url(f"dag_lost_conn_reads_{uuid.uuid4().hex[:8]}")  # fresh: reruns on one server
    with Store.open(url, pool_size=2) as store:
        g = store.create_graph()
        with g.mutate() as m:
            m.create_node("task", node_id="a")
        for read in (
            lambda: store.load(g.graph_id).node("a")["state"],
            lambda: g.graph_id in store.graph_ids(),
            lambda: [w.graph_id for w in store._work(None, 10).graphs] == [g.graph_id],
            g.refresh,
        ):
            store.load(g.graph_id)  # the pool's connections are open and idle
            store.graph_ids()
            _kill_idle_connections()
            assert read() in ("pending", True, 1)


def test_without_a_retry_budget_a_lost_connection_raises_then_reconnects() -> None:
    url = postgres_url("dag_lost_conn_no_retry")
    with Store.open(url, retry_timeout_s=0) as store:
        g = store.create_graph()
        with g.mutate() as m:
            m.create_node("task", node_id="a")
        _kill_idle_connections()
        with pytest.raises(StoreConnectionError, match="lost the connection"):
            g.mark_running("a")
        assert g.mark_running("a")  # the next call reconnects; nothing of the failed call was written
        assert store.load(g.graph_id).node("a")["state"] == "running"
        assert g.version == 2


def test_a_sqlite_store_syncs_every_commit(tmp_path: Path) -> None:
    """docs/dag.md: a change is durable when the call returns, against a machine crash too (WAL + FULL)."""
    with Store.open(f"sqlite:///{tmp_path / 'durable.db'}") as store:
        g = store.create_graph("g")
        with g.mutate() as m:
            m.create_node("task", node_id="t")
        conn = store._backend._connection()  # the connection the change was committed on
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL


def test_rows_an_object_cannot_take_in_place_make_it_reload_from_the_database(store_url: str) -> None:
    """A stored graph keeps no copy of the rows: when a catch-up cannot apply them in place (here another
    writer rewrote a row under a new id, as a migration might), it reloads every row from the database."""
    with Store.open(store_url) as store, Store.open(store_url) as other:
        g = store.create_graph("g")
        with g.mutate() as m:
            m.create_node("task", node_id="a")
            m.create_node("task", node_id="c")
        h = other.load("g")
        assert h.version == 1 and [n["node_id"] for n in h.nodes()] == ["a", "c"]
        ((text,),) = raw_execute(
            store_url, "SELECT record FROM chainwarden_dag_nodes WHERE graph_id = %s AND seq = 0", ("g",)
        )
        record = json.loads(text)
        record["node_id"] = "b"
        rewrite = "UPDATE chainwarden_dag_nodes SET record = %s, node_id = %s, version = 2"
        raw_execute(store_url, rewrite + " WHERE graph_id = %s AND seq = 0", (json.dumps(record), "b", "g"))
        raw_execute(store_url, "UPDATE chainwarden_dag_graphs SET version = 2 WHERE graph_id = %s", ("g",))
        assert h.refresh() == 2
        # Only row 0 changed, yet the reload has them all (the changed rows alone would lose "c").
        assert [n["node_id"] for n in h.nodes()] == ["b", "c"]
        assert h.to_json() == other.load("g").to_json()


@pytest.mark.parametrize(
    ("nodes", "edges", "message"),
    [
        ([(-1, "{}")], [], "nodes[0] seq must be an int >= 0"),
        ([(True, "{}")], [], "nodes[0] seq must be an int >= 0"),
        ([(0, b"{}")], [], "nodes[0] record must be a string"),
        ([], "rows", "edges must be a list of (seq, record) pairs"),
        ([], [(0,)], "edges[0] must be a (seq, record) pair"),
    ],
)
def test_stored_rows_of_the_wrong_shape_are_a_typed_error(nodes: object, edges: object, message: str) -> None:
    # The native loader behind Store: rows come from the store's own tables, but a wrong shape is still
    # named, never an OverflowError or a crash.
    from chainwarden._core import dag_apply_records, dag_from_records  # noqa: PLC0415

    with pytest.raises(DagInvalidArgumentError, match=re.escape(message)):
        dag_from_records("g", nodes, edges, [])  # type: ignore[arg-type]
    engine = dag_from_records("g", [], [], [])
    with pytest.raises(DagInvalidArgumentError, match=re.escape(message)):
        dag_apply_records(engine, nodes, edges, [])  # type: ignore[arg-type]
    assert len(engine) == 0

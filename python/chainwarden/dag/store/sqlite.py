"""The embedded store: one SQLite file in WAL mode; a change is a `BEGIN IMMEDIATE` transaction, so writers
to the file take turns (the database lock is the graph lock) and readers never wait. One host, one clock:
SQLite's own `'now'` times the leases (the operating system's clock, never a patched or skewed process
clock)."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from chainwarden._sql import Fault, classify, ensure
from chainwarden._sql.sqlite import MEMORY, CannotOpen, Connection, Cursor, connect
from chainwarden.dag.store.backend import (
    Backend,
    GraphWork,
    Loaded,
    Rows,
    Tx,
    Work,
    WorkIndex,
)
from chainwarden.dag.store.errors import (
    StoreConflictError,
    StoreConnectionError,
    StoreError,
    StoreSchemaError,
    graph_not_found,
)
from chainwarden.dag.store.schema import CHANGES_KEPT, SCHEMA

#: How long a change waits for another process's transaction on the same file before failing.
BUSY_TIMEOUT_S = 30.0
#: The database's clock in epoch seconds (SQLite's 'now', millisecond precision).
NOW = "(julianday('now') - 2440587.5) * 86400.0"

_TABLES = ("chainwarden_dag_nodes", "chainwarden_dag_edges", "chainwarden_dag_events")
_LOCK = (
    f"SELECT version, leaf_repair, claimable, running, lease_due, {NOW} "
    "FROM chainwarden_dag_graphs WHERE graph_id = %s"
)
_UPSERT = (
    "INSERT INTO {table} (graph_id, seq, {key}, version, record) VALUES (%s, %s, %s, %s, %s) "
    "ON CONFLICT (graph_id, seq) DO UPDATE SET record = excluded.record, version = excluded.version"
)
_SUMMARY = (
    "UPDATE chainwarden_dag_graphs SET claimable = %s, running = %s, lease_due = %s WHERE graph_id = %s"
)


class SqliteBackend(Backend):
    """One connection, used by one thread at a time (the lock)."""

    def __init__(self, target: str, *, retry_timeout_s: float, pool_size: int) -> None:
        super().__init__(target, retry_timeout_s=retry_timeout_s, pool_size=pool_size)
        self._lock = threading.RLock()
        self._conn: Connection | None = None
        self._closed = False
        with self._lock:
            self._connection()

    def _connection(self) -> Connection:
        if self._closed:
            raise StoreError("the store is closed")
        if self._conn is None:
            try:
                # WAL + FULL: a committed change is on disk when the call returns, so it survives a crash of
                # the machine too, not only of the process (docs/dag.md "Stores and workers").
                conn = connect(self._target, timeout_s=BUSY_TIMEOUT_S, synchronous="FULL")
            except CannotOpen as exc:
                raise StoreConnectionError(f"cannot open SQLite store: {exc}") from exc
            try:
                ensure(conn, SCHEMA, too_new=_too_new)
            except sqlite3.Error as exc:
                conn.close()
                raise StoreConnectionError(f"cannot open SQLite store {self._target!r}: {exc}") from exc
            except BaseException:
                conn.close()
                raise
            self._conn = conn
        return self._conn

    def close(self) -> None:
        with self._lock:
            conn, self._conn = self._conn, None
            self._closed = True
            if conn is not None:
                conn.close()

    @contextmanager
    def _transaction(self, *, write: bool) -> Iterator[Cursor]:
        with self._lock:
            conn = self._connection()
            try:
                conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
                cur = conn.cursor()
            except sqlite3.Error as exc:
                raise self._error(exc) from exc
            try:
                yield cur
            except BaseException:
                _rollback(conn)
                raise
            try:
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                _rollback(conn)
                raise self._error(exc, "commit failed: ") from exc

    def _error(self, exc: sqlite3.Error, what: str = "") -> StoreError:
        if classify(exc) is Fault.LOCK:
            return StoreConnectionError(f"SQLite store {self._target!r}: {what}{exc}")
        return StoreError(f"SQLite store {self._target!r}: {what}{exc}")

    # ---- whole-store operations -------------------------------------------------------------------------

    def create_graph(self, graph_id: str, at: float, *, leaf_repair: bool) -> None:
        with self._transaction(write=True) as cur:
            try:
                cur.execute(
                    "INSERT INTO chainwarden_dag_graphs (graph_id, version, created_at, leaf_repair) "
                    "VALUES (%s, 0, %s, %s)",
                    (graph_id, at, leaf_repair),
                )
            except sqlite3.IntegrityError:
                raise StoreConflictError(f"graph {graph_id!r} already exists in the store") from None

    def graph_ids(self) -> list[str]:
        with self._transaction(write=False) as cur:
            cur.execute("SELECT graph_id FROM chainwarden_dag_graphs ORDER BY graph_id")
            return [r[0] for r in cur.fetchall()]

    def load(self, graph_id: str) -> Loaded:
        # One read transaction: in WAL mode every read in it sees the same committed version.
        with self._transaction(write=False) as cur:
            cur.execute(
                "SELECT version, leaf_repair FROM chainwarden_dag_graphs WHERE graph_id = %s", (graph_id,)
            )
            row = cur.fetchone()
            if row is None:
                raise graph_not_found(graph_id)
            return Loaded(int(row[0]), bool(row[1]), _rows_since(cur, graph_id, -1))

    def read_since(self, graph_id: str, version: int) -> tuple[int, Rows]:
        with self._transaction(write=False) as cur:
            cur.execute("SELECT version FROM chainwarden_dag_graphs WHERE graph_id = %s", (graph_id,))
            row = cur.fetchone()
            if row is None:
                raise graph_not_found(graph_id)
            return int(row[0]), _rows_since(cur, graph_id, version)

    @contextmanager
    def change(self, graph_id: str, seen: int) -> Iterator[Tx]:
        # BEGIN IMMEDIATE holds the file's write lock: the graph's row is as good as locked.
        with self._transaction(write=True) as cur:
            cur.execute(_LOCK, (graph_id,))
            row = cur.fetchone()
            if row is None:
                raise graph_not_found(graph_id)
            version = int(row[0])
            tx = Tx(
                graph_id,
                version,
                float(row[5]),
                bool(row[1]),
                Work(int(row[2]), int(row[3]), row[4]),
                _every_row=lambda: _rows_since(cur, graph_id, -1),
            )
            if version != seen:
                tx.caught_up = _rows_since(cur, graph_id, seen)
            yield tx
            self._write(cur, tx)

    def _write(self, cur: Cursor, tx: Tx) -> None:
        work = tx.new_work
        if work is None:
            return
        if tx.delta is not None:
            version = tx.version + 1
            delta = tx.delta
            for table, key, rows in (
                ("chainwarden_dag_nodes", "node_id", delta.nodes),
                ("chainwarden_dag_edges", "edge_id", delta.edges),
            ):
                if rows:
                    cur.executemany(
                        _UPSERT.format(table=table, key=key),
                        [(tx.graph_id, seq, k, version, rec) for seq, k, rec in rows],
                    )
            if delta.events:
                cur.executemany(
                    "INSERT INTO chainwarden_dag_events (graph_id, seq, version, record) "
                    "VALUES (%s, %s, %s, %s)",
                    [(tx.graph_id, seq, version, rec) for seq, rec in delta.events],
                )
            cur.execute(
                "INSERT INTO chainwarden_dag_changes (graph_id, version, change_id) VALUES (%s, %s, %s)",
                (tx.graph_id, version, tx.change_id),
            )
            cur.execute(
                "DELETE FROM chainwarden_dag_changes WHERE graph_id = %s AND version = %s",
                (tx.graph_id, version - CHANGES_KEPT),
            )
            cur.execute(
                "UPDATE chainwarden_dag_graphs SET version = %s WHERE graph_id = %s", (version, tx.graph_id)
            )
        cur.execute(_SUMMARY, (work.claimable, work.running, work.lease_due, tx.graph_id))

    def work(self, graph_ids: Sequence[str] | None, limit: int) -> WorkIndex:
        where, args = "", tuple[str, ...]()
        if graph_ids is not None:
            where, args = f" AND graph_id IN ({', '.join(['%s'] * len(graph_ids))})", tuple(graph_ids)
        with self._transaction(write=False) as cur:
            cur.execute(f"SELECT {NOW}")
            now = float(cur.fetchone()[0])
            cur.execute(
                "SELECT graph_id, claimable, lease_due IS NOT NULL AND lease_due <= %s "
                f"FROM chainwarden_dag_graphs WHERE (claimable > 0 OR lease_due <= %s){where} "
                "ORDER BY random() LIMIT %s",
                (now, now, *args, limit),
            )
            graphs = [GraphWork(r[0], int(r[1]), bool(r[2])) for r in cur.fetchall()]
            cur.execute(
                f"SELECT EXISTS (SELECT 1 FROM chainwarden_dag_graphs WHERE lease_due IS NOT NULL{where})",
                args,
            )
            leased = bool(cur.fetchone()[0])
        return WorkIndex(now, graphs, leased)


def _rows_since(cur: Cursor, graph_id: str, version: int) -> Rows:
    out: list[list[tuple[int, str]]] = []
    args: tuple[object, ...]
    for table in _TABLES:
        if version < 0:
            # Every row, in whatever order the database finds them: the bulk load puts them in arena order
            # (`dag/bulk.rs`), so nothing is sorted here.
            sql, args = f"SELECT seq, record FROM {table} WHERE graph_id = %s", (graph_id,)
        else:
            sql = f"SELECT seq, record FROM {table} WHERE graph_id = %s AND version > %s ORDER BY seq"
            args = (graph_id, version)
        cur.execute(sql, args)
        out.append(cur.fetchall())
    return out[0], out[1], out[2]


def _too_new(found: int) -> StoreSchemaError:
    return StoreSchemaError(
        f"the store has DAG schema version {found}; this chainwarden reads version {SCHEMA.version} or older"
    )


def _rollback(conn: sqlite3.Connection) -> None:
    # No transaction may be left to undo (SQLite already rolled back).
    with contextlib.suppress(sqlite3.Error):
        conn.execute("ROLLBACK")


__all__ = ["MEMORY", "SqliteBackend"]

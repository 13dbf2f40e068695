"""The SQL both stores share: a change is one transaction that locks the graph's row, reads what is newer than
the caller's version, writes the delta rows and the new version (docs/dag.md "Stores and workers")."""

from __future__ import annotations

import contextlib
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from chainwarden.dag.store.errors import StoreConflictError, StoreError, StoreSchemaError, graph_not_found
from chainwarden.dag.store.schema import META, SCHEMA_VERSION, TABLES

Row = tuple[int, str, str]
EventRow = tuple[int, str]
Delta = tuple[list[Row], list[Row], list[EventRow]]
#: (seq, record) rows of nodes, edges and events.
Rows = tuple[list[tuple[int, str]], list[tuple[int, str]], list[tuple[int, str]]]


class Tx:
    """One open change on one graph, its row locked; `version` is the committed version at lock time."""

    __slots__ = ("_backend", "_cur", "graph_id", "prefetched", "version")

    def __init__(self, backend: Backend, cur: Any, graph_id: str, version: int) -> None:
        self._backend = backend
        self._cur = cur
        self.graph_id = graph_id
        self.version = version
        #: Rows newer than the caller's version, when the backend read them together with the lock.
        self.prefetched: Rows | None = None

    def rows_since(self, version: int) -> Rows:
        if self.prefetched is not None:
            return self.prefetched
        return self._backend._rows_since(self._cur, self.graph_id, version)

    def every_row(self) -> Rows:
        """Every row of the graph, in arena order (a version below 0 reads them all)."""
        return self._backend._rows_since(self._cur, self.graph_id, -1)

    def write(self, delta: Delta, version: int) -> None:
        self._backend._write(self._cur, self.graph_id, delta, version)


class Backend(ABC):
    """One connection, used by one thread at a time (the lock); reconnects after a lost connection."""

    #: The driver's parameter marker; the SQL below is written with `?`.
    marker = "?"

    def __init__(self, target: str) -> None:
        self._target = target
        self._lock = threading.RLock()
        self._conn: Any = None
        self._closed = False
        with self._lock:
            self._connection()

    def _sql(self, text: str) -> str:
        return text if self.marker == "?" else text.replace("?", self.marker)

    @abstractmethod
    def _connect(self) -> Any: ...

    @abstractmethod
    @contextmanager
    def _transaction(self, *, write: bool) -> Iterator[Any]:
        """A cursor inside one transaction (taking the write lock at once when `write`); driver errors are
        translated to `StoreError`s and a broken connection is dropped so the next call reconnects."""

    @abstractmethod
    def _lock_graph(self, cur: Any, graph_id: str) -> int | None: ...

    def _schema_lock(self, cur: Any) -> None:  # noqa: B027 - a hook: only PostgreSQL needs it
        """Serializes first-use schema creation between processes (SQLite's write lock already does)."""

    def _connection(self) -> Any:
        if self._closed:
            raise StoreError("the store is closed")
        if self._conn is None:
            self._conn = self._connect()
            try:
                self._ensure_schema()
            except BaseException:
                # A store we cannot use (another schema version, a lost server) keeps no connection open.
                self._drop()
                raise
        return self._conn

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            # A broken connection may fail to close; it is gone either way.
            with contextlib.suppress(Exception):
                conn.close()

    def _ensure_schema(self) -> None:
        with self._transaction(write=True) as cur:
            self._schema_lock(cur)
            cur.execute(META)
            cur.execute(
                self._sql("SELECT value FROM chainwarden_dag_meta WHERE key = ?"), ("schema_version",)
            )
            row = cur.fetchone()
            if row is None:
                for ddl in TABLES:
                    cur.execute(ddl)
                cur.execute(
                    self._sql("INSERT INTO chainwarden_dag_meta (key, value) VALUES (?, ?)"),
                    ("schema_version", str(SCHEMA_VERSION)),
                )
            elif row[0] != str(SCHEMA_VERSION):
                raise StoreSchemaError(
                    f"the store has DAG schema version {row[0]}; "
                    f"this chainwarden reads version {SCHEMA_VERSION}"
                )

    def close(self) -> None:
        with self._lock:
            self._drop()
            self._closed = True

    # ---- whole-store operations -------------------------------------------------------------------------

    def create_graph(self, graph_id: str, at: float) -> None:
        with self._lock, self._transaction(write=True) as cur:
            cur.execute(self._sql("SELECT 1 FROM chainwarden_dag_graphs WHERE graph_id = ?"), (graph_id,))
            if cur.fetchone() is not None:
                raise StoreConflictError(f"graph {graph_id!r} already exists in the store")
            cur.execute(
                self._sql(
                    "INSERT INTO chainwarden_dag_graphs (graph_id, version, created_at) VALUES (?, 0, ?)"
                ),
                (graph_id, at),
            )

    def graph_ids(self) -> list[str]:
        with self._lock, self._transaction(write=False) as cur:
            cur.execute("SELECT graph_id FROM chainwarden_dag_graphs ORDER BY graph_id")
            return [r[0] for r in cur.fetchall()]

    def load(self, graph_id: str) -> tuple[int, Rows]:
        with self._lock, self._transaction(write=False) as cur:
            cur.execute(
                self._sql("SELECT version FROM chainwarden_dag_graphs WHERE graph_id = ?"), (graph_id,)
            )
            row = cur.fetchone()
            if row is None:
                raise graph_not_found(graph_id)
            return int(row[0]), self._rows_since(cur, graph_id, -1)

    @contextmanager
    def change(self, graph_id: str, seen: int) -> Iterator[Tx]:
        """The graph's row locked for one change (the caller has seen version `seen`); commits on normal exit,
        rolls back if the block raises."""
        with self._lock, self._transaction(write=True) as cur:
            version = self._lock_graph(cur, graph_id)
            if version is None:
                raise graph_not_found(graph_id)
            yield Tx(self, cur, graph_id, version)

    # ---- rows ----------------------------------------------------------------------------------------------

    def _rows_since(self, cur: Any, graph_id: str, version: int) -> Rows:
        out: list[list[tuple[int, str]]] = []
        args: tuple[object, ...]
        for table in ("chainwarden_dag_nodes", "chainwarden_dag_edges", "chainwarden_dag_events"):
            if version < 0:
                # Every row, in whatever order the database finds them: the bulk load puts them in arena
                # order (`dag/bulk.rs`), so PostgreSQL never sorts (with stale statistics it sorted on disk).
                sql, args = f"SELECT seq, record FROM {table} WHERE graph_id = ?", (graph_id,)
            else:
                sql = f"SELECT seq, record FROM {table} WHERE graph_id = ? AND version > ? ORDER BY seq"
                args = (graph_id, version)
            cur.execute(self._sql(sql), args)
            out.append(cur.fetchall())
        return out[0], out[1], out[2]

    def _write(self, cur: Any, graph_id: str, delta: Delta, version: int) -> None:
        nodes, edges, events = delta
        for table, key, rows in (
            ("chainwarden_dag_nodes", "node_id", nodes),
            ("chainwarden_dag_edges", "edge_id", edges),
        ):
            if rows:
                cur.executemany(
                    self._sql(
                        f"INSERT INTO {table} (graph_id, seq, {key}, version, record) VALUES (?, ?, ?, ?, ?) "
                        "ON CONFLICT (graph_id, seq) DO UPDATE SET record = excluded.record, "
                        "version = excluded.version"
                    ),
                    _with_graph(graph_id, version, rows),
                )
        if events:
            cur.executemany(
                self._sql(
                    "INSERT INTO chainwarden_dag_events (graph_id, seq, version, record) VALUES (?, ?, ?, ?)"
                ),
                [(graph_id, seq, version, rec) for seq, rec in events],
            )
        cur.execute(
            self._sql("UPDATE chainwarden_dag_graphs SET version = ? WHERE graph_id = ?"), (version, graph_id)
        )


def _with_graph(graph_id: str, version: int, rows: Sequence[Row]) -> list[tuple[str, int, str, int, str]]:
    return [(graph_id, seq, key, version, rec) for seq, key, rec in rows]

"""PostgreSQL (psycopg 3): many processes and hosts; a change locks the graph's row (`SELECT … FOR UPDATE`),
so different graphs never wait on each other.

A change costs two round trips: `BEGIN` + the row lock + the rows newer than the caller's version in one, and
every delta row + the new version + `COMMIT` in the other (psycopg's pipeline mode sends several statements
before reading any result, each bound and prepared by the server); round trips, not rows, are what a change
costs on a server.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from chainwarden._secrets import mask_secrets
from chainwarden.dag.store.backend import Backend, Delta, Rows, Tx
from chainwarden.dag.store.errors import StoreConnectionError, StoreError, graph_not_found

#: Advisory lock taken while the schema is checked / created, so concurrent first opens do not collide.
SCHEMA_LOCK_KEY = 0x63776461  # "cwda"

LOCK = "SELECT version FROM chainwarden_dag_graphs WHERE graph_id = %(g)s FOR UPDATE"
CATCH_UP = (
    "SELECT 0, seq, record FROM chainwarden_dag_nodes WHERE graph_id = %(g)s AND version > %(v)s "
    "UNION ALL SELECT 1, seq, record FROM chainwarden_dag_edges WHERE graph_id = %(g)s AND version > %(v)s "
    "UNION ALL SELECT 2, seq, record FROM chainwarden_dag_events WHERE graph_id = %(g)s AND version > %(v)s "
    "ORDER BY 1, 2"
)

UPSERT = (
    "INSERT INTO {table} (graph_id, seq, {key}, version, record) "
    "SELECT %(g)s, s, k, %(v)s, r "
    "FROM unnest(%(s)s::bigint[], %(k)s::text[], %(r)s::text[]) AS t(s, k, r) "
    "ON CONFLICT (graph_id, seq) DO UPDATE SET record = excluded.record, version = excluded.version"
)
UPSERTS = {
    "nodes": UPSERT.format(table="chainwarden_dag_nodes", key="node_id"),
    "edges": UPSERT.format(table="chainwarden_dag_edges", key="edge_id"),
}
INSERT_EVENTS = (
    "INSERT INTO chainwarden_dag_events (graph_id, seq, version, record) "
    "SELECT %(g)s, s, %(v)s, r FROM unnest(%(s)s::bigint[], %(r)s::text[]) AS t(s, r)"
)
BUMP = "UPDATE chainwarden_dag_graphs SET version = %(v)s WHERE graph_id = %(g)s"


def _psycopg() -> Any:
    try:
        import psycopg  # noqa: PLC0415 - optional: the `postgres` extra
    except ImportError as exc:  # pragma: no cover - the `postgres` extra is missing
        raise StoreError("PostgreSQL stores need psycopg: pip install 'chainwarden[postgres]'") from exc
    return psycopg


class PostgresBackend(Backend):
    marker = "%s"

    def _connect(self) -> Any:
        psycopg = _psycopg()
        try:
            return psycopg.connect(self._target, autocommit=True, connect_timeout=10)
        except psycopg.Error as exc:
            where = mask_secrets(self._target)  # docs/design.md §31: named, its password masked
            raise StoreConnectionError(
                f"cannot connect to the PostgreSQL store {where!r}: {mask_secrets(str(exc))}"
            ) from exc

    @contextmanager
    def _translated(self) -> Iterator[None]:
        psycopg = _psycopg()
        try:
            yield
        except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
            # The connection is gone: nothing of this transaction was committed; the next call reconnects.
            self._drop()
            raise StoreConnectionError(
                f"lost the connection to the PostgreSQL store: {mask_secrets(str(exc))}"
            ) from exc
        except psycopg.Error as exc:
            conn = self._conn
            if conn is None or conn.closed or conn.broken:
                self._drop()
                raise StoreConnectionError(
                    f"lost the connection to the PostgreSQL store: {mask_secrets(str(exc))}"
                ) from exc
            raise StoreError(f"PostgreSQL store: {exc}") from exc

    @contextmanager
    def _transaction(self, *, write: bool) -> Iterator[Any]:
        conn = self._connection()
        with self._translated(), conn.transaction(), conn.cursor() as cur:
            yield cur

    def _schema_lock(self, cur: Any) -> None:
        cur.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK_KEY,))

    def _lock_graph(self, cur: Any, graph_id: str) -> int | None:
        cur.execute("SELECT version FROM chainwarden_dag_graphs WHERE graph_id = %s FOR UPDATE", (graph_id,))
        row = cur.fetchone()
        return None if row is None else int(row[0])

    @contextmanager
    def change(self, graph_id: str, seen: int) -> Iterator[Tx]:
        psycopg = _psycopg()
        with self._lock:
            conn = self._connection()
            cur = conn.cursor()
            open_tx = False
            try:
                with self._translated():
                    # Pipeline mode: BEGIN, the row lock and the catch-up go out together and come back in one
                    # round trip, as server-side-bound statements that psycopg prepares once they repeat.
                    args = {"g": graph_id, "v": seen}
                    with conn.pipeline():
                        conn.execute("BEGIN")
                        open_tx = True
                        cur.execute(LOCK, args)
                        rows = conn.cursor()
                        rows.execute(CATCH_UP, args)
                    row = cur.fetchone()
                    if row is None:
                        raise graph_not_found(graph_id)
                    tx = _PgTx(self, cur, graph_id, int(row[0]))
                    if tx.version != seen:
                        tx.prefetched = _split(rows.fetchall())
                    rows.close()
                yield tx
                if not tx.committed:
                    with self._translated():
                        cur.execute("COMMIT")
                open_tx = False
            finally:
                if open_tx and self._conn is not None and not self._conn.closed:
                    try:
                        self._conn.execute("ROLLBACK")
                    except psycopg.Error:  # the connection broke: the server rolls back by itself
                        self._drop()
                cur.close()

    def _write_and_commit(self, cur: Any, graph_id: str, delta: Delta, version: int) -> None:
        nodes, edges, events = delta
        base = {"g": graph_id, "v": version}
        conn = cur.connection
        # Every row, the new version and COMMIT in one round trip (pipeline mode, see `change`).
        with self._translated(), conn.pipeline():
            for name, rows in (("nodes", nodes), ("edges", edges)):
                if rows:
                    cur.execute(
                        UPSERTS[name],
                        {
                            **base,
                            "s": [r[0] for r in rows],
                            "k": [r[1] for r in rows],
                            "r": [r[2] for r in rows],
                        },
                    )
            if events:
                cur.execute(INSERT_EVENTS, {**base, "s": [e[0] for e in events], "r": [e[1] for e in events]})
            cur.execute(BUMP, base)
            conn.execute("COMMIT")


class _PgTx(Tx):
    __slots__ = ("committed",)

    def __init__(self, backend: PostgresBackend, cur: Any, graph_id: str, version: int) -> None:
        super().__init__(backend, cur, graph_id, version)
        self.committed = False

    def write(self, delta: Delta, version: int) -> None:
        backend = self._backend
        assert isinstance(backend, PostgresBackend)
        backend._write_and_commit(self._cur, self.graph_id, delta, version)
        self.committed = True


def _split(rows: list[tuple[int, int, str]]) -> Rows:
    out: tuple[list[tuple[int, str]], list[tuple[int, str]], list[tuple[int, str]]] = ([], [], [])
    for kind, seq, record in rows:
        out[kind].append((int(seq), record))
    return out

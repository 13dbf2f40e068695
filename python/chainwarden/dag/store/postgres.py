"""PostgreSQL (psycopg 3): many processes and hosts; a change locks the graph's row (`SELECT … FOR UPDATE`),
so different graphs never wait on each other.

A change costs two round trips: `BEGIN` + the row lock + the rows newer than the caller's version in one, and
every delta row + the new version + `COMMIT` in the other (client-side binding lets one message carry several
statements); round trips, not rows, are what a change costs on a server.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from chainwarden.dag.store.backend import Backend, Delta, Rows, Tx
from chainwarden.dag.store.errors import StoreConnectionError, StoreError, graph_not_found

#: Advisory lock taken while the schema is checked / created, so concurrent first opens do not collide.
SCHEMA_LOCK_KEY = 0x63776461  # "cwda"

LOCK_AND_READ = (
    "BEGIN; SELECT version FROM chainwarden_dag_graphs WHERE graph_id = %(g)s FOR UPDATE; "
    "SELECT 0, seq, record FROM chainwarden_dag_nodes WHERE graph_id = %(g)s AND version > %(v)s "
    "UNION ALL SELECT 1, seq, record FROM chainwarden_dag_edges WHERE graph_id = %(g)s AND version > %(v)s "
    "UNION ALL SELECT 2, seq, record FROM chainwarden_dag_events WHERE graph_id = %(g)s AND version > %(v)s "
    "ORDER BY 1, 2"
)

UPSERT = (
    "INSERT INTO {table} (graph_id, seq, {key}, version, record) "
    "SELECT %(g)s, s, k, %(v)s, r "
    "FROM unnest(%({p}s)s::bigint[], %({p}k)s::text[], %({p}r)s::text[]) AS t(s, k, r) "
    "ON CONFLICT (graph_id, seq) DO UPDATE SET record = excluded.record, version = excluded.version; "
)

INSERT_EVENTS = (
    "INSERT INTO chainwarden_dag_events (graph_id, seq, version, record) "
    "SELECT %(g)s, s, %(v)s, r FROM unnest(%(es)s::bigint[], %(er)s::text[]) AS t(s, r); "
)


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
            raise StoreConnectionError(f"cannot connect to the PostgreSQL store: {exc}") from exc

    @contextmanager
    def _translated(self) -> Iterator[None]:
        psycopg = _psycopg()
        try:
            yield
        except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
            # The connection is gone: nothing of this transaction was committed; the next call reconnects.
            self._drop()
            raise StoreConnectionError(f"lost the connection to the PostgreSQL store: {exc}") from exc
        except psycopg.Error as exc:
            conn = self._conn
            if conn is None or conn.closed or conn.broken:
                self._drop()
                raise StoreConnectionError(f"lost the connection to the PostgreSQL store: {exc}") from exc
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
            cur = psycopg.ClientCursor(conn)
            open_tx = False
            try:
                with self._translated():
                    cur.execute(LOCK_AND_READ, {"g": graph_id, "v": seen})
                    open_tx = True
                    cur.nextset()
                    row = cur.fetchone()
                    if row is None:
                        raise graph_not_found(graph_id)
                    cur.nextset()
                    tx = _PgTx(self, cur, graph_id, int(row[0]))
                    if tx.version != seen:
                        tx.prefetched = _split(cur.fetchall())
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
        sql = ""
        params: dict[str, Any] = {"g": graph_id, "v": version}
        for prefix, table, key, rows in (
            ("n", "chainwarden_dag_nodes", "node_id", nodes),
            ("d", "chainwarden_dag_edges", "edge_id", edges),
        ):
            if rows:
                sql += UPSERT.format(table=table, key=key, p=prefix)
                params[f"{prefix}s"] = [r[0] for r in rows]
                params[f"{prefix}k"] = [r[1] for r in rows]
                params[f"{prefix}r"] = [r[2] for r in rows]
        if events:
            sql += INSERT_EVENTS
            params["es"] = [e[0] for e in events]
            params["er"] = [e[1] for e in events]
        sql += "UPDATE chainwarden_dag_graphs SET version = %(v)s WHERE graph_id = %(g)s; COMMIT"
        with self._translated():
            cur.execute(sql, params)


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

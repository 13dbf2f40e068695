"""PostgreSQL (psycopg 3): many processes and hosts; a change locks the graph's row (`SELECT … FOR UPDATE`),
so different graphs never wait on each other."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from chainwarden.dag.store.backend import Backend
from chainwarden.dag.store.errors import StoreConnectionError, StoreError


#: Advisory lock taken while the schema is checked / created, so concurrent first opens do not collide.
SCHEMA_LOCK_KEY = 0x63776461  # "cwda"


def _psycopg() -> Any:
    try:
        import psycopg
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
    def _transaction(self, *, write: bool) -> Iterator[Any]:
        psycopg = _psycopg()
        conn = self._connection()
        try:
            with conn.transaction(), conn.cursor() as cur:
                yield cur
        except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
            # The connection is gone: nothing of this transaction was committed; the next call reconnects.
            self._drop()
            raise StoreConnectionError(f"lost the connection to the PostgreSQL store: {exc}") from exc
        except psycopg.Error as exc:
            if conn.closed or conn.broken:
                self._drop()
                raise StoreConnectionError(f"lost the connection to the PostgreSQL store: {exc}") from exc
            raise StoreError(f"PostgreSQL store: {exc}") from exc

    def _schema_lock(self, cur: Any) -> None:
        cur.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK_KEY,))

    def _lock_graph(self, cur: Any, graph_id: str) -> int | None:
        cur.execute("SELECT version FROM chainwarden_dag_graphs WHERE graph_id = %s FOR UPDATE", (graph_id,))
        row = cur.fetchone()
        return None if row is None else int(row[0])

"""The embedded store: one SQLite file in WAL mode; a change is a `BEGIN IMMEDIATE` transaction, so writers to
the file take turns (the database lock is the graph lock) and readers never wait."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from chainwarden.dag.store.backend import Backend
from chainwarden.dag.store.errors import StoreConnectionError, StoreError
from chainwarden.dag.store.url import MEMORY

#: How long a change waits for another process's transaction on the same file before failing.
BUSY_TIMEOUT_S = 30.0


class SqliteBackend(Backend):
    def _connect(self) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(
                self._target, isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_S
            )
        except sqlite3.Error as exc:
            raise StoreConnectionError(f"cannot open SQLite store {self._target!r}: {exc}") from exc
        try:
            if self._target != MEMORY:
                conn.execute("PRAGMA journal_mode=WAL")
                # WAL + FULL: a committed change is on disk when the call returns, so it survives a
                # crash of the machine too, not only of the process (docs/dag.md "Stores and workers";
                # the billing ledger does the same).
                conn.execute("PRAGMA synchronous=FULL")
        except sqlite3.Error as exc:
            conn.close()
            raise StoreConnectionError(f"cannot open SQLite store {self._target!r}: {exc}") from exc
        return conn

    @contextmanager
    def _transaction(self, *, write: bool) -> Iterator[Any]:
        conn = self._connection()
        try:
            conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
        except sqlite3.Error as exc:
            raise StoreError(f"SQLite store {self._target!r}: {exc}") from exc
        cur = conn.cursor()
        try:
            yield cur
        except BaseException:
            _rollback(conn)
            raise
        try:
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            _rollback(conn)
            raise StoreError(f"SQLite store {self._target!r}: commit failed: {exc}") from exc

    def _lock_graph(self, cur: Any, graph_id: str) -> int | None:
        # BEGIN IMMEDIATE already holds the file's write lock.
        cur.execute("SELECT version FROM chainwarden_dag_graphs WHERE graph_id = ?", (graph_id,))
        row = cur.fetchone()
        return None if row is None else int(row[0])


def _rollback(conn: sqlite3.Connection) -> None:
    # No transaction may be left to undo (SQLite already rolled back).
    with contextlib.suppress(sqlite3.Error):
        conn.execute("ROLLBACK")

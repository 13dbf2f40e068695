"""SQLite for every store: how a file is opened (autocommit, so transactions are explicit; WAL; the sync
level the store's promise needs), with errors that name the file."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import Any, Literal

from chainwarden._sql.params import qmark
from chainwarden.errors import ChainwardenError

MEMORY = ":memory:"


class CannotOpen(ChainwardenError):
    """The file could not be opened or set up; the message names it."""


def connect(
    path: str,
    *,
    timeout_s: float,
    synchronous: Literal["FULL", "NORMAL"] = "FULL",
    wal: bool = True,
) -> Connection:
    """A connection to `path` in autocommit mode (every transaction is an explicit BEGIN), usable from any
    thread (callers serialise their use), in WAL mode unless in memory, synced as `synchronous` says; its
    statements take `%s` markers."""
    try:
        conn = sqlite3.connect(
            path, isolation_level=None, check_same_thread=False, timeout=timeout_s, factory=Connection
        )
    except sqlite3.Error as exc:
        raise CannotOpen(f"cannot open SQLite file {path!r}: {exc}") from exc
    try:
        # Reading the mode takes no lock; only a file that is not in WAL mode yet (a new one) is switched.
        mode = "" if path == MEMORY else str(conn.execute("PRAGMA journal_mode").fetchone()[0])
        if wal and path != MEMORY and mode.lower() != "wal":
            conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(f"PRAGMA synchronous={synchronous}")
    except sqlite3.Error as exc:
        conn.close()
        raise CannotOpen(f"cannot open SQLite file {path!r}: {exc}") from exc
    return conn


class Cursor(sqlite3.Cursor):
    """A sqlite3 cursor that takes statements in the one parameter style (`%s`)."""

    def execute(self, sql: str, parameters: Any = (), /) -> Cursor:
        return super().execute(qmark(sql), parameters)

    def executemany(self, sql: str, parameters: Iterable[Any], /) -> Cursor:
        return super().executemany(qmark(sql), parameters)


class Connection(sqlite3.Connection):
    """A sqlite3 connection whose statements (and cursors') take the one parameter style (`%s`)."""

    def cursor(self, factory: Any = Cursor) -> Any:
        return super().cursor(factory)

    def execute(self, sql: str, parameters: Any = (), /) -> Cursor:
        cursor: Cursor = self.cursor()
        return cursor.execute(sql, parameters)

    def executemany(self, sql: str, parameters: Iterable[Any], /) -> Cursor:
        cursor: Cursor = self.cursor()
        return cursor.executemany(sql, parameters)

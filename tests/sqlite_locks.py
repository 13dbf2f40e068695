"""A real competing writer for SQLite tests: a second connection that holds a file's write lock."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def write_locked(path: Path) -> Iterator[sqlite3.Connection]:
    """Holds `BEGIN IMMEDIATE` on `path` for the block (usable from another thread), then lets go."""
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    try:
        yield holder
    finally:
        if holder.in_transaction:
            holder.execute("ROLLBACK")
        holder.close()

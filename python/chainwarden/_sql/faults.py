"""What a database error means for the caller: may the work be tried again, is its outcome unknown, or is it
final (docs/design.md §36).

- `LOCK` (transient): a lock wait, a deadlock victim, a serialization failure, SQLite's busy file. Nothing of
  the transaction stayed; run it again at once.
- `CONNECTION` (transient): the server could not be reached or went away before a COMMIT was sent. Nothing
  of the transaction stayed; run it again on a fresh connection after a backoff.
- `AMBIGUOUS`: the connection broke while a COMMIT was in flight. The transaction may or may not have
  landed: find out (a change id, an idempotency key) instead of running it again blindly.
- `PERMANENT`: anything else (a constraint, a bad statement, a full disk). Raised to the caller.
"""

from __future__ import annotations

import sqlite3
from enum import Enum
from typing import Any

from chainwarden.errors import ChainwardenError

# Admin shutdown, crash shutdown, cannot connect now: a server restarting.
_RESTART_SQLSTATES = frozenset({"57P01", "57P02", "57P03"})
# Serialization failure, deadlock detected, lock not available (lock_timeout / NOWAIT).
_LOCK_SQLSTATES = frozenset({"40001", "40P01", "55P03"})
# SQLITE_BUSY and SQLITE_LOCKED (primary result codes).
_SQLITE_BUSY = (5, 6)


class Unreachable(ChainwardenError):
    """No connection could be made; the message names the server (password masked) and the driver's
    reason. Nothing was sent."""


class Fault(Enum):
    LOCK = "lock"
    CONNECTION = "connection"
    AMBIGUOUS = "ambiguous"
    PERMANENT = "permanent"

    @property
    def transient(self) -> bool:
        """Whether running the same transaction again is safe and may succeed."""
        return self in (Fault.LOCK, Fault.CONNECTION)


def classify(error: BaseException, *, committing: bool = False) -> Fault:
    """How `error` (from psycopg, psycopg_pool or sqlite3) affects the transaction it broke; `committing`:
    whether a COMMIT had been sent on that connection when it broke."""
    if isinstance(error, sqlite3.Error):
        return _sqlite(error)
    if isinstance(error, Unreachable):
        return Fault.CONNECTION
    module = type(error).__module__
    if module.startswith("psycopg_pool"):
        # PoolTimeout / TooManyRequests: no connection was ever handed out, nothing was sent.
        return Fault.CONNECTION
    if module.startswith("psycopg"):
        return _postgres(error, committing)
    return Fault.PERMANENT


def _sqlite(error: sqlite3.Error) -> Fault:
    if isinstance(error, sqlite3.OperationalError):
        code = getattr(error, "sqlite_errorcode", None)
        if (code is not None and code & 0xFF in _SQLITE_BUSY) or "locked" in str(error):
            return Fault.LOCK
    # A local file: an error during COMMIT is reported by SQLite itself, never lost on a wire.
    return Fault.PERMANENT


def _postgres(error: BaseException, committing: bool) -> Fault:
    sqlstate: Any = getattr(error, "sqlstate", None)
    if sqlstate in _LOCK_SQLSTATES:
        return Fault.LOCK
    lost = sqlstate is None or sqlstate.startswith("08") or sqlstate in _RESTART_SQLSTATES
    names = {cls.__name__ for cls in type(error).__mro__}
    if lost and names & {"OperationalError", "InterfaceError"}:
        # No SQLSTATE: the client lost the connection (closed, reset, server gone); class 08 is a connection
        # exception; 57P0x a server shutting down or starting up.
        return Fault.AMBIGUOUS if committing else Fault.CONNECTION
    return Fault.PERMANENT

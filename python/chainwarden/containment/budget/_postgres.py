"""PostgresBudgetBackend: one chain budget shared through a PostgreSQL database.

Every operation is one transaction that locks the budget's row (``SELECT … FOR UPDATE``), so reserve and
settle are atomic across processes and hosts (docs/design.md §20). Expiry uses the server's clock."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from typing import Any, Final, TypeVar

from chainwarden._secrets import mask_secrets
from chainwarden.containment.budget._protocol import (
    DEFAULT_RESERVATION_TTL_S,
    EPSILON,
    BudgetBackendUnavailable,
    check_amount,
    check_name,
    check_reservation_id,
    check_ttl,
)

__all__ = ["PostgresBudgetBackend"]

T = TypeVar("T")

_SCHEMA: Final = (
    "SELECT pg_advisory_xact_lock(7243105821)",  # concurrent first connections must not race on CREATE
    """CREATE TABLE IF NOT EXISTS chainwarden_budget (
        key text PRIMARY KEY,
        spent double precision NOT NULL DEFAULT 0
    )""",
    """CREATE TABLE IF NOT EXISTS chainwarden_budget_hold (
        id text PRIMARY KEY,
        key text NOT NULL REFERENCES chainwarden_budget (key) ON DELETE CASCADE,
        amount double precision NOT NULL,
        expires_at timestamptz NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS chainwarden_budget_hold_key ON chainwarden_budget_hold (key, expires_at)",
)


class PostgresBudgetBackend:
    """A chain budget shared through PostgreSQL: ``PostgresBudgetBackend(dsn, key=...)``.

    ``dsn`` is a libpq connection string or URL; ``key`` names the budget. Creates its two tables
    (``chainwarden_budget``, ``chainwarden_budget_hold``) when missing. A reservation not settled within
    ``reservation_ttl_s`` seconds is released. ``timeout_s`` bounds connecting; an unreachable server
    raises ``BudgetBackendUnavailable``. Thread-safe (one connection, one operation at a time).
    Needs the ``postgres`` extra."""

    def __init__(
        self,
        dsn: str,
        *,
        key: str,
        reservation_ttl_s: float = DEFAULT_RESERVATION_TTL_S,
        timeout_s: float = 2.0,
    ) -> None:
        check_name(dsn, "dsn")
        check_name(key, "key")
        self._ttl = check_ttl(reservation_ttl_s)
        timeout = check_amount(timeout_s, "timeout_s")
        if timeout <= 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s!r}")
        try:
            import psycopg  # noqa: PLC0415  (the optional `postgres` extra)
            from psycopg.conninfo import conninfo_to_dict  # noqa: PLC0415
        except ImportError as err:  # pragma: no cover - the dev environment has it
            raise ImportError(
                "PostgresBudgetBackend needs psycopg: pip install 'chainwarden[postgres]'"
            ) from err
        try:
            conninfo_to_dict(dsn)
        except psycopg.ProgrammingError as err:
            raise ValueError(f"dsn is not a PostgreSQL connection string: {mask_secrets(str(err))}") from None
        self._psycopg: Any = psycopg
        self._dsn = dsn
        self._where = mask_secrets(dsn)  # docs/design.md §31: the only form of the DSN ever shown
        self._key = key
        self._timeout = max(1, round(timeout))  # libpq's connect_timeout is whole seconds
        self._conn: Any = None
        self._lock = threading.Lock()

    @property
    def key(self) -> str:
        return self._key

    @property
    def reservation_ttl_s(self) -> float:
        return self._ttl

    def __repr__(self) -> str:
        return f"PostgresBudgetBackend({self._where!r}, key={self._key!r})"

    def _connection(self) -> Any:
        if self._conn is None or self._conn.closed:
            conn = self._psycopg.connect(self._dsn, connect_timeout=self._timeout, autocommit=False)
            try:
                with conn.transaction():
                    for statement in _SCHEMA:
                        conn.execute(statement)
            except BaseException:
                conn.close()
                raise
            self._conn = conn
        return self._conn

    def _run(self, what: str, op: Callable[[Any], T]) -> T:
        """Runs ``op(cursor)`` in one transaction holding this budget's row lock."""
        with self._lock:
            try:
                conn = self._connection()
                with conn.transaction(), conn.cursor() as cur:
                    cur.execute(
                        "INSERT INTO chainwarden_budget (key) VALUES (%s) ON CONFLICT (key) DO NOTHING",
                        (self._key,),
                    )
                    cur.execute(
                        "SELECT spent FROM chainwarden_budget WHERE key = %s FOR UPDATE", (self._key,)
                    )
                    cur.execute(
                        "DELETE FROM chainwarden_budget_hold WHERE key = %s AND expires_at <= now()",
                        (self._key,),
                    )
                    return op(cur)
            except self._psycopg.Error as err:
                # A broken connection is replaced on the next call (the server may come back).
                if self._conn is not None and self._conn.broken:
                    self._conn.close()
                    self._conn = None
                raise BudgetBackendUnavailable(
                    f"PostgreSQL budget backend {self._where!r} {what} failed: {mask_secrets(str(err))}"
                ) from err

    def _spent(self, cur: Any) -> float:
        cur.execute("SELECT spent FROM chainwarden_budget WHERE key = %s", (self._key,))
        return float(cur.fetchone()[0])

    def _held(self, cur: Any) -> float:
        cur.execute(
            "SELECT coalesce(sum(amount), 0) FROM chainwarden_budget_hold WHERE key = %s", (self._key,)
        )
        return max(0.0, float(cur.fetchone()[0]))

    def _charge(self, cur: Any, amount: float) -> float:
        cur.execute(
            "UPDATE chainwarden_budget SET spent = spent + %s WHERE key = %s RETURNING spent",
            (amount, self._key),
        )
        return float(cur.fetchone()[0])

    def _release(self, cur: Any, rid: str) -> float | None:
        cur.execute(
            "DELETE FROM chainwarden_budget_hold WHERE key = %s AND id = %s RETURNING amount",
            (self._key, rid),
        )
        row = cur.fetchone()
        return None if row is None else float(row[0])

    # -- veronica-core's protocol ----------------------------------------------------------

    def add(self, amount: float) -> float:
        value = check_amount(amount, "amount")
        return self._run("add", lambda cur: self._charge(cur, value))

    def get(self) -> float:
        return self._run("get", self._spent)

    def get_reserved(self) -> float:
        return self._run("get_reserved", self._held)

    def reset(self) -> None:
        def op(cur: Any) -> None:
            cur.execute("DELETE FROM chainwarden_budget_hold WHERE key = %s", (self._key,))
            cur.execute("UPDATE chainwarden_budget SET spent = 0 WHERE key = %s", (self._key,))

        self._run("reset", op)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def reserve(self, amount: float, ceiling: float) -> str:
        """Holds ``amount`` if spent + held + amount <= ceiling; else raises ``OverflowError``."""
        value = check_amount(amount, "amount")
        limit = check_amount(ceiling, "ceiling")
        rid = uuid.uuid4().hex

        def op(cur: Any) -> tuple[float, float] | None:
            spent, held = self._spent(cur), self._held(cur)
            if spent + held + value > limit + EPSILON:
                return spent, held
            cur.execute(
                "INSERT INTO chainwarden_budget_hold (id, key, amount, expires_at) "
                "VALUES (%s, %s, %s, now() + make_interval(secs => %s))",
                (rid, self._key, value, self._ttl),
            )
            return None

        refused = self._run("reserve", op)
        if refused is not None:
            spent, held = refused
            raise OverflowError(
                f"shared budget {self._key!r}: ${value:.6f} with ${spent:.6f} spent and ${held:.6f} "
                f"held would exceed the ceiling ${limit:.6f}"
            )
        return rid

    def commit(self, reservation_id: str) -> float:
        """Charges the held amount; ``KeyError`` when the hold expired or was already released."""
        rid = check_reservation_id(reservation_id)

        def op(cur: Any) -> float | None:
            amount = self._release(cur, rid)
            return None if amount is None else self._charge(cur, amount)

        spent = self._run("commit", op)
        if spent is None:
            raise KeyError(f"reservation {rid!r} not found (expired, committed or rolled back)")
        return spent

    def rollback(self, reservation_id: str) -> None:
        rid = check_reservation_id(reservation_id)
        if self._run("rollback", lambda cur: self._release(cur, rid)) is None:
            raise KeyError(f"reservation {rid!r} not found (expired, committed or rolled back)")

    # -- ours --------------------------------------------------------------------------------

    def settle(self, reservation_id: str, actual_usd: float) -> float:
        """Releases the hold and charges ``actual_usd`` in one transaction; returns the new spent
        total. The cost is charged even when the hold already expired: the money was spent."""
        rid = check_reservation_id(reservation_id)
        actual = check_amount(actual_usd, "actual_usd")

        def op(cur: Any) -> float:
            self._release(cur, rid)
            return self._charge(cur, actual)

        return self._run("settle", op)

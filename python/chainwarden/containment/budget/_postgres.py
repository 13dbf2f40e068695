"""PostgresBudgetBackend: one chain budget shared through a PostgreSQL database.

Every operation is ONE statement (one round trip, its own transaction), atomic across processes and hosts
(docs/design.md §20): the budget's row carries what is spent and what is held (the sum and the number of the
open holds), and a statement that changes them updates that row, so concurrent callers queue on its lock and
each sees the others' holds (PostgreSQL re-reads a row it waited for). Expired holds are dropped by the
statement that reserves, and their amounts leave the row's total with them. Expiry uses the server's clock.
Connections come from the one SQL layer's pool (`chainwarden._sql`)."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Sequence
from typing import Any, Final

from chainwarden._secrets import mask_secrets
from chainwarden._sql import Schema, Unreachable, columns, ensure, table_exists
from chainwarden._sql.pg import Param, Pool, Statement, psycopg_modules, round_trip
from chainwarden.containment.budget._protocol import (
    DEFAULT_RESERVATION_TTL_S,
    EPSILON,
    BudgetBackendUnavailable,
    check_amount,
    check_name,
    check_reservation_id,
    check_ttl,
)
from chainwarden.errors import BudgetExceeded, InvalidArgument, NotFound

__all__ = ["PostgresBudgetBackend"]

_V1: Final = (
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
_V2: Final = (
    "ALTER TABLE chainwarden_budget ADD COLUMN held double precision NOT NULL DEFAULT 0",
    "ALTER TABLE chainwarden_budget ADD COLUMN holds integer NOT NULL DEFAULT 0",
    # Whether the row's last reserve was admitted: what that statement returns (see _RESERVE).
    "ALTER TABLE chainwarden_budget ADD COLUMN admitted boolean NOT NULL DEFAULT false",
    "UPDATE chainwarden_budget b SET held = h.amount, holds = h.n FROM (SELECT key, sum(amount) AS amount, "
    "count(*) AS n FROM chainwarden_budget_hold GROUP BY key) h WHERE h.key = b.key",
)


def _legacy(cur: Any) -> int:
    if not table_exists(cur, "chainwarden_budget"):
        return 0
    return 2 if "held" in columns(cur, "chainwarden_budget") else 1


_SCHEMA: Final = Schema("budget", (_V1, _V2), legacy=_legacy)

# The row's held total after dropping `g` (holds that left): exactly 0 once no hold is open, so the float
# total never drifts over a long run.
_LEFT: Final = "CASE WHEN b.holds - g.n = 0 THEN 0 ELSE b.held - g.amount END"
_FITS: Final = f"b.spent + ({_LEFT}) + %(a)s::float8 <= %(c)s::float8 + {EPSILON!r}"
_RESERVE: Final = Statement.of(
    "budget_reserve",
    "WITH expired AS (DELETE FROM chainwarden_budget_hold WHERE key = %(k)s AND expires_at <= now() "
    "RETURNING amount), g AS (SELECT coalesce(sum(amount), 0) AS amount, count(*)::int AS n FROM expired), "
    "u AS (UPDATE chainwarden_budget b SET "
    f"held = ({_LEFT}) + CASE WHEN {_FITS} THEN %(a)s::float8 ELSE 0 END, "
    f"holds = b.holds - g.n + CASE WHEN {_FITS} THEN 1 ELSE 0 END, admitted = {_FITS} "
    "FROM g WHERE b.key = %(k)s RETURNING b.spent, b.held, b.admitted), "
    "h AS (INSERT INTO chainwarden_budget_hold (id, key, amount, expires_at) "
    "SELECT %(id)s, %(k)s, %(a)s::float8, now() + make_interval(secs => %(ttl)s::float8) "
    "FROM u WHERE u.admitted) "
    "SELECT spent, held, admitted FROM u",
)


_SETTLE: Final = Statement.of(
    "budget_settle",
    "WITH gone AS (DELETE FROM chainwarden_budget_hold WHERE key = %(k)s AND id = %(id)s RETURNING amount), "
    "g AS (SELECT coalesce(sum(amount), 0) AS amount, count(*)::int AS n FROM gone) "
    f"UPDATE chainwarden_budget b SET spent = b.spent + %(a)s::float8, held = {_LEFT}, holds = b.holds - g.n "
    "FROM g WHERE b.key = %(k)s RETURNING b.spent, g.n",
)
_COMMIT: Final = Statement.of(
    "budget_commit",
    "WITH gone AS (DELETE FROM chainwarden_budget_hold WHERE key = %(k)s AND id = %(id)s RETURNING amount), "
    "g AS (SELECT coalesce(sum(amount), 0) AS amount, count(*)::int AS n FROM gone) "
    f"UPDATE chainwarden_budget b SET spent = b.spent + g.amount, held = {_LEFT}, holds = b.holds - g.n "
    "FROM g WHERE b.key = %(k)s RETURNING b.spent, g.n",
)
_ROLLBACK: Final = Statement.of(
    "budget_rollback",
    "WITH gone AS (DELETE FROM chainwarden_budget_hold WHERE key = %(k)s AND id = %(id)s RETURNING amount), "
    "g AS (SELECT coalesce(sum(amount), 0) AS amount, count(*)::int AS n FROM gone) "
    f"UPDATE chainwarden_budget b SET held = {_LEFT}, holds = b.holds - g.n "
    "FROM g WHERE b.key = %(k)s RETURNING b.spent, g.n",
)
_ADD: Final = Statement.of(
    "budget_add",
    "UPDATE chainwarden_budget SET spent = spent + %(a)s::float8 WHERE key = %(k)s RETURNING spent",
)
_GET: Final = Statement.of("budget_get", "SELECT spent FROM chainwarden_budget WHERE key = %(k)s")
_HELD: Final = Statement.of(
    "budget_held",
    "SELECT coalesce(sum(amount), 0) FROM chainwarden_budget_hold WHERE key = %(k)s AND expires_at > now()",
)
_RESET: Final = Statement.of(
    "budget_reset",
    "WITH d AS (DELETE FROM chainwarden_budget_hold WHERE key = %(k)s) "
    "UPDATE chainwarden_budget SET spent = 0, held = 0, holds = 0 WHERE key = %(k)s",
)
_CREATE: Final = Statement.of(
    "budget_create", "INSERT INTO chainwarden_budget (key) VALUES (%(k)s) ON CONFLICT (key) DO NOTHING"
)


class PostgresBudgetBackend:
    """A chain budget shared through PostgreSQL: ``PostgresBudgetBackend(dsn, key=...)``.

    ``dsn`` is a libpq connection string or URL; ``key`` names the budget. Creates its two tables
    (``chainwarden_budget``, ``chainwarden_budget_hold``) when missing. A reservation not settled within
    ``reservation_ttl_s`` seconds is released. ``timeout_s`` bounds connecting and waiting for a connection;
    an unreachable server raises ``BudgetBackendUnavailable`` (nothing is retried: an operation whose
    connection broke may have landed, and a charge must never be applied twice). Thread-safe (a pool of up to
    ``pool_size`` connections). Needs the ``postgres`` extra."""

    def __init__(
        self,
        dsn: str,
        *,
        key: str,
        reservation_ttl_s: float = DEFAULT_RESERVATION_TTL_S,
        timeout_s: float = 2.0,
        pool_size: int = 4,
    ) -> None:
        check_name(dsn, "dsn")
        check_name(key, "key")
        self._ttl = check_ttl(reservation_ttl_s)
        timeout = check_amount(timeout_s, "timeout_s")
        if timeout <= 0:
            raise InvalidArgument(f"timeout_s must be > 0, got {timeout_s!r}", argument="timeout_s")
        if isinstance(pool_size, bool) or not isinstance(pool_size, int) or not 1 <= pool_size <= 1000:
            raise InvalidArgument(
                f"pool_size must be an int between 1 and 1000, got {pool_size!r}", argument="pool_size"
            )
        psycopg, _ = psycopg_modules("PostgresBudgetBackend")
        from psycopg.conninfo import conninfo_to_dict  # noqa: PLC0415  (the optional `postgres` extra)

        try:
            conninfo_to_dict(dsn)
        except psycopg.ProgrammingError as err:
            raise InvalidArgument(
                f"dsn is not a PostgreSQL connection string: {mask_secrets(str(err))}", argument="dsn"
            ) from None
        self._psycopg: Any = psycopg
        self._dsn = dsn
        self._where = mask_secrets(dsn)  # docs/design.md §31: the only form of the DSN ever shown
        self._key = key
        self._args: dict[str, Param] = {"k": key.encode()}
        self._timeout = timeout
        self._pool_size = pool_size
        self._pool: Pool | None = None
        self._lock = threading.Lock()  # opening the pool (connections are the pool's business)

    @property
    def key(self) -> str:
        return self._key

    @property
    def reservation_ttl_s(self) -> float:
        return self._ttl

    def __repr__(self) -> str:
        return f"PostgresBudgetBackend({self._where!r}, key={self._key!r})"

    def _connected(self) -> Pool:
        """The pool, opened (and the schema and the budget's row made) on first use."""
        pool = self._pool
        if pool is not None:
            return pool
        with self._lock:
            if self._pool is None:
                pool = Pool(
                    self._dsn,
                    name="chainwarden-budget",
                    max_size=self._pool_size,
                    connect_timeout_s=self._timeout,
                    what="PostgresBudgetBackend",
                )
                try:
                    with pool.connection(self._timeout) as conn:
                        ensure(conn, _SCHEMA, too_new=self._too_new)
                        round_trip(conn, [_CREATE.bind(self._args)])
                except BaseException:
                    pool.close()
                    raise
                self._pool = pool
            return self._pool

    def _too_new(self, found: int) -> Exception:
        return BudgetBackendUnavailable(
            f"PostgreSQL budget backend {self._where!r}: its tables are at version {found}, newer than this "
            f"chainwarden reads ({_SCHEMA.version})"
        )

    def _run(self, what: str, step: tuple[Statement, Sequence[Param]]) -> Any:
        """One statement, one round trip; its result rows."""
        try:
            pool = self._connected()
            with pool.connection(self._timeout) as conn:
                (result,) = round_trip(conn, [step])
        except (Unreachable, self._psycopg.Error) as err:
            raise BudgetBackendUnavailable(
                f"PostgreSQL budget backend {self._where!r} {what} failed: {mask_secrets(str(err).strip())}"
            ) from err
        if result.ntuples == 0 and step[0] is not _GET and step[0] is not _HELD and step[0] is not _RESET:
            # The budget's row went away (dropped by hand): make it again and run the statement once more.
            with self._connected().connection(self._timeout) as conn:
                round_trip(conn, [_CREATE.bind(self._args)])
                (result,) = round_trip(conn, [step])
        return result

    def _bind(self, statement: Statement, **more: Param) -> tuple[Statement, list[Param]]:
        return statement.bind(self._args | more)

    # -- veronica-core's protocol ----------------------------------------------------------

    def add(self, amount: float) -> float:
        value = check_amount(amount, "amount")
        return _float(self._run("add", self._bind(_ADD, a=_f(value))))

    def get(self) -> float:
        result = self._run("get", self._bind(_GET))
        return 0.0 if result.ntuples == 0 else _float(result)

    def get_reserved(self) -> float:
        return max(0.0, _float(self._run("get_reserved", self._bind(_HELD))))

    def reset(self) -> None:
        self._run("reset", self._bind(_RESET))

    def close(self) -> None:
        with self._lock:
            if self._pool is not None:
                self._pool.close()
                self._pool = None

    def reserve(self, amount: float, ceiling: float) -> str:
        """Holds ``amount`` if spent + held + amount <= ceiling; else raises ``OverflowError``."""
        value = check_amount(amount, "amount")
        limit = check_amount(ceiling, "ceiling")
        rid = uuid.uuid4().hex
        row = self._run(
            "reserve",
            self._bind(_RESERVE, a=_f(value), c=_f(limit), id=rid.encode(), ttl=_f(self._ttl)),
        )
        spent, held, admitted = float(row.get_value(0, 0)), float(row.get_value(0, 1)), row.get_value(0, 2)
        if admitted != b"t":
            raise BudgetExceeded(
                f"shared budget {self._key!r}: ${value:.6f} with ${spent:.6f} spent and "
                f"${max(held, 0.0):.6f} held would exceed the ceiling ${limit:.6f}"
            )
        return rid

    def commit(self, reservation_id: str) -> float:
        """Charges the held amount; ``KeyError`` when the hold expired or was already released."""
        rid = check_reservation_id(reservation_id)
        return self._released("commit", _COMMIT, rid)

    def rollback(self, reservation_id: str) -> None:
        rid = check_reservation_id(reservation_id)
        self._released("rollback", _ROLLBACK, rid)

    def _released(self, what: str, statement: Statement, rid: str) -> float:
        row = self._run(what, self._bind(statement, id=rid.encode()))
        if row.get_value(0, 1) == b"0":
            raise NotFound(f"reservation {rid!r} not found (expired, committed or rolled back)")
        return _float(row)

    # -- ours --------------------------------------------------------------------------------

    def settle(self, reservation_id: str, actual_usd: float) -> float:
        """Releases the hold and charges ``actual_usd`` in one statement; returns the new spent total. The
        cost is charged even when the hold already expired: the money was spent."""
        rid = check_reservation_id(reservation_id)
        actual = check_amount(actual_usd, "actual_usd")
        return _float(self._run("settle", self._bind(_SETTLE, id=rid.encode(), a=_f(actual))))


def _f(value: float) -> bytes:
    return repr(float(value)).encode()


def _float(result: Any) -> float:
    return float(result.get_value(0, 0))

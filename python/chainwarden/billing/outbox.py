"""The durable outbox: every usage fact is written here before its commit (write-ahead), and a fact whose
commit failed waits here until the ledger takes them (docs/billing.md, "The outbox").

One SQLite file in WAL mode, keyed like the ledger by `(source_system, source_reference)` — the idempotency
key — so a fact is kept at most once and committing it later can never bill twice. Entries remember the
ledger they belong to, the pricing and the call index they were first tried with, so the drainer commits
exactly what the runtime would have.

Durability: the write-ahead runs with `synchronous=NORMAL`: once its COMMIT returns, the rows are in the WAL
file (in the operating system's page cache), which survives the death of the process — the fault model of the
write-ahead — without an fsync per fact. Parking a fact whose commit failed (it may wait there for hours) runs
with `synchronous=FULL`, whose fsync of the WAL also makes every earlier row survive a power cut.

A written-ahead row carries its writer (`owner`, "<pid>:<token>") while that writer commits it, so drainers
leave it alone; a drainer takes it when the writer's process is gone (a SIGKILL) or after `CLAIM_S`. Taking
a row that is being committed elsewhere is only wasted work: the idempotency key makes a second commit a
no-op.

The file must be on a local disk: SQLite's locking is not reliable on network file systems.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from chainwarden._sql import Schema, columns, ensure, table_exists
from chainwarden._sql.sqlite import Connection, connect
from chainwarden.billing.facts import Billable, UsageFact
from chainwarden.billing.pricing import Pricing
from chainwarden.errors import ClosedError, InvalidArgumentType

_V1 = (
    """CREATE TABLE IF NOT EXISTS usage_outbox (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        ledger TEXT NOT NULL,
        source_system TEXT NOT NULL,
        source_reference TEXT NOT NULL,
        run_id TEXT NOT NULL,
        fact TEXT NOT NULL,
        call_index INTEGER NOT NULL,
        ingress_request_id TEXT,
        markup TEXT NOT NULL,
        parked_at REAL NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        next_attempt_at REAL NOT NULL DEFAULT 0,
        last_error TEXT,
        UNIQUE (ledger, source_system, source_reference)
    )""",
    "CREATE INDEX IF NOT EXISTS usage_outbox_run ON usage_outbox (run_id)",
)
# The write-ahead's claim (`owner`), added after the first release.
_V2 = ("ALTER TABLE usage_outbox ADD COLUMN owner TEXT",)


def _legacy(cursor: Any) -> int:
    """An outbox file made before `chainwarden_schema`: 1 without `owner`, 2 with it, 0 without the table."""
    if not table_exists(cursor, "usage_outbox"):
        return 0
    return 2 if "owner" in columns(cursor, "usage_outbox") else 1


_SCHEMA = Schema("outbox", (_V1, _V2), legacy=_legacy)
# How long a live writer's claim on its written-ahead rows holds against other drainers. Past it another
# drainer may commit them too, which is safe (idempotency key) and only costs a duplicate attempt.
CLAIM_S = 120.0
_IN_CHUNK = 500  # SQLite's bound on host parameters is far above this
# A fact's fields as the outbox stores them: every field it is made from, read off the class (a field the
# fact gains is carried without a change here); the cost and the raw usage are stored exactly (`encode_fact`).
_FACT_FIELDS = tuple(
    f.name for f in dataclasses.fields(UsageFact) if f.init and f.name not in ("cost_usd", "usage_raw")
)
_MAX_ERROR_CHARS = 1_000


def default_state_dir() -> Path:
    """`$CHAINWARDEN_STATE_DIR`, else `$XDG_STATE_HOME/chainwarden`, else `~/.local/state/chainwarden`."""
    explicit = os.environ.get("CHAINWARDEN_STATE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_STATE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".local" / "state"
    return base / "chainwarden"


def default_outbox_path(ledger_identity: str, ledger_path: str | None) -> str:
    """Next to a SQLite ledger file (`<ledger>.outbox.sqlite3`); ":memory:" for an in-memory ledger
    (nothing of it outlives the process anyway); otherwise one file per ledger in the state directory."""
    if ledger_path == ":memory:":
        return ":memory:"
    if ledger_path is not None:
        return f"{ledger_path}.outbox.sqlite3"
    digest = hashlib.sha256(ledger_identity.encode("utf-8")).hexdigest()[:16]
    return str(default_state_dir() / f"billing-outbox-{digest}.sqlite3")


def encode_fact(fact: UsageFact) -> str:
    record: dict[str, Any] = {name: getattr(fact, name) for name in _FACT_FIELDS}
    cost = fact.cost_decimal
    # The exact decimal text: the drainer prices exactly what the runtime would have.
    record["cost_usd"] = None if cost is None else str(cost)
    record["usage_raw"] = fact.usage_raw_json
    return json.dumps(record, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def decode_fact(text: str) -> UsageFact:
    record = json.loads(text)
    cost = record.pop("cost_usd")
    raw = record.pop("usage_raw")
    return UsageFact(
        **record,
        cost_usd=None if cost is None else Decimal(cost),
        usage_raw=None if raw is None else json.loads(raw),
    )


# One token per process (renewed in a forked child): two outboxes of one process on one file share it, and
# an earlier process that had our pid (containers reuse pids) is told apart by its token.
_PROCESS_TOKEN = [uuid.uuid4().hex[:16]]


def _renew_process_token() -> None:
    _PROCESS_TOKEN[0] = uuid.uuid4().hex[:16]


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_renew_process_token)


def process_owner() -> str:
    """This process's mark on the rows it wrote ahead and is committing: "<pid>:<token>"."""
    return f"{os.getpid()}:{_PROCESS_TOKEN[0]}"


def _owner_alive(owner: str, mine: str) -> bool:
    """Whether the process that wrote a row ("<pid>:<token>") may still be committing it."""
    if owner == mine:
        return True
    pid_text, _, _ = owner.partition(":")
    try:
        pid = int(pid_text)
    except ValueError:
        return False
    if pid <= 0 or pid == os.getpid():
        # Our own pid with another token: an earlier process that had the same pid (containers reuse them).
        return False
    if os.name != "posix":
        return True  # no cheap liveness check: the claim expires after CLAIM_S
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's live process
    except OSError:
        return True
    try:
        # A killed process nobody has reaped yet still answers signal 0: a zombie is dead for us.
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            return stat.read().rpartition(")")[2].split()[0] != "Z"
    except (OSError, IndexError):
        return True


@dataclass(frozen=True)
class OutboxEntry:
    """One parked fact, resolved as it was written (its key read back, never computed again), and how to
    commit it."""

    seq: int
    billable: Billable
    ingress_request_id: str | None
    pricing: Pricing
    attempts: int
    last_error: str | None

    @property
    def key(self) -> str:
        return self.billable.key


class Outbox:
    """A durable, keyed queue of unsettled usage facts in one SQLite file (or ":memory:").

    Thread-safe; several processes may share the file (each entry is committed idempotently).
    """

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout_s: float = 30.0) -> None:
        if not isinstance(path, str | os.PathLike):
            raise InvalidArgumentType(
                f"outbox path must be a str or PathLike, got {type(path).__name__}", argument="outbox"
            )
        self.path = os.fspath(path)
        self._lock = threading.Lock()
        self._conn: Connection | None = None
        self._busy_timeout_s = busy_timeout_s
        self._closed = False

    @property
    def owner(self) -> str:
        """This process's mark on the rows it wrote ahead and is committing."""
        return process_owner()

    def exists(self) -> bool:
        """Whether there can be entries without creating the file (cheap check at start-up)."""
        return self._conn is not None or (self.path != ":memory:" and os.path.exists(self.path))

    def _connection(self) -> Connection:
        # Opened on first use, so a runtime that never parks a fact never creates the file.
        if self._closed:
            raise ClosedError(f"outbox {self.path} is closed")
        if self._conn is None:
            if self.path != ":memory:":
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            # Process death keeps what NORMAL committed; parking raises it to FULL (module docstring).
            conn = connect(self.path, timeout_s=self._busy_timeout_s, synchronous="NORMAL")
            try:
                ensure(conn, _SCHEMA, too_new=self._too_new)
            except BaseException:
                conn.close()
                raise
            self._conn = conn
        return self._conn

    def _too_new(self, found: int) -> Exception:
        return ValueError(
            f"outbox {self.path} has schema version {found}; this chainwarden reads {_SCHEMA.version}"
        )

    def put(
        self,
        ledger: str,
        billable: Billable,
        *,
        pricing: Pricing,
        ingress_request_id: str | None,
        error: str,
    ) -> bool:
        """Parks a fact; False when its key is parked already (kept as it was)."""
        fact = billable.fact
        row = (
            ledger,
            fact.source,
            billable.key,
            fact.run_id,
            encode_fact(fact),
            billable.call_index,
            ingress_request_id,
            str(pricing.exact_markup),
            time.time(),
            error[:_MAX_ERROR_CHARS],
        )
        with self._lock, self._fully_synced() as conn:
            cursor = conn.execute(
                "INSERT INTO usage_outbox (ledger, source_system, source_reference, run_id, fact, "
                "call_index, ingress_request_id, markup, parked_at, last_error) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
                "ON CONFLICT (ledger, source_system, source_reference) DO NOTHING",
                row,
            )
            return cursor.rowcount == 1

    @contextmanager
    def _fully_synced(self) -> Iterator[Connection]:
        """Statements run here are fsynced (with every earlier row of the WAL): they survive a power cut."""
        conn = self._connection()
        conn.execute("PRAGMA synchronous=FULL")
        try:
            yield conn
        finally:
            conn.execute("PRAGMA synchronous=NORMAL")

    def write_ahead(
        self,
        ledger: str,
        billables: Sequence[Billable],
        *,
        pricing: Pricing,
        ingress_request_id: str | None,
    ) -> list[int]:
        """Writes facts in one transaction, claimed by this process; returns each one's row. A key already
        kept (a replay, or parked earlier) keeps its row, which this process now claims: it is about to
        commit that key."""
        now = time.time()
        owner = self.owner
        markup = str(pricing.exact_markup)
        with self._lock:
            conn = self._connection()
            conn.execute("BEGIN IMMEDIATE")
            try:
                seqs = [
                    conn.execute(
                        "INSERT INTO usage_outbox (ledger, source_system, source_reference, run_id, fact, "
                        "call_index, ingress_request_id, markup, parked_at, owner) "
                        "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
                        "ON CONFLICT (ledger, source_system, source_reference) DO UPDATE "
                        "SET owner = excluded.owner, parked_at = excluded.parked_at RETURNING seq",
                        (
                            ledger,
                            b.fact.source,
                            b.key,
                            b.fact.run_id,
                            encode_fact(b.fact),
                            b.call_index,
                            ingress_request_id,
                            markup,
                            now,
                            owner,
                        ),
                    ).fetchone()[0]
                    for b in billables
                ]
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        return seqs

    def settle(self, seqs: Sequence[int]) -> None:
        """These rows' facts are committed (or were duplicates of committed ones): they leave the outbox."""
        unique = sorted(set(seqs))
        with self._lock:
            conn = self._connection()
            for start in range(0, len(unique), _IN_CHUNK):
                chunk = unique[start : start + _IN_CHUNK]
                marks = ",".join(["%s"] * len(chunk))
                conn.execute(f"DELETE FROM usage_outbox WHERE seq IN ({marks})", chunk)

    def park(self, seqs: Sequence[int], error: str) -> None:
        """Written-ahead rows whose commit failed: released to the drainers, durably (FULL)."""
        unique = sorted(set(seqs))
        with self._lock, self._fully_synced() as conn:
            for start in range(0, len(unique), _IN_CHUNK):
                chunk = unique[start : start + _IN_CHUNK]
                marks = ",".join(["%s"] * len(chunk))
                conn.execute(
                    # Like `put`: the runtime's own failed commit is not one of the drainer's attempts.
                    "UPDATE usage_outbox SET owner = NULL, last_error = %s, next_attempt_at = 0 "
                    f"WHERE seq IN ({marks})",
                    (error[:_MAX_ERROR_CHARS], *chunk),
                )

    def _available(self, conn: Connection, ledger: str, when: float) -> tuple[str, list[Any]]:
        """SQL condition (and parameters) for rows a drainer may take: parked ones, and written-ahead ones
        whose writer is gone or whose claim has expired."""
        owners = [
            r[0]
            for r in conn.execute(
                "SELECT DISTINCT owner FROM usage_outbox WHERE ledger = %s AND owner IS NOT NULL", (ledger,)
            )
        ]
        mine = self.owner
        dead = [o for o in owners if not _owner_alive(o, mine)][:_IN_CHUNK]
        condition = "(owner IS NULL OR parked_at <= %s"
        params: list[Any] = [when - CLAIM_S]
        if dead:
            condition += f" OR owner IN ({','.join(['%s'] * len(dead))})"
            params += dead
        return condition + ")", params

    def due(self, ledger: str, *, limit: int = 100, now: float | None = None) -> list[OutboxEntry]:
        """Entries of this ledger a drainer may commit now, oldest first (see `_available`)."""
        when = time.time() if now is None else now
        with self._lock:
            conn = self._connection()
            condition, params = self._available(conn, ledger, when)
            rows = conn.execute(
                "SELECT seq, fact, call_index, ingress_request_id, markup, attempts, last_error, "
                "source_reference "
                f"FROM usage_outbox WHERE ledger = %s AND next_attempt_at <= %s AND {condition} "
                "ORDER BY seq LIMIT %s",
                (ledger, when, *params, limit),
            ).fetchall()
        return [
            OutboxEntry(
                seq=r[0],
                billable=Billable(decode_fact(r[1]), r[2], r[7]),
                ingress_request_id=r[3],
                pricing=Pricing(markup=Decimal(r[4])),
                attempts=r[5],
                last_error=r[6],
            )
            for r in rows
        ]

    def remove(self, seq: int) -> None:
        """The entry is committed (or was a duplicate of a committed one): it leaves the outbox."""
        with self._lock:
            self._connection().execute("DELETE FROM usage_outbox WHERE seq = %s", (seq,))

    def record_failure(self, seq: int, error: str, *, retry_in_s: float) -> None:
        with self._lock, self._fully_synced() as conn:
            conn.execute(
                "UPDATE usage_outbox SET owner = NULL, attempts = attempts + 1, last_error = %s, "
                "next_attempt_at = %s WHERE seq = %s",
                (error[:_MAX_ERROR_CHARS], time.time() + retry_in_s, seq),
            )

    def has_work(self, ledger: str) -> bool:
        """Whether a drainer has something to do for this ledger, now or after a failure's pause (rows
        another live process is committing do not count)."""
        if not self.exists():
            return False
        with self._lock:
            conn = self._connection()
            condition, params = self._available(conn, ledger, time.time())
            row = conn.execute(
                f"SELECT 1 FROM usage_outbox WHERE ledger = %s AND {condition} LIMIT 1", (ledger, *params)
            ).fetchone()
        return row is not None

    def pending(self, ledger: str, *, run_id: str | None = None) -> list[str]:
        """Idempotency keys still parked for this ledger (optionally one run's), oldest first."""
        if not self.exists():
            return []
        query = "SELECT source_reference FROM usage_outbox WHERE ledger = %s"
        params: tuple[Any, ...] = (ledger,)
        if run_id is not None:
            query += " AND run_id = %s"
            params += (run_id,)
        with self._lock:
            rows = self._connection().execute(query + " ORDER BY seq", params).fetchall()
        return [r[0] for r in rows]

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self._conn is not None:
                self._conn.close()
                self._conn = None

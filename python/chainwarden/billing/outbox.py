"""The durable outbox: usage facts whose commit failed wait here until the ledger takes them.

One SQLite file (WAL, synchronous=FULL: an entry survives a process kill and a power cut), keyed like the
ledger by `(source_system, source_reference)` — the idempotency key — so a fact is parked at most once and
committing it later can never bill twice. Entries remember the ledger they belong to, the pricing and the
call index they were first tried with, so the drainer commits exactly what the runtime would have.

The file must be on a local disk: SQLite's locking is not reliable on network file systems.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from chainwarden.billing.facts import UsageFact, compute_idempotency_key
from chainwarden.billing.pricing import Pricing

_SCHEMA = (
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
_FACT_FIELDS = (
    "run_id",
    "attempt",
    "source",
    "billing_account_id",
    "virtual_key_id",
    "usage_unit_id",
    "provider",
    "model",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
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


@dataclass(frozen=True)
class OutboxEntry:
    """One parked fact (its usage_unit_id already resolved) and how to commit it."""

    seq: int
    fact: UsageFact
    call_index: int
    ingress_request_id: str | None
    pricing: Pricing
    attempts: int
    last_error: str | None

    @property
    def key(self) -> str:
        return compute_idempotency_key(self.fact)


class Outbox:
    """A durable, keyed queue of unsettled usage facts in one SQLite file (or ":memory:").

    Thread-safe; several processes may share the file (each entry is committed idempotently).
    """

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout_s: float = 30.0) -> None:
        if not isinstance(path, str | os.PathLike):
            raise TypeError(f"outbox path must be a str or PathLike, got {type(path).__name__}")
        self.path = os.fspath(path)
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._busy_timeout_s = busy_timeout_s
        self._closed = False

    def exists(self) -> bool:
        """Whether there can be entries without creating the file (cheap check at start-up)."""
        return self._conn is not None or (self.path != ":memory:" and os.path.exists(self.path))

    def _connection(self) -> sqlite3.Connection:
        # Opened on first use, so a runtime that never parks a fact never creates the file.
        if self._closed:
            raise ValueError(f"outbox {self.path} is closed")
        if self._conn is None:
            if self.path != ":memory:":
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(
                self.path, timeout=self._busy_timeout_s, isolation_level=None, check_same_thread=False
            )
            try:
                if self.path != ":memory:":
                    conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=FULL")
                for statement in _SCHEMA:
                    conn.execute(statement)
            except BaseException:
                conn.close()
                raise
            self._conn = conn
        return self._conn

    def put(
        self,
        ledger: str,
        fact: UsageFact,
        *,
        call_index: int,
        pricing: Pricing,
        ingress_request_id: str | None,
        error: str,
    ) -> bool:
        """Parks a fact (usage_unit_id resolved); False when its key is parked already (kept as it was)."""
        key = compute_idempotency_key(fact)
        row = (
            ledger,
            fact.source,
            key,
            fact.run_id,
            encode_fact(fact),
            call_index,
            ingress_request_id,
            str(pricing.exact_markup),
            time.time(),
            error[:_MAX_ERROR_CHARS],
        )
        with self._lock:
            cursor = self._connection().execute(
                "INSERT INTO usage_outbox (ledger, source_system, source_reference, run_id, fact, "
                "call_index, ingress_request_id, markup, parked_at, last_error) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (ledger, source_system, source_reference) DO NOTHING",
                row,
            )
            return cursor.rowcount == 1

    def due(self, ledger: str, *, limit: int = 100, now: float | None = None) -> list[OutboxEntry]:
        """Entries of this ledger whose next attempt is due, oldest first."""
        when = time.time() if now is None else now
        with self._lock:
            rows = (
                self._connection()
                .execute(
                    "SELECT seq, fact, call_index, ingress_request_id, markup, attempts, last_error "
                    "FROM usage_outbox WHERE ledger = ? AND next_attempt_at <= ? ORDER BY seq LIMIT ?",
                    (ledger, when, limit),
                )
                .fetchall()
            )
        return [
            OutboxEntry(
                seq=r[0],
                fact=decode_fact(r[1]),
                call_index=r[2],
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
            self._connection().execute("DELETE FROM usage_outbox WHERE seq = ?", (seq,))

    def record_failure(self, seq: int, error: str, *, retry_in_s: float) -> None:
        with self._lock:
            self._connection().execute(
                "UPDATE usage_outbox SET attempts = attempts + 1, last_error = ?, next_attempt_at = ? "
                "WHERE seq = ?",
                (error[:_MAX_ERROR_CHARS], time.time() + retry_in_s, seq),
            )

    def pending(self, ledger: str, *, run_id: str | None = None) -> list[str]:
        """Idempotency keys still parked for this ledger (optionally one run's), oldest first."""
        if not self.exists():
            return []
        query = "SELECT source_reference FROM usage_outbox WHERE ledger = ?"
        params: tuple[Any, ...] = (ledger,)
        if run_id is not None:
            query += " AND run_id = ?"
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

"""Runs that outlive their process, in the ledger's database (docs/runtime.md "Reconnect, resume and retry").

Beside each run's record (`runs`, one row per `(run_id, attempt)`) the runtime keeps:

- its request (to `retry` it from any process) and its owner with a lease, timed by the database's clock
  (docs/design.md §33): the runtime renews the leases of its runs; a run whose lease ran out (its process
  died) is marked `abandoned` by the next runtime that looks, its log ended with `Error("internal")` + `Done`;
- `run_events`: every UI event at its position (`seq` 1, 2, ...), which `attach` replays and follows;
- `run_calls`: every usage report as the run saw it (its billing key and the credits it should cost), which
  `chainwarden inspect --reconcile` matches with the receipts.

All of it goes through the ledger's connections and retries (`Ledger._run_write`, the one SQL layer). It is
history, not money: the receipts stay the ledger's alone (`billing/ledger.py`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from chainwarden._sql import columns
from chainwarden.billing.ledger import _UPSERT_RUN, Ledger
from chainwarden.billing.records import RunRecord
from chainwarden.errors import ChainwardenError, InvalidArgumentType

__all__ = [
    "CHANNEL",
    "CONTEXT_STEP",
    "POSTGRES_STEP",
    "SQLITE_STEP",
    "CallRow",
    "EventRow",
    "RunStore",
    "TakenOver",
]

#: PostgreSQL: the channel a commit of new events notifies (payload: the run id), which attachers listen to.
CHANNEL = "chainwarden_runs"

_RUN_COLUMNS = (
    ("request", "TEXT"),
    ("owner", "TEXT"),
    ("lease_until", "{real}"),
    ("events", "INTEGER NOT NULL DEFAULT 0"),
)
_TABLES = (
    """CREATE TABLE IF NOT EXISTS run_events (
        run_id TEXT NOT NULL,
        attempt INTEGER NOT NULL,
        seq INTEGER NOT NULL,
        type TEXT NOT NULL,
        body TEXT NOT NULL,
        PRIMARY KEY (run_id, attempt, seq)
    )""",
    """CREATE TABLE IF NOT EXISTS run_calls (
        run_id TEXT NOT NULL,
        attempt INTEGER NOT NULL,
        call_index INTEGER NOT NULL,
        source_system TEXT NOT NULL,
        source_reference TEXT NOT NULL,
        credits {big},
        cost_usd TEXT,
        model TEXT,
        input_tokens {big},
        output_tokens {big},
        usage_missing INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (run_id, attempt, call_index)
    )""",
    "CREATE INDEX IF NOT EXISTS run_calls_key ON run_calls (source_system, source_reference)",
    """CREATE TABLE IF NOT EXISTS credit_holds (
        id TEXT PRIMARY KEY,
        billing_account_id TEXT NOT NULL,
        run_id TEXT NOT NULL,
        attempt INTEGER NOT NULL,
        credits {big} NOT NULL,
        settled INTEGER NOT NULL DEFAULT 0,
        owner TEXT NOT NULL,
        expires_at {real} NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS credit_holds_account ON credit_holds (billing_account_id, expires_at)",
    "CREATE INDEX IF NOT EXISTS credit_holds_owner ON credit_holds (owner)",
    "CREATE INDEX IF NOT EXISTS runs_status ON runs (status, lease_until)",
    "CREATE INDEX IF NOT EXISTS runs_account ON runs (billing_account_id, started_at)",
)


def _step(real: str, big: str) -> list[Any]:
    def add_run_columns(cursor: Any) -> None:
        present = columns(cursor, "runs")
        for name, kind in _RUN_COLUMNS:
            if name not in present:
                cursor.execute(f"ALTER TABLE runs ADD COLUMN {name} {kind.format(real=real)}")

    return [add_run_columns, *(statement.format(real=real, big=big) for statement in _TABLES)]


#: The billing schema's step 3 (runs that outlive their process), for each store.
SQLITE_STEP = _step("REAL", "INTEGER")
POSTGRES_STEP = _step("DOUBLE PRECISION", "BIGINT")


def _add_context_column(cursor: Any) -> None:
    if "context" not in columns(cursor, "runs"):
        cursor.execute("ALTER TABLE runs ADD COLUMN context TEXT")


#: The billing schema's step 4, the same on both stores: a run's context (its user, session, tags and
#: attributes as JSON; docs/containment.md "Context that travels"), kept once on its record.
CONTEXT_STEP: list[Any] = [_add_context_column]

_START = (
    "UPDATE runs SET request = %s, owner = %s, lease_until = {now} + %s, events = 0 "
    "WHERE run_id = %s AND attempt = %s"
)
_CLEAR_EVENTS = "DELETE FROM run_events WHERE run_id = %s AND attempt = %s"
_CLEAR_CALLS = "DELETE FROM run_calls WHERE run_id = %s AND attempt = %s"
# Whoever writes a run's log must still own it: a run taken over (marked abandoned after its lease ran out)
# is never written again by the process that lost it.
_ADVANCE = (
    "UPDATE runs SET events = %s WHERE run_id = %s AND attempt = %s AND owner = %s AND status = 'running'"
)
_OWNED = "SELECT 1 FROM runs WHERE run_id = %s AND attempt = %s AND owner = %s AND status = 'running'"
_INSERT_EVENTS = "INSERT INTO run_events (run_id, attempt, seq, type, body) VALUES {values}"
# A batch's events as one JSON document the database unpacks: one parameter, encoded by the json module's C
# encoder, instead of five per event bound in Python, which costs more than the insert (docs/billing.md "Many
# facts in one transaction" does the same for receipts; benches/README.md "Run-event persistence").
_JSON_EVENTS_PG = (
    "INSERT INTO run_events (run_id, attempt, seq, type, body) "
    "SELECT %s, %s, (r->>0)::int, r->>1, r->>2 FROM json_array_elements(%s::json) AS r"
)
_JSON_EVENTS_SQLITE = (
    "INSERT INTO run_events (run_id, attempt, seq, type, body) SELECT %s, %s, json_extract(value, '$[0]'), "
    "json_extract(value, '$[1]'), json_extract(value, '$[2]') FROM json_each(%s)"
)
_INSERT_CALLS = (
    "INSERT INTO run_calls (run_id, attempt, call_index, source_system, source_reference, credits, cost_usd, "
    "model, input_tokens, output_tokens, usage_missing) VALUES {values} "
    "ON CONFLICT (run_id, attempt, call_index) DO NOTHING"
)
_END = (
    "UPDATE runs SET status = %s, ended_at = %s, prompt_tokens = %s, completion_tokens = %s, "
    "finish_reason = %s, error = %s, events = COALESCE(%s, events), owner = NULL, lease_until = NULL "
    "WHERE run_id = %s AND attempt = %s AND owner = %s AND status = 'running'"
)
_RENEW_RUNS = "UPDATE runs SET lease_until = {now} + %s WHERE owner = %s AND status = 'running'"
_RENEW_HOLDS = "UPDATE credit_holds SET expires_at = {now} + %s WHERE owner = %s"
_EXPIRED = (
    "SELECT run_id, attempt, events FROM runs WHERE status = 'running' "
    "AND (lease_until IS NULL OR lease_until < {now}) LIMIT 1000"
)
_ABANDON = (
    "UPDATE runs SET status = 'abandoned', ended_at = %s, finish_reason = 'error', error = 'internal', "
    "events = events + 2, owner = NULL, lease_until = NULL "
    "WHERE run_id = %s AND attempt = %s AND status = 'running' "
    "AND (lease_until IS NULL OR lease_until < {now})"
)
_SELECT_EVENTS = (
    "SELECT seq, type, body FROM run_events WHERE run_id = %s AND attempt = %s AND seq > %s "
    "ORDER BY seq LIMIT %s"
)
_SELECT_REQUEST = "SELECT request FROM runs WHERE run_id = %s AND attempt = %s"
_LATEST_ATTEMPT = "SELECT MAX(attempt) FROM runs WHERE run_id = %s"
_SELECT_STATE = "SELECT status, events FROM runs WHERE run_id = %s AND attempt = %s"
_SELECT_CALLS = (
    "SELECT run_id, attempt, call_index, source_system, source_reference, credits, cost_usd, model, "
    "input_tokens, output_tokens, usage_missing FROM run_calls"
)
_NOTIFY = "SELECT pg_notify(%s, %s)"
_ROWS_PER_INSERT = 200  # 11 parameters a call row: far below SQLite's bound


class TakenOver(ChainwardenError):
    """The run's record is no longer this process's: its lease ran out and another runtime marked it
    abandoned. Nothing more of it is written."""


@dataclass(frozen=True, slots=True)
class EventRow:
    seq: int
    type: str
    body: str


@dataclass(frozen=True, slots=True)
class CallRow:
    """One usage report as its run recorded it: its billing key and what it should cost."""

    run_id: str
    attempt: int
    call_index: int
    source_system: str
    source_reference: str
    credits: int | None
    cost_usd: Decimal | None
    model: str | None
    input_tokens: int | None
    output_tokens: int | None
    usage_missing: bool

    def row(self) -> tuple[Any, ...]:
        return (
            self.run_id,
            self.attempt,
            self.call_index,
            self.source_system,
            self.source_reference,
            self.credits,
            None if self.cost_usd is None else str(self.cost_usd),
            self.model,
            self.input_tokens,
            self.output_tokens,
            int(self.usage_missing),
        )


class RunStore:
    """The run records, event logs and recorded calls of one ledger's database."""

    def __init__(self, ledger: Ledger) -> None:
        if not isinstance(ledger, Ledger):
            raise InvalidArgumentType(
                f"ledger must be a Ledger, got {type(ledger).__name__}", argument="ledger"
            )
        self.ledger = ledger
        now = ledger._NOW_EPOCH
        self._postgres = ledger._POSTGRES
        self._start = _START.format(now=now)
        self._renew_runs = _RENEW_RUNS.format(now=now)
        self._renew_holds = _RENEW_HOLDS.format(now=now)
        self._expired = _EXPIRED.format(now=now)
        self._abandon = _ABANDON.format(now=now)

    # --- writes (a run's own process) ----------------------------------------------------------------------
    def start(self, record: RunRecord, request: dict[str, Any], owner: str, lease_s: float) -> None:
        """Writes the run's record as started, owned by `owner` for `lease_s`, and starts its log afresh
        (a new execution of the same attempt replaces the log of the one before)."""
        ledger = self.ledger
        row = ledger._run_row(record)
        text = json.dumps(request, ensure_ascii=True, allow_nan=False, separators=(",", ":"))
        key = (record.run_id, record.attempt)

        def body(cursor: Any) -> None:
            cursor.execute(ledger._sql(_UPSERT_RUN), row)
            cursor.execute(ledger._sql(self._start), (text, owner, lease_s, *key))
            cursor.execute(ledger._sql(_CLEAR_EVENTS), key)
            cursor.execute(ledger._sql(_CLEAR_CALLS), key)

        ledger._run_write(body)

    def append(
        self,
        run_id: str,
        attempt: int,
        owner: str,
        events: Sequence[EventRow],
        calls: Sequence[CallRow],
        *,
        end: RunRecord | None = None,
        durable: bool = False,
    ) -> None:
        """Appends events and recorded calls to the run's log in one transaction, and with `end` records
        how the run ended in it too. `TakenOver` when the run is no longer `owner`'s (nothing is written)."""
        ledger = self.ledger
        last = events[-1].seq if events else None

        def body(cursor: Any) -> None:
            if end is not None:
                cursor.execute(ledger._sql(_END), self._end_row(end, last, owner))
            elif last is not None:
                cursor.execute(ledger._sql(_ADVANCE), (last, run_id, attempt, owner))
            else:
                cursor.execute(ledger._sql(_OWNED), (run_id, attempt, owner))
            owned = cursor.fetchone() is not None if end is None and last is None else cursor.rowcount == 1
            if not owned:
                raise TakenOver(f"run {run_id!r} attempt {attempt} is no longer owned by this runtime")
            if events:
                rows = json.dumps([[e.seq, e.type, e.body] for e in events], ensure_ascii=True)
                statement = _JSON_EVENTS_PG if self._postgres else ledger._sql(_JSON_EVENTS_SQLITE)
                cursor.execute(statement, (run_id, attempt, rows))
            for chunk in _chunks(calls):
                values = ", ".join(["(" + ", ".join(["%s"] * 11) + ")"] * len(chunk))
                cursor.execute(
                    ledger._sql(_INSERT_CALLS.format(values=values)), [v for c in chunk for v in c.row()]
                )
            if self._postgres and events:
                cursor.execute(_NOTIFY, (CHANNEL, run_id))

        ledger._run_write(body, durable=durable and end is None)

    def _end_row(self, record: RunRecord, last: int | None, owner: str) -> tuple[Any, ...]:
        ledger = self.ledger
        ledger._run_row(record)  # the same checks as every record
        ended = record.ended_at or datetime.now(UTC)
        return (
            record.status,
            ledger._encode_time(ended),
            record.prompt_tokens,
            record.completion_tokens,
            record.finish_reason,
            record.error,
            last,
            record.run_id,
            record.attempt,
            owner,
        )

    def renew(self, owner: str, lease_s: float) -> None:
        """Extends the leases of `owner`'s running runs and credit holds (one transaction)."""
        ledger = self.ledger

        def body(cursor: Any) -> None:
            cursor.execute(ledger._sql(self._renew_runs), (lease_s, owner))
            cursor.execute(ledger._sql(self._renew_holds), (lease_s, owner))

        ledger._run_write(body, durable=False)

    def sweep(self) -> list[tuple[str, int]]:
        """Marks `abandoned` every running run whose lease ran out (its process died), ending its log with
        `Error("internal")` and `Done`; returns them."""
        ledger = self.ledger
        done: list[tuple[str, int]] = []
        ended = ledger._encode_time(datetime.now(UTC))
        # A read first: most sweeps find nothing, and a read takes no write lock.
        if not ledger._read(self._expired, ()):
            return done

        def body(cursor: Any) -> None:
            cursor.execute(ledger._sql(self._expired))
            for run_id, attempt, events in cursor.fetchall():
                cursor.execute(ledger._sql(self._abandon), (ended, run_id, attempt))
                if cursor.rowcount != 1:
                    continue
                seq = int(events)
                # Positions past the last one its process wrote: events it wrote later than its last
                # advance cannot exist (each batch advances the count in its own transaction).
                rows = [
                    (run_id, attempt, seq + 1, "error", '{"code":"internal"}'),
                    (run_id, attempt, seq + 2, "done", "{}"),
                ]
                cursor.execute(
                    ledger._sql(_INSERT_EVENTS.format(values="(%s, %s, %s, %s, %s), (%s, %s, %s, %s, %s)")),
                    [v for r in rows for v in r],
                )
                if self._postgres:
                    cursor.execute(_NOTIFY, (CHANNEL, run_id))
                done.append((str(run_id), int(attempt)))

        ledger._run_write(body)
        return done

    # --- reads (any process) -------------------------------------------------------------------------------
    def latest_attempt(self, run_id: str) -> int | None:
        rows = self.ledger._read(_LATEST_ATTEMPT, (run_id,))
        return None if not rows or rows[0][0] is None else int(rows[0][0])

    def state(self, run_id: str, attempt: int) -> tuple[str, int] | None:
        """The run's status and how many events its log holds; None when there is no such run."""
        rows = self.ledger._read(_SELECT_STATE, (run_id, attempt))
        return None if not rows else (str(rows[0][0]), int(rows[0][1] or 0))

    def events(self, run_id: str, attempt: int, after: int, limit: int = 1000) -> list[EventRow]:
        rows = self.ledger._read(_SELECT_EVENTS, (run_id, attempt, after, limit))
        return [EventRow(int(r[0]), str(r[1]), str(r[2])) for r in rows]

    def request(self, run_id: str, attempt: int) -> dict[str, Any] | None:
        rows = self.ledger._read(_SELECT_REQUEST, (run_id, attempt))
        if not rows or rows[0][0] is None:
            return None
        value = json.loads(rows[0][0])
        return value if isinstance(value, dict) else None

    def calls(self, run_ids: Sequence[str] | None = None) -> list[CallRow]:
        """The recorded calls (of these runs), in run, attempt and call order."""
        order = " ORDER BY run_id, attempt, call_index"
        if run_ids is None:
            rows = self.ledger._read(_SELECT_CALLS + order, ())
        else:
            rows = []
            for chunk in _chunks(list(run_ids)):
                marks = ", ".join(["%s"] * len(chunk))
                rows += self.ledger._read(_SELECT_CALLS + f" WHERE run_id IN ({marks})" + order, tuple(chunk))
        return [
            CallRow(
                run_id=str(r[0]),
                attempt=int(r[1]),
                call_index=int(r[2]),
                source_system=str(r[3]),
                source_reference=str(r[4]),
                credits=None if r[5] is None else int(r[5]),
                cost_usd=None if r[6] is None else Decimal(r[6]),
                model=r[7],
                input_tokens=None if r[8] is None else int(r[8]),
                output_tokens=None if r[9] is None else int(r[9]),
                usage_missing=bool(r[10]),
            )
            for r in rows
        ]


def _chunks(items: Sequence[Any]) -> list[Sequence[Any]]:
    return [items[i : i + _ROWS_PER_INSERT] for i in range(0, len(items), _ROWS_PER_INSERT)]

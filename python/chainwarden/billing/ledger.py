"""The one ledger writer (ONE_LEDGER_WRITER): the only code that writes receipts, balances and ledger entries.

Every write statement lives here, with the commit path that runs them, so one CI check
(tests/billing/test_one_ledger_writer.py) can prove nobody else writes. A `Ledger` reads through
`LedgerReads` (billing/ledger_reads.py) and runs in its store through `Transactions`
(billing/transactions.py); the stores (`SqliteLedger`, `PostgresLedger`) only supply connections, error
classification and value codecs, and take their tables from billing/ledger_schema.py.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, TypeVar

from chainwarden.billing.facts import (
    Billable,
    UsageFact,
    check_text,
    decode_usage_raw,
)
from chainwarden.billing.ledger_reads import SELECT_RECEIPTS, LedgerReads, check_account_id
from chainwarden.billing.metrics import METRICS
from chainwarden.billing.pricing import MAX_CREDITS, Pricing
from chainwarden.billing.records import RUN_STATUSES, ChargeReceipt, RunRecord, encode_run_context
from chainwarden.billing.transactions import Failure, Transactions
from chainwarden.errors import InvalidArgument, InvalidArgumentType

__all__ = ["REASON_CHARGE", "REASON_OPENING", "Failure", "Ledger", "Transactions"]

logger = logging.getLogger("chainwarden.billing")
T = TypeVar("T")

REASON_CHARGE = "charge_receipt"
REASON_OPENING = "opening_balance"

_RECEIPT_COLUMNS = (
    "source_system, source_reference, run_id, attempt, usage_unit_id, billing_account_id, virtual_key_id, "
    "request_id, provider, model, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, "
    "charged_credits, response_cost_usd, usage_raw, commit_id, created_at"
)
_INSERT_RECEIPT = (
    f"INSERT INTO charge_receipts ({_RECEIPT_COLUMNS}) "
    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
    "ON CONFLICT (source_system, source_reference) DO NOTHING"
)
# A duplicate in `commit_usage_fact`: whose row it is (commit_id) and, when it is this call's own row from an
# attempt that landed before the connection broke, the balance its entry left.
_SELECT_COMMIT_ID = "SELECT commit_id FROM charge_receipts WHERE source_system = %s AND source_reference = %s"
# A commit's own entry, found after its lost COMMIT had landed: among the account's newest entries, so it is
# searched from the newest down (the account index), never by a walk from the account's first entry.
_SELECT_OWN_BALANCE = (
    "SELECT balance_after FROM credit_ledger WHERE billing_account_id = %s AND reference = %s "
    "AND reason = %s ORDER BY id DESC LIMIT 1"
)
_CREATE_ACCOUNT = (
    "INSERT INTO billing_accounts (id, balance_credits, created_at) VALUES (%s, %s, %s) "
    "ON CONFLICT (id) DO NOTHING"
)
# Ensure + debit + read back in one statement: an unknown account is created owing the charge, a known one is
# debited. The guard keeps the balance inside the 64-bit column on both stores (PostgreSQL would raise, SQLite
# would silently turn the column into a float): a debit that would leave it returns no row and is refused.
_UPSERT_DEBIT = (
    "INSERT INTO billing_accounts (id, balance_credits, created_at) VALUES (%s, %s, %s) "
    "ON CONFLICT (id) DO UPDATE SET balance_credits = billing_accounts.balance_credits - %s "
    "WHERE billing_accounts.balance_credits >= %s RETURNING balance_credits, created_at"
)
# The same with its ledger entry, for stores with data-modifying WITH (PostgreSQL): one round trip.
_DEBIT_WITH_ENTRY = (
    f"WITH account AS ({_UPSERT_DEBIT}), entry AS ("
    "INSERT INTO credit_ledger (billing_account_id, amount, balance_after, reason, reference, created_at) "
    "SELECT %s, %s, balance_credits, %s, %s, %s FROM account RETURNING 1) "
    "SELECT balance_credits, created_at FROM account"
)
_INSERT_ENTRY = (
    "INSERT INTO credit_ledger (billing_account_id, amount, balance_after, reason, reference, created_at) "
    "VALUES (%s, %s, %s, %s, %s, %s)"
)
_SELECT_RECEIPTS_BY_KEY = (
    SELECT_RECEIPTS
    + ", commit_id FROM charge_receipts WHERE source_system = %s AND source_reference IN ({marks})"
)
# One row per (run_id, attempt): the start writes it, the end completes it; a re-run of the same attempt
# starts the row over (its receipts stay idempotent on their own keys).
_UPSERT_RUN = (
    "INSERT INTO runs (run_id, attempt, graph_id, billing_account_id, virtual_key_id, model, status, "
    "started_at, ended_at, prompt_tokens, completion_tokens, finish_reason, error, context) "
    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
    "ON CONFLICT (run_id, attempt) DO UPDATE SET graph_id = excluded.graph_id, "
    "billing_account_id = excluded.billing_account_id, virtual_key_id = excluded.virtual_key_id, "
    "model = excluded.model, status = excluded.status, started_at = excluded.started_at, "
    "ended_at = excluded.ended_at, prompt_tokens = excluded.prompt_tokens, "
    "completion_tokens = excluded.completion_tokens, finish_reason = excluded.finish_reason, "
    "error = excluded.error, context = excluded.context"
)


_RECEIPT_CHUNK = 500  # rows per multi-row INSERT: at most 19 parameters each, far below SQLite's bound
_IN_CHUNK = 2_000


def _chunks(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _insert_receipts(rows: int) -> str:
    # RETURNING names the rows this statement inserted; a key committed before (or by a concurrent writer)
    # is skipped by ON CONFLICT and not returned.
    values = ", ".join(["(" + ", ".join(["%s"] * 19) + ")"] * rows)
    return (
        f"INSERT INTO charge_receipts ({_RECEIPT_COLUMNS}) VALUES {values} "
        "ON CONFLICT (source_system, source_reference) DO NOTHING RETURNING source_system, source_reference"
    )


def _insert_entries(rows: int) -> str:
    values = ", ".join(["(%s, %s, %s, %s, %s, %s)"] * rows)
    return (
        "INSERT INTO credit_ledger (billing_account_id, amount, balance_after, reason, reference, "
        f"created_at) VALUES {values}"
    )


# PostgreSQL: a batch's rows as one JSON document of row objects, read by the server (see
# Ledger._insert_many). `json_to_recordset` over `json` (not `jsonb`) takes each value from its text as
# written, so an integer never passes through a float, and JSON null is NULL; the record's types are the
# columns'. The last `shared` columns hold one value for the whole batch (its commit id and time), sent once
# as plain parameters instead of once per row. The objects' keys are one letter each: the shortest document.
_ROW_KEYS = tuple("abcdefghijklmnopqrstuvwxyz")


def _from_json_rows(columns: str, casts: Sequence[str], shared: int) -> str:
    own, common = casts[: len(casts) - shared], casts[len(casts) - shared :]
    fields = list(_ROW_KEYS[: len(own)])
    values = [*fields, *(f"%s::{cast}" for cast in common)]
    record = ", ".join(f"{name} {cast}" for name, cast in zip(fields, own, strict=True))
    # json_to_recordset reads each row object once into a typed record (19 `->>` re-scan a row 19 times).
    return f"({columns}) SELECT {', '.join(values)} FROM json_to_recordset(%s::json) AS r({record})"


_TEXT, _INT, _BIG, _NUM, _TIME = "text", "int", "bigint", "numeric", "timestamptz"
_RECEIPT_SHARED = 2  # commit_id, created_at
_JSON_RECEIPTS = (
    "INSERT INTO charge_receipts "
    + _from_json_rows(
        _RECEIPT_COLUMNS,
        [*[_TEXT] * 3, _INT, *[_TEXT] * 6, *[_BIG] * 5, _NUM, _TEXT, _TEXT, _TIME],
        _RECEIPT_SHARED,
    )
    + " ON CONFLICT (source_system, source_reference) DO NOTHING RETURNING source_system, source_reference"
)
_ENTRY_SHARED = 1  # created_at
_JSON_ENTRIES = "INSERT INTO credit_ledger " + _from_json_rows(
    "billing_account_id, amount, balance_after, reason, reference, created_at",
    [_TEXT, _BIG, _BIG, _TEXT, _TEXT, _TIME],
    _ENTRY_SHARED,
)


def _json_default(value: object) -> str:
    """The one row type JSON lacks, as its exact text: a Decimal cost."""
    if isinstance(value, Decimal):
        return str(value)
    raise InvalidArgumentType(f"a {type(value).__name__} cannot go into a batch row")


def _commit_id() -> str:
    """128 random bits as 32 hex digits, like `uuid4().hex` without building a UUID (a few µs a commit)."""
    return os.urandom(16).hex()


@dataclass(frozen=True)
class _Charge:
    """One fact ready to commit: the receipt it gets and its charge_receipts row."""

    receipt: ChargeReceipt
    row: tuple[Any, ...]

    @property
    def ident(self) -> tuple[str, str]:
        return (self.receipt.source_system, self.receipt.source_reference)


class Ledger(LedgerReads):
    """Credits ledger: exactly-once charge receipts, account balances and an append-only entry log.

    Thread-safe; usable as a context manager. Every call retries what is safe to retry within one budget
    (`retry_timeout_s`) and then raises `LedgerUnavailable`.
    """

    # --- writes ----------------------------------------------------------------------------------------
    def create_account(self, billing_account_id: str, balance_credits: int = 0) -> None:
        """Creates an account; `ValueError` if it exists. A non-zero opening balance is a ledger entry."""
        account = check_account_id(billing_account_id)
        if isinstance(balance_credits, bool) or not isinstance(balance_credits, int):
            raise InvalidArgumentType(
                f"balance_credits must be an int, got {type(balance_credits).__name__}",
                argument="balance_credits",
            )
        if abs(balance_credits) > MAX_CREDITS:
            raise InvalidArgument("balance_credits does not fit a ledger column", argument="balance_credits")
        now = self._encode_time(datetime.now(UTC))

        def body(cursor: Any) -> None:
            cursor.execute(self._sql(_CREATE_ACCOUNT), (account, balance_credits, now))
            if cursor.rowcount != 1:
                raise InvalidArgument(f"billing account {account!r} already exists", argument="account")
            if balance_credits != 0:
                cursor.execute(
                    self._sql(_INSERT_ENTRY),
                    (
                        account,
                        balance_credits,
                        balance_credits,
                        REASON_OPENING,
                        f"{REASON_OPENING}:{account}",
                        now,
                    ),
                )

        self._run_write(body)

    def _prepare(
        self,
        billable: Billable,
        pricing: Pricing,
        ingress_request_id: str | None,
        created_at: datetime,
        commit_id: str,
    ) -> _Charge:
        """Everything about one fact that needs no database: its price, receipt and row."""
        fact, key = billable.fact, billable.key
        cost = fact.cost_decimal
        if cost is None:
            # Under-billing must be visible: the receipt says 0 credits and the log says why.
            METRICS.increment("billing.missing_cost_usd")
            logger.error("billing.missing_cost_usd source_reference=%s model=%s", key, fact.model)
            user_cost, charged = None, 0
        else:
            user_cost, charged = pricing._charge_checked(cost)
        receipt = ChargeReceipt(
            source_system=fact.source,
            source_reference=key,
            run_id=fact.run_id,
            attempt=fact.attempt,
            billing_account_id=fact.billing_account_id,
            virtual_key_id=fact.virtual_key_id,
            ingress_request_id=ingress_request_id,
            provider=fact.provider,
            model=fact.model,
            input_tokens=fact.input_tokens,
            output_tokens=fact.output_tokens,
            charged_credits=charged,
            response_cost_usd=user_cost,
            created_at=created_at,
            usage_raw=decode_usage_raw(fact.usage_raw_json),
        )
        row = (
            fact.source,
            key,
            fact.run_id,
            fact.attempt,
            fact.usage_unit_id,
            fact.billing_account_id,
            fact.virtual_key_id,
            ingress_request_id,
            fact.provider,
            fact.model,
            fact.input_tokens,
            fact.output_tokens,
            fact.cache_read_tokens,
            fact.cache_write_tokens,
            charged,
            self._encode_decimal(user_cost),
            fact.usage_raw_json,
            commit_id,
            self._encode_time(created_at),
        )
        return _Charge(receipt, row)

    def _debit(
        self, cursor: Any, account: str, entries: Sequence[tuple[int, str]], now: Any
    ) -> tuple[list[int], bool]:
        """Debits `(charged, reference)` entries from one account (created at 0 when unknown) and appends
        their ledger entries; returns each entry's balance_after and whether the account was created.

        One upsert per account whatever the number of entries: the row lock it takes is held to COMMIT,
        so the balances after each entry follow from the final one. `now` is the new account's created_at:
        a returned created_at equal to it means this statement created the row.
        """
        total = entries[0][0] if len(entries) == 1 else sum(charged for charged, _ in entries)
        if total > MAX_CREDITS:
            # One upsert's parameter must fit 64 bits: split (no real batch gets here).
            half = len(entries) // 2
            first, created = self._debit(cursor, account, entries[:half], now)
            second, _ = self._debit(cursor, account, entries[half:], now)
            return first + second, created
        single = len(entries) == 1
        if single and self._writable_ctes:
            # PostgreSQL: the debit and its ledger entry in one statement (one round trip fewer).
            charged, reference = entries[0]
            upsert = (account, -charged, now, charged, charged - MAX_CREDITS)
            entry = (account, -charged, REASON_CHARGE, reference, now)
            cursor.execute(self._sql(_DEBIT_WITH_ENTRY), (*upsert, *entry))
        else:
            cursor.execute(self._sql(_UPSERT_DEBIT), (account, -total, now, total, total - MAX_CREDITS))
        found = cursor.fetchone()
        if found is None:
            raise InvalidArgument(
                f"charging {total} credits would take the balance of {account!r} below the ledger's "
                "64-bit range"
            )
        # `now` as the store encodes it comes back unchanged (SQLite text, a PostgreSQL timestamptz compared
        # as an instant): equal values need no decoding.
        final, created = int(found[0]), found[1] == now
        balances = []
        running = final + total
        for charged, _ in entries:
            running -= charged
            balances.append(running)
        if single and not self._writable_ctes:
            # SQLite, one fact: its entry as one plain insert (no batching machinery on the per-fact path).
            charged, reference = entries[0]
            cursor.execute(
                self._sql(_INSERT_ENTRY), (account, -charged, balances[0], REASON_CHARGE, reference, now)
            )
        elif not single:
            rows = [
                (account, -charged, after, REASON_CHARGE, reference, now)
                for (charged, reference), after in zip(entries, balances, strict=True)
            ]
            self._insert_many(
                cursor, _insert_entries, _JSON_ENTRIES, rows, returning=False, shared=_ENTRY_SHARED
            )
        return balances, created

    def _insert_many(
        self,
        cursor: Any,
        multi_row: Callable[[int], str],
        from_json: str,
        rows: Sequence[tuple[Any, ...]],
        *,
        returning: bool,
        shared: int,
    ) -> list[Any]:
        """Inserts many rows; with `returning`, the rows the statement returns. The last `shared` values
        are the same in every row.

        PostgreSQL: one statement over one JSON document of the rows, encoded by the json module's C encoder:
        one round trip, one execution and one parameter (psycopg splits a 500-row VALUES list's placeholders
        in Python, and dumps array parameters element by element in Python: either cost more than the
        insert; benches/README.md "Batch commits and round trips"). SQLite: multi-row VALUES lists, one per
        chunk.
        """
        found: list[Any] = []
        if not rows:
            return found
        if self._json_batches:
            tail = rows[0][len(rows[0]) - shared :]
            if any(row[len(row) - shared :] != tail for row in rows):
                raise AssertionError("a batch's shared columns differ between rows")  # a bug, never input
            keys = _ROW_KEYS[: len(rows[0]) - shared]
            own = [dict(zip(keys, row, strict=False)) for row in rows]
            cursor.execute(from_json, [*tail, json.dumps(own, ensure_ascii=False, default=_json_default)])
            return list(cursor.fetchall()) if returning else found
        for chunk in _chunks(rows, _RECEIPT_CHUNK):
            cursor.execute(self._sql(multi_row(len(chunk))), [v for r in chunk for v in r])
            if returning:
                found.extend(cursor.fetchall())
        return found

    def commit_usage_fact(
        self,
        fact: UsageFact,
        *,
        call_index: int,
        pricing: Pricing,
        ingress_request_id: str | None = None,
    ) -> ChargeReceipt | None:
        """Commits one fact as receipt + debit + ledger entry in one transaction; None when it is a duplicate.

        Post-call billing never refuses: an unknown account is created at 0 (logged at WARNING and counted)
        and a balance may go negative. A commit retried after a lost connection whose first attempt did land
        returns the receipt (it is this call's), never a second charge. `LedgerUnavailable` when the store
        stays away: committing the same fact again later is safe.
        """
        if not isinstance(pricing, Pricing):
            raise InvalidArgumentType(
                f"pricing must be a Pricing, got {type(pricing).__name__}", argument="pricing"
            )
        check_text("ingress_request_id", ingress_request_id, optional=True)
        return self._commit_usage_fact(
            Billable.resolve(fact, call_index), pricing=pricing, ingress_request_id=ingress_request_id
        )

    def _commit_usage_fact(
        self, billable: Billable, *, pricing: Pricing, ingress_request_id: str | None
    ) -> ChargeReceipt | None:
        """`commit_usage_fact` of a fact resolved already (its arguments checked)."""
        created_at = datetime.now(UTC)
        # Identifies this call's row: after a connection broke during COMMIT, a retry that finds the key
        # taken can tell "my first attempt landed" from "someone else billed it".
        commit_id = _commit_id()
        charge = self._prepare(billable, pricing, ingress_request_id, created_at, commit_id)
        receipt = charge.receipt
        account, key = receipt.billing_account_id, receipt.source_reference
        now = charge.row[-1]

        def body(cursor: Any) -> tuple[int, bool] | None:
            # The receipt goes first: its unique key decides duplicates before any lock on the account is
            # taken, so concurrent writers never wait on each other in opposite orders. On PostgreSQL the
            # whole commit is four round trips: BEGIN, this insert, the debit with its entry, COMMIT.
            cursor.execute(self._sql(_INSERT_RECEIPT), charge.row)
            if cursor.rowcount != 1:
                # The key is taken: a duplicate (one indexed read), or this call's own first attempt.
                cursor.execute(self._sql(_SELECT_COMMIT_ID), (receipt.source_system, key))
                found = cursor.fetchone()
                if found is None or found[0] != commit_id:
                    return None
                cursor.execute(self._sql(_SELECT_OWN_BALANCE), (account, key, REASON_CHARGE))
                return int(cursor.fetchone()[0]), False
            balances, created = self._debit(cursor, account, [(receipt.charged_credits, key)], now)
            return balances[0], created

        outcome = self._run_write(body)
        if outcome is None:
            return None
        balance_after, created = outcome
        self._log_charge(account, key, balance_after, created)
        return receipt

    def commit_usage_facts(
        self,
        facts: Sequence[UsageFact],
        *,
        pricing: Pricing,
        call_indexes: Sequence[int] | None = None,
        ingress_request_id: str | None = None,
    ) -> list[ChargeReceipt]:
        """Commits many facts in ONE transaction: all of them or none; one receipt per fact, in order.

        Exactly-once as `commit_usage_fact`, per fact: a fact whose key is already committed (or that
        repeats an earlier fact of the batch) gets the original receipt back, and is not charged again.
        `call_indexes[i]` resolves a missing usage_unit_id of `facts[i]` (default: `i`). A bad fact raises
        before anything is written, its error naming `facts[i]`; an error inside the transaction (a store
        refusal, a balance out of range) rolls the whole batch back. Retrying a batch is always safe.
        """
        if isinstance(facts, str | bytes) or not isinstance(facts, Sequence):
            raise InvalidArgumentType(
                f"facts must be a sequence of UsageFact, got {type(facts).__name__}", argument="facts"
            )
        if not isinstance(pricing, Pricing):
            raise InvalidArgumentType(
                f"pricing must be a Pricing, got {type(pricing).__name__}", argument="pricing"
            )
        check_text("ingress_request_id", ingress_request_id, optional=True)
        if call_indexes is None:
            indexes: Sequence[int] = range(len(facts))
        elif isinstance(call_indexes, str | bytes) or not isinstance(call_indexes, Sequence):
            raise InvalidArgumentType(
                f"call_indexes must be a sequence of int or None, got {type(call_indexes).__name__}",
                argument="call_indexes",
            )
        elif len(call_indexes) != len(facts):
            raise InvalidArgument(
                f"call_indexes has {len(call_indexes)} items for {len(facts)} facts", argument="call_indexes"
            )
        else:
            indexes = call_indexes
        billables = []
        for i, (fact, call_index) in enumerate(zip(facts, indexes, strict=True)):
            try:
                billables.append(Billable.resolve(fact, call_index))
            except (TypeError, ValueError) as error:
                raise type(error)(f"facts[{i}]: {error}") from error
        committed = self._commit_usage_facts(
            billables, pricing=pricing, ingress_request_id=ingress_request_id
        )
        return [receipt for receipt, _ in committed]

    def _commit_usage_facts(
        self, billables: Sequence[Billable], *, pricing: Pricing, ingress_request_id: str | None
    ) -> list[tuple[ChargeReceipt, bool]]:
        """`commit_usage_facts` of facts resolved already (its arguments checked), each receipt with whether
        this call charged it (False: a duplicate)."""
        created_at = datetime.now(UTC)
        commit_id = _commit_id()
        charges: list[_Charge] = []
        for i, billable in enumerate(billables):
            try:
                charges.append(self._prepare(billable, pricing, ingress_request_id, created_at, commit_id))
            except (TypeError, ValueError) as error:
                raise type(error)(f"facts[{i}]: {error}") from error
        # One row per key, first occurrence wins (a second commit of a key is a duplicate).
        unique: dict[tuple[str, str], _Charge] = {}
        for charge in charges:
            unique.setdefault(charge.ident, charge)
        now = self._encode_time(created_at)

        def body(
            cursor: Any,
        ) -> tuple[dict[tuple[str, str], ChargeReceipt], set[tuple[str, str]], dict[str, tuple[int, bool]]]:
            # Receipts go in in the facts' order, so their ids follow the calls. Two batches sharing keys in
            # different orders would then wait on each other's unique-index entries crosswise (a deadlock):
            # the keys are locked first, in one order for every writer.
            if len(unique) > 1:
                self._lock_keys(cursor, list(unique))
            rows = [charge.row for charge in unique.values()]
            found = self._insert_many(
                cursor, _insert_receipts, _JSON_RECEIPTS, rows, returning=True, shared=_RECEIPT_SHARED
            )
            inserted = {(r[0], r[1]) for r in found}
            stored = self._stored_receipts(cursor, [i for i in unique if i not in inserted], commit_id)
            # A retry whose first attempt landed finds its own rows (commit_id): charged then, with the rest.
            per_account: dict[str, list[tuple[int, str]]] = {}
            for ident, charge in unique.items():
                if ident in inserted:
                    per_account.setdefault(charge.receipt.billing_account_id, []).append(
                        (charge.receipt.charged_credits, charge.receipt.source_reference)
                    )
            accounts: dict[str, tuple[int, bool]] = {}
            # Accounts in one order for every writer: two batches never wait on each other crosswise.
            for account in sorted(per_account):
                balances, created = self._debit(cursor, account, per_account[account], now)
                accounts[account] = (balances[-1], created)
            receipts = {i: receipt for i, (receipt, _) in stored.items()}
            receipts.update((i, unique[i].receipt) for i in inserted)
            ours = inserted | {i for i, (_, own) in stored.items() if own}
            return receipts, ours, accounts

        receipts, ours, accounts = self._run_write(body)
        for account, (balance_after, created) in accounts.items():
            self._log_charge(account, "batch", balance_after, created)
        result = []
        charged: set[tuple[str, str]] = set()
        for charge in charges:
            ident = charge.ident
            # The first occurrence of a key this call committed is its charge; a repeat is a duplicate.
            new = ident in ours and ident not in charged
            charged.add(ident)
            result.append((receipts[ident], new))
        return result

    def _stored_receipts(
        self, cursor: Any, idents: list[tuple[str, str]], commit_id: str
    ) -> dict[tuple[str, str], tuple[ChargeReceipt, bool]]:
        """The committed receipts of these keys, and whether each is this commit's own (`commit_id`)."""
        found: dict[tuple[str, str], tuple[ChargeReceipt, bool]] = {}
        by_source: dict[str, list[str]] = {}
        for source, key in idents:
            by_source.setdefault(source, []).append(key)
        for source, keys in by_source.items():
            for chunk in _chunks(keys, _IN_CHUNK):
                marks = ", ".join(["%s"] * len(chunk))
                cursor.execute(self._sql(_SELECT_RECEIPTS_BY_KEY.format(marks=marks)), (source, *chunk))
                for r in cursor.fetchall():
                    found[(r[0], r[1])] = (self._receipt(r), r[15] == commit_id)
        return found

    def _log_charge(self, account: str, key: str, balance_after: int, created: bool) -> None:
        if created:
            METRICS.increment("billing.unknown_account_created")
            logger.warning(
                "billing.unknown_account_created billing_account_id=%s source_reference=%s", account, key
            )
        if balance_after < 0:
            METRICS.increment("billing.negative_balance")
            logger.warning(
                "billing.negative_balance billing_account_id=%s balance=%s", account, balance_after
            )

    def record_run(self, record: RunRecord) -> None:
        """Writes a run's record.

        Idempotent per ``(run_id, attempt)``: the latest write wins. ``charged_credits``,
        ``receipt_count`` and ``events`` of ``record`` are ignored (they are read from the receipts and the
        run's log)."""
        row = self._run_row(record)
        self._run_write(lambda cursor: cursor.execute(self._sql(_UPSERT_RUN), row))

    def _run_row(self, record: RunRecord) -> tuple[Any, ...]:
        """The checked row of ``_UPSERT_RUN`` for ``record``."""
        if not isinstance(record, RunRecord):
            raise InvalidArgumentType(
                f"record must be a RunRecord, got {type(record).__name__}", argument="record"
            )
        for name in ("run_id", "graph_id", "billing_account_id", "virtual_key_id", "model"):
            check_text(name, getattr(record, name))
        check_text("finish_reason", record.finish_reason, optional=True)
        check_text("error", record.error, optional=True)
        if record.status not in RUN_STATUSES:
            raise InvalidArgument(
                f"status must be one of {RUN_STATUSES}, got {record.status!r}", argument="record"
            )
        for name in ("attempt", "prompt_tokens", "completion_tokens"):
            value = getattr(record, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise InvalidArgumentType(f"{name} must be an int, got {type(value).__name__}", argument=name)
            if not 0 <= value <= MAX_CREDITS:
                raise InvalidArgument(
                    f"{name} must be between 0 and {MAX_CREDITS}, got {value}", argument=name
                )
        for name in ("started_at", "ended_at"):
            value = getattr(record, name)
            if not (isinstance(value, datetime) or (name == "ended_at" and value is None)):
                raise InvalidArgumentType(
                    f"{name} must be a datetime, got {type(value).__name__}", argument=name
                )
        return (
            record.run_id,
            record.attempt,
            record.graph_id,
            record.billing_account_id,
            record.virtual_key_id,
            record.model,
            record.status,
            self._encode_time(record.started_at),
            None if record.ended_at is None else self._encode_time(record.ended_at),
            record.prompt_tokens,
            record.completion_tokens,
            record.finish_reason,
            record.error,
            encode_run_context(record.context),
        )

"""The ledger's reads: receipts, run records, balances and entries, each read from one snapshot with the
retries of `Transactions` (never a write: those are `billing/ledger.py`'s alone)."""

from __future__ import annotations

from typing import Any

from chainwarden.billing.facts import check_text, decode_usage_raw
from chainwarden.billing.records import (
    RUN_STATUSES,
    ChargeReceipt,
    LedgerEntry,
    RunRecord,
    decode_run_context,
)
from chainwarden.billing.transactions import Transactions
from chainwarden.errors import InvalidArgument, InvalidArgumentType, NotFound

_READ_BALANCE = "SELECT balance_credits FROM billing_accounts WHERE id = %s"
SELECT_RECEIPTS = (
    "SELECT source_system, source_reference, run_id, attempt, billing_account_id, virtual_key_id, "
    "request_id, provider, model, input_tokens, output_tokens, charged_credits, response_cost_usd, "
    "created_at, usage_raw"
)
_SELECT_RUNS = (
    "SELECT r.run_id, r.attempt, r.graph_id, r.billing_account_id, r.virtual_key_id, r.model, r.status, "
    "r.started_at, r.ended_at, r.prompt_tokens, r.completion_tokens, r.finish_reason, r.error, r.context, "
    "(SELECT COALESCE(SUM(c.charged_credits), 0) FROM charge_receipts c "
    "WHERE c.run_id = r.run_id AND c.attempt = r.attempt), "
    "(SELECT COUNT(*) FROM charge_receipts c WHERE c.run_id = r.run_id AND c.attempt = r.attempt), "
    "r.events "
    "FROM runs r"
)
_MAX_RUNS_LISTED = 100_000
_SELECT_ENTRIES = (
    "SELECT billing_account_id, amount, balance_after, reason, reference, created_at FROM credit_ledger "
    "WHERE billing_account_id = %s ORDER BY id"
)


def check_account_id(billing_account_id: object) -> str:
    checked = check_text("billing_account_id", billing_account_id)
    assert checked is not None
    return checked


class LedgerReads(Transactions):
    """What a `Ledger` reads back: receipts, run records, balances and entries."""

    def receipts(self, *, run_id: str | None = None) -> list[ChargeReceipt]:
        """Receipts in commit order, optionally for one run."""
        if run_id is None:
            rows = self._read(SELECT_RECEIPTS + " FROM charge_receipts ORDER BY id", ())
        elif isinstance(run_id, str):
            rows = self._read(
                SELECT_RECEIPTS + " FROM charge_receipts WHERE run_id = %s ORDER BY id", (run_id,)
            )
        else:
            raise InvalidArgumentType(
                f"run_id must be a str or None, got {type(run_id).__name__}", argument="run_id"
            )
        return [self._receipt(r) for r in rows]

    def _receipt(self, r: Any) -> ChargeReceipt:
        return ChargeReceipt(
            source_system=r[0],
            source_reference=r[1],
            run_id=r[2],
            attempt=int(r[3]),
            billing_account_id=r[4],
            virtual_key_id=r[5],
            ingress_request_id=r[6],
            provider=r[7],
            model=r[8],
            input_tokens=r[9],
            output_tokens=r[10],
            charged_credits=int(r[11]),
            response_cost_usd=self._decode_decimal(r[12]),
            created_at=self._decode_time(r[13]),
            usage_raw=decode_usage_raw(r[14]),
        )

    def runs(
        self,
        *,
        run_id: str | None = None,
        billing_account_id: str | None = None,
        status: str | None = None,
        limit: int = 50,
    ) -> list[RunRecord]:
        """Run records, the latest started first (every attempt of ``run_id`` when given), optionally of one
        account or in one status."""
        if isinstance(limit, bool) or not isinstance(limit, int):
            raise InvalidArgumentType(f"limit must be an int, got {type(limit).__name__}", argument="limit")
        if not 1 <= limit <= _MAX_RUNS_LISTED:
            raise InvalidArgument(
                f"limit must be between 1 and {_MAX_RUNS_LISTED}, got {limit}", argument="limit"
            )
        if status is not None and status not in RUN_STATUSES:
            raise InvalidArgument(
                f"status must be one of {RUN_STATUSES} or None, got {status!r}", argument="status"
            )
        where: list[str] = []
        params: list[Any] = []
        for column, value in (
            ("run_id", run_id),
            ("billing_account_id", billing_account_id),
            ("status", status),
        ):
            if value is None:
                continue
            if not isinstance(value, str):
                raise InvalidArgumentType(
                    f"{column} must be a str or None, got {type(value).__name__}", argument=column
                )
            where.append(f"r.{column} = %s")
            params.append(value)
        clause = (" WHERE " + " AND ".join(where)) if where else ""
        order = " ORDER BY r.started_at DESC, r.run_id, r.attempt DESC LIMIT %s"
        rows = self._read(_SELECT_RUNS + clause + order, (*params, limit))
        return [
            RunRecord(
                run_id=r[0],
                attempt=int(r[1]),
                graph_id=r[2],
                billing_account_id=r[3],
                virtual_key_id=r[4],
                model=r[5],
                status=r[6],
                started_at=self._decode_time(r[7]),
                ended_at=None if r[8] is None else self._decode_time(r[8]),
                prompt_tokens=int(r[9]),
                completion_tokens=int(r[10]),
                finish_reason=r[11],
                error=r[12],
                context=decode_run_context(r[13]),
                charged_credits=int(r[14]),
                receipt_count=int(r[15]),
                events=int(r[16] or 0),
            )
            for r in rows
        ]

    def balance(self, billing_account_id: str) -> int:
        """The account's balance in credits; `KeyError` for an unknown account."""
        account = check_account_id(billing_account_id)
        rows = self._read(_READ_BALANCE, (account,))
        if not rows:
            raise NotFound(account)
        return int(rows[0][0])

    def ledger_entries(self, billing_account_id: str) -> list[LedgerEntry]:
        """The account's entries, oldest first; `KeyError` for an unknown account."""
        account = check_account_id(billing_account_id)
        if not self._read(_READ_BALANCE, (account,)):
            raise NotFound(account)
        return [
            LedgerEntry(
                billing_account_id=r[0],
                amount=int(r[1]),
                balance_after=int(r[2]),
                reason=r[3],
                reference=r[4],
                created_at=self._decode_time(r[5]),
            )
            for r in self._read(_SELECT_ENTRIES, (account,))
        ]

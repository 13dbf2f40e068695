"""`chainwarden inspect` of a ledger: its recorded runs (docs/runtime.md, "Run records"), one run's receipts.

A ledger is a SQLite ledger file or a PostgreSQL DSN (``postgresql://…``). Reading it never changes it beyond
what opening any ledger does (adding a table a newer chainwarden keeps).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from chainwarden.billing import ChargeReceipt, Ledger, PostgresLedger, RunRecord, SqliteLedger
from chainwarden.cli.console import Section
from chainwarden.errors import ChainwardenError

__all__ = ["LedgerSourceError", "is_ledger", "ledger_sections", "ledger_summary", "open_ledger"]

_DSN_PREFIXES = ("postgresql://", "postgres://")
_SQLITE_MAGIC = b"SQLite format 3\x00"


class LedgerSourceError(ChainwardenError, ValueError):
    """The source looks like a database but is not a chainwarden ledger (the message says why)."""


def is_ledger(source: str) -> bool:
    """A PostgreSQL DSN, or a SQLite file (a run file is JSON)."""
    if source.startswith(_DSN_PREFIXES):
        return True
    try:
        with Path(source).open("rb") as file:
            return file.read(len(_SQLITE_MAGIC)) == _SQLITE_MAGIC
    except OSError:
        return False


def open_ledger(source: str) -> Ledger:
    if source.startswith(_DSN_PREFIXES):
        return PostgresLedger(source, retry_timeout_s=5.0)
    # Looked at read-only first: another application's SQLite file is refused, not given ledger tables.
    try:
        probe = sqlite3.connect(f"{Path(source).resolve().as_uri()}?mode=ro", uri=True)
        try:
            found = probe.execute(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'charge_receipts'"
            ).fetchone()[0]
        finally:
            probe.close()
    except sqlite3.Error as error:
        raise LedgerSourceError(f"{source}: cannot read it as SQLite ({error})") from None
    if not found:
        raise LedgerSourceError(f"{source}: a SQLite file, but not a chainwarden ledger (no charge receipts)")
    return SqliteLedger(source, busy_timeout_s=5.0)


def _time(value: Any) -> str | None:
    return None if value is None else value.isoformat()


def _run(record: RunRecord) -> dict[str, Any]:
    ended = record.ended_at
    return {
        "run_id": record.run_id,
        "attempt": record.attempt,
        "graph_id": record.graph_id,
        "model": record.model,
        "status": record.status,
        "error": record.error,
        "finish_reason": record.finish_reason,
        "billing_account_id": record.billing_account_id,
        "virtual_key_id": record.virtual_key_id,
        "started_at": _time(record.started_at),
        "ended_at": _time(ended),
        "duration_s": None if ended is None else (ended - record.started_at).total_seconds(),
        "prompt_tokens": record.prompt_tokens,
        "completion_tokens": record.completion_tokens,
        "charged_credits": record.charged_credits,
        "receipts": record.receipt_count,
        "context": record.context,  # user, session, tags, attributes (docs/runtime.md "Run records")
    }


def _receipt(receipt: ChargeReceipt) -> dict[str, Any]:
    cost = receipt.response_cost_usd
    return {
        "source_reference": receipt.source_reference,
        "attempt": receipt.attempt,
        "source_system": receipt.source_system,
        "provider": receipt.provider,
        "model": receipt.model,
        "input_tokens": receipt.input_tokens,
        "output_tokens": receipt.output_tokens,
        "charged_credits": receipt.charged_credits,
        "response_cost_usd": None if cost is None else str(cost),  # exact, as the ledger keeps it
        "created_at": _time(receipt.created_at),
    }


def ledger_summary(ledger: Ledger, *, run_id: str | None, limit: int) -> dict[str, Any]:
    """The runs (latest first) and, for one run, its receipts: plain JSON values."""
    summary: dict[str, Any] = {
        "source": "ledger",
        "ledger": ledger.describe,
        "runs": [_run(r) for r in ledger.runs(run_id=run_id, limit=limit)],
    }
    if run_id is not None:
        summary["receipts"] = [_receipt(r) for r in ledger.receipts(run_id=run_id)]
    return summary


def _text(value: object) -> str:
    return "-" if value is None else str(value)


def ledger_sections(summary: dict[str, Any]) -> list[Section]:
    runs = [
        [
            r["run_id"],
            str(r["attempt"]),
            r["graph_id"],
            r["status"] if r["error"] is None else f"{r['status']} ({r['error']})",
            _text(r["started_at"]),
            "-" if r["duration_s"] is None else f"{r['duration_s']:.3f} s",
            f"{r['prompt_tokens']} / {r['completion_tokens']}",
            str(r["charged_credits"]),
            str(r["receipts"]),
        ]
        for r in summary["runs"]
    ]
    header = [
        "run",
        "attempt",
        "graph",
        "status",
        "started",
        "duration",
        "tokens in / out",
        "credits",
        "receipts",
    ]
    sections: list[Section] = [(f"runs in {summary['ledger']}", header, runs)]
    if "receipts" in summary:
        sections.append(
            (
                "receipts",
                ["reference", "source", "model", "tokens in / out", "credits", "cost (USD)"],
                [
                    [
                        r["source_reference"],
                        r["source_system"],
                        _text(r["model"]),
                        f"{_text(r['input_tokens'])} / {_text(r['output_tokens'])}",
                        str(r["charged_credits"]),
                        _text(r["response_cost_usd"]),
                    ]
                    for r in summary["receipts"]
                ],
            )
        )
    return sections

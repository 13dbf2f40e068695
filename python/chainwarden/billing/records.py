"""What the ledger returns: charge receipts, balance-changing ledger entries and run records."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from chainwarden.errors import InvalidArgumentType
from chainwarden.vocab import RunStatus


@dataclass(frozen=True)
class ChargeReceipt:
    """One committed charge; `(source_system, source_reference)` is unique across the ledger."""

    source_system: str
    source_reference: str
    run_id: str
    attempt: int
    billing_account_id: str
    virtual_key_id: str
    ingress_request_id: str | None
    provider: str | None
    model: str | None
    input_tokens: int | None
    output_tokens: int | None
    charged_credits: int
    # None when the adapter reported no cost: the receipt exists (so replays stay idempotent) but bills 0.
    response_cost_usd: Decimal | None
    created_at: datetime
    # The fact's usage_raw as stored (strict JSON, docs/design.md §26); None when the adapter gave none.
    usage_raw: dict[str, Any] | None = None


@dataclass(frozen=True)
class LedgerEntry:
    """One change of an account's balance; `balance_after` is the balance once this entry applied."""

    billing_account_id: str
    amount: int
    balance_after: int
    reason: str
    reference: str
    created_at: datetime


RUN_STATUSES: tuple[str, ...] = tuple(s.value for s in RunStatus)


@dataclass(frozen=True)
class RunRecord:
    """One run attempt as the runtime recorded it: written when it starts and again when it ends.

    A run whose process died is ``abandoned`` once its lease ran out (docs/runtime.md "Reconnect, resume and
    retry"); its usage, if any, is in the receipts all the same. ``charged_credits`` and ``receipt_count``
    are read from the receipts of ``(run_id, attempt)`` (never kept twice). ``events``: how many UI events
    its log holds (the position of the last one)."""

    run_id: str
    attempt: int
    graph_id: str
    billing_account_id: str
    virtual_key_id: str
    model: str
    status: str  # one of RUN_STATUSES
    started_at: datetime
    ended_at: datetime | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str | None = None
    error: str | None = None  # the run's Error code when it did not end ok
    charged_credits: int = 0
    receipt_count: int = 0
    events: int = 0
    # Who and what the run was for (docs/containment.md "Context that travels"): ``user_id``,
    # ``session_id``, ``tags`` (a list or a dict) and ``attributes``, as the request gave them; None when
    # it gave none. Its receipts share it through their (run_id, attempt).
    context: Mapping[str, Any] | None = None


def encode_run_context(context: Mapping[str, Any] | None) -> str | None:
    """A run's context as strict JSON text (``ValueError`` / ``TypeError`` for anything else)."""
    if context is None:
        return None
    if not isinstance(context, Mapping):
        raise InvalidArgumentType(
            f"context must be a mapping or None, got {type(context).__name__}", argument="context"
        )
    return json.dumps(dict(context), ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def decode_run_context(text: object) -> dict[str, Any] | None:
    """What ``encode_run_context`` wrote; anything unreadable (a hand-edited row) reads as None."""
    if not isinstance(text, str):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None

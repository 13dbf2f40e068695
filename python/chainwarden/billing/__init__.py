"""Exactly-once billing of usage facts into a credits ledger (SQLite or PostgreSQL)."""

from chainwarden.billing.errors import BillingUnsettled, LedgerUnavailable
from chainwarden.billing.facts import (
    UsageFact,
    compute_idempotency_key,
    missing_usage_unit_id,
    with_usage_unit_id,
)
from chainwarden.billing.ledger import Ledger
from chainwarden.billing.metrics import METRICS, BillingMetrics
from chainwarden.billing.postgres_store import PostgresLedger
from chainwarden.billing.pricing import (
    CREDITS_PER_USD,
    DEFAULT_MARKUP,
    Pricing,
    cents_to_credits,
    usd_to_credits,
)
from chainwarden.billing.records import ChargeReceipt, LedgerEntry, RunRecord
from chainwarden.billing.sqlite_store import SqliteLedger

__all__ = [
    "CREDITS_PER_USD",
    "DEFAULT_MARKUP",
    "METRICS",
    "BillingMetrics",
    "BillingUnsettled",
    "ChargeReceipt",
    "Ledger",
    "LedgerEntry",
    "LedgerUnavailable",
    "PostgresLedger",
    "Pricing",
    "RunRecord",
    "SqliteLedger",
    "UsageFact",
    "cents_to_credits",
    "compute_idempotency_key",
    "missing_usage_unit_id",
    "usd_to_credits",
    "with_usage_unit_id",
]

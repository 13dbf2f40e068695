"""A child process for the all-or-nothing test: commits batches of facts into one ledger until it is killed.

Usage: python batch_writer.py <sqlite|postgres> <path-or-dsn> <batch-size>
Batch k holds the facts `batch-k/0` … `batch-k/<size-1>`; it prints `committed k` after each commit.
"""

from __future__ import annotations

import sys
from decimal import Decimal

from chainwarden.billing import Ledger, PostgresLedger, Pricing, SqliteLedger, UsageFact


def batch(k: int, size: int) -> list[UsageFact]:
    return [
        UsageFact(
            run_id=f"batch-{k}",
            attempt=0,
            source="litellm",
            billing_account_id=f"acct-{i % 3}",
            virtual_key_id="vk",
            usage_unit_id=str(i),
            cost_usd=Decimal("0.000001"),
        )
        for i in range(size)
    ]


def main() -> None:
    kind, target, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
    ledger: Ledger = SqliteLedger(target) if kind == "sqlite" else PostgresLedger(target)
    k = 0
    while True:
        ledger.commit_usage_facts(batch(k, size), pricing=Pricing(markup=1.0))
        print(f"committed {k}", flush=True)
        k += 1


if __name__ == "__main__":
    main()

"""Writer process for the concurrent-ledger benchmark (not a benchmark itself).

Usage: python bench_billing_writer.py {sqlite|postgres} TARGET SEED COUNT
Prints "ready" once connected, waits for a line on stdin, commits COUNT shared facts, prints "committed N".
"""

from __future__ import annotations

import contextlib
import random
import sys
from decimal import Decimal

from chainwarden.billing import Ledger, PostgresLedger, Pricing, SqliteLedger, UsageFact

PRICING = Pricing(markup=2.0)


def make_facts(count: int, run_id: str = "bench-run") -> list[UsageFact]:
    return [
        UsageFact(
            run_id=run_id,
            attempt=0,
            source="litellm",
            billing_account_id="acct-bench",
            virtual_key_id="vk-1",
            usage_unit_id=f"call-{i}",
            model="gpt-x",
            input_tokens=100 + i,
            output_tokens=20,
            cost_usd=Decimal(i % 97 + 1) * Decimal("0.0000013"),
        )
        for i in range(count)
    ]


def open_ledger(kind: str, target: str) -> Ledger:
    return SqliteLedger(target) if kind == "sqlite" else PostgresLedger(target)


def open_funded(kind: str, target: str) -> Ledger:
    """A ledger whose bench account holds credit, as a billing service's accounts do: an account below zero
    logs a warning per charge (docs/billing.md), and the benchmarks time commits, not logging."""
    ledger = open_ledger(kind, target)
    with contextlib.suppress(ValueError):  # funded already (several writers open one target)
        ledger.create_account("acct-bench", 10**15)
    return ledger


def main() -> None:
    kind, target, seed, count = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    facts = make_facts(count)
    random.Random(seed).shuffle(facts)
    with open_ledger(kind, target) as ledger:
        print("ready", flush=True)
        sys.stdin.readline()
        committed = sum(ledger.commit_usage_fact(f, call_index=0, pricing=PRICING) is not None for f in facts)
    print(f"committed {committed}", flush=True)


if __name__ == "__main__":
    main()

"""One writer process of the concurrency test: commits the shared facts in its own order when told to go.

Usage: python concurrent_writer.py {sqlite|postgres} TARGET SEED COUNT
Prints "ready" once connected, waits for a line on stdin, then prints "committed N".
"""

from __future__ import annotations

import random
import sys
from decimal import Decimal

from chainwarden.billing import Ledger, PostgresLedger, Pricing, SqliteLedger, UsageFact

PRICING = Pricing(markup=2.0)


def make_facts(count: int) -> list[UsageFact]:
    return [
        UsageFact(
            run_id=f"run-{i % 7}",
            attempt=0,
            source="litellm",
            billing_account_id="acct-shared",
            virtual_key_id="vk-1",
            usage_unit_id=f"call-{i}",
            model="gpt-x",
            input_tokens=i,
            output_tokens=i % 13,
            # Prices with long fractions, so a float path or a lost update would show in the balance.
            cost_usd=Decimal(i % 97 + 1) * Decimal("0.0000013"),
        )
        for i in range(count)
    ]


def expected_balance(count: int) -> int:
    return -sum(PRICING.credits_for(f.cost_usd or 0) for f in make_facts(count))


def main() -> None:
    kind, target, seed, count = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    facts = make_facts(count)
    random.Random(seed).shuffle(facts)
    ledger: Ledger = SqliteLedger(target) if kind == "sqlite" else PostgresLedger(target)
    with ledger:
        print("ready", flush=True)
        sys.stdin.readline()
        committed = sum(ledger.commit_usage_fact(f, call_index=0, pricing=PRICING) is not None for f in facts)
    print(f"committed {committed}", flush=True)


if __name__ == "__main__":
    main()

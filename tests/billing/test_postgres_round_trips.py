"""A per-fact commit on PostgreSQL costs at most four round trips (BEGIN, receipt, debit + entry, COMMIT),
and a batch the same few statements whatever its size, counted on the real server from libpq's protocol
trace of the ledger's own connection (tests/pg_trace.py)."""

from __future__ import annotations

import tempfile
from decimal import Decimal
from pathlib import Path

from pg_trace import round_trips, statements, traced
from postgres_server import postgres_dsn
from psycopg.pq import Trace
from stores import PostgresSchema

from chainwarden.billing import PostgresLedger, Pricing, UsageFact

PRICING = Pricing(markup=2.0)


def fact(unit: str) -> UsageFact:
    return UsageFact(
        run_id="run-rt",
        attempt=0,
        source="litellm",
        billing_account_id="acct-rt",
        virtual_key_id="vk",
        usage_unit_id=unit,
        cost_usd=Decimal("0.0001"),
    )


def test_a_fact_commits_in_at_most_four_round_trips() -> None:
    with PostgresSchema(postgres_dsn()) as store, PostgresLedger(store.target, pool_size=1) as ledger:
        # Past psycopg's prepare threshold (5 executions), so the steady state is what is counted.
        for i in range(8):
            assert ledger.commit_usage_fact(fact(f"warm-{i}"), call_index=0, pricing=PRICING) is not None
        pool = ledger._pool  # one connection (pool_size=1): the one every commit below uses
        conn = pool.getconn()
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "trace"
            with path.open("w") as out:
                conn.pgconn.trace(out.fileno())
                conn.pgconn.set_trace_flags(Trace.SUPPRESS_TIMESTAMPS)
                pool.putconn(conn)
                counts = []
                for i in range(5):
                    before = path.stat().st_size
                    assert ledger.commit_usage_fact(fact(f"u{i}"), call_index=0, pricing=PRICING) is not None
                    out.flush()
                    counts.append(round_trips(path.read_text()[before:]))
                conn.pgconn.untrace()
        print("round trips per commit:", counts)
        assert counts and max(counts) <= 4, counts
        assert min(counts) >= 3  # the trace really saw the commits
        # A duplicate also stays within four.
        assert ledger.commit_usage_fact(fact("u0"), call_index=0, pricing=PRICING) is None


def test_a_batch_is_a_few_statements_whatever_its_size() -> None:
    with PostgresSchema(postgres_dsn()) as store, PostgresLedger(store.target, pool_size=1) as ledger:
        ledger.commit_usage_facts([fact(f"warm-{i}") for i in range(3)], pricing=PRICING)
        pool = ledger._pool
        conn = pool.getconn()
        pool.putconn(conn)
        with traced(conn) as measure:
            small = measure(
                lambda: ledger.commit_usage_facts([fact(f"s{i}") for i in range(10)], pricing=PRICING)
            )
            large = measure(
                lambda: ledger.commit_usage_facts([fact(f"l{i}") for i in range(400)], pricing=PRICING)
            )
            again = measure(
                lambda: ledger.commit_usage_facts([fact(f"l{i}") for i in range(400)], pricing=PRICING)
            )
    # BEGIN, the key locks, the receipts, the account's debit, its entries, COMMIT.
    assert statements(small) == statements(large) == 6, (statements(small), statements(large))
    assert round_trips(large) == 6
    # All duplicates: the stored receipts are read back instead of a debit and entries.
    assert statements(again) <= 6

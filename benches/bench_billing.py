"""Committed usage facts per second, SQLite vs PostgreSQL, one writer and 4 concurrent writer processes;
and the cost of the runtime's write-ahead (docs/billing.md, "The outbox").

Run: .venv/bin/pytest benches/bench_billing.py --benchmark-only -p no:randomly
(PostgreSQL: uses CHAINWARDEN_TEST_POSTGRES_DSN, else starts a throwaway server with scripts/postgres-up.sh.)
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from bench_billing_writer import PRICING, make_facts, open_funded, open_ledger
from psycopg.conninfo import make_conninfo

from chainwarden.billing.delivery import BillingDelivery
from chainwarden.billing.facts import Billable
from chainwarden.billing.outbox import Outbox

ROOT = Path(__file__).resolve().parents[1]
WRITER = Path(__file__).with_name("bench_billing_writer.py")
FACTS_PER_ROUND = 300
CONCURRENT_FACTS = 1_000
PROCESSES = 4


@pytest.fixture(scope="module")
def postgres_dsn() -> Iterator[str]:
    """A server of its own that syncs its commits (fsync on), as a production server does: SQLite is measured
    with synchronous=FULL, so both stores' per-fact commits pay for durability (benches/README.md)."""
    datadir = subprocess.run(
        [str(ROOT / "scripts" / "postgres-up.sh")],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "CHAINWARDEN_PG_FSYNC": "on"},
    ).stdout.strip()
    try:
        yield f"host={datadir} port=5432 user=postgres dbname=postgres"
    finally:
        subprocess.run([str(ROOT / "scripts" / "postgres-down.sh"), datadir], check=True)


class Targets:
    """Fresh, empty ledger locations, one per benchmark round."""

    def __init__(self, tmp: Path, dsn: str) -> None:
        self.tmp, self.dsn = tmp, dsn

    def new(self, kind: str) -> str:
        if kind == "sqlite":
            return str(self.tmp / f"{uuid.uuid4().hex}.sqlite3")
        schema = f"b_{uuid.uuid4().hex[:16]}"
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {schema}")
        return make_conninfo(self.dsn, options=f"-c search_path={schema}")


@pytest.fixture
def targets(tmp_path: Path, postgres_dsn: str) -> Targets:
    return Targets(tmp_path, postgres_dsn)


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_single_writer_commits(benchmark: Any, targets: Targets, kind: str) -> None:
    facts = make_facts(FACTS_PER_ROUND)
    opened: list[Any] = []

    def setup() -> tuple[tuple[Any, ...], dict[str, Any]]:
        ledger = open_funded(kind, targets.new(kind))
        opened.append(ledger)
        return (ledger,), {}

    def commit_all(ledger: Any) -> int:
        return sum(ledger.commit_usage_fact(f, call_index=0, pricing=PRICING) is not None for f in facts)

    committed = benchmark.pedantic(commit_all, setup=setup, rounds=5, iterations=1)
    for ledger in opened:
        ledger.close()
    assert committed == FACTS_PER_ROUND
    benchmark.extra_info["facts_per_round"] = FACTS_PER_ROUND
    benchmark.extra_info["facts_per_second"] = round(FACTS_PER_ROUND / benchmark.stats.stats.mean)


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_four_writer_processes_commit(benchmark: Any, targets: Targets, kind: str) -> None:
    writers: list[subprocess.Popen[str]] = []

    def setup() -> tuple[tuple[Any, ...], dict[str, Any]]:
        target = targets.new(kind)
        open_funded(kind, target).close()  # schema and account first: the timed part is the commits
        writers.clear()
        for seed in range(PROCESSES):
            w = subprocess.Popen(
                [sys.executable, str(WRITER), kind, target, str(seed), str(CONCURRENT_FACTS)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            assert w.stdout is not None and w.stdout.readline().strip() == "ready"
            writers.append(w)
        return (), {}

    def race() -> int:
        for w in writers:
            assert w.stdin is not None
            w.stdin.write("go\n")
            w.stdin.flush()
        return sum(int(w.communicate()[0].split()[-1]) for w in writers)

    committed = benchmark.pedantic(race, setup=setup, rounds=3, iterations=1)
    assert committed == CONCURRENT_FACTS
    benchmark.extra_info["receipts_per_second"] = round(CONCURRENT_FACTS / benchmark.stats.stats.mean)
    benchmark.extra_info["attempts_per_second"] = round(
        PROCESSES * CONCURRENT_FACTS / benchmark.stats.stats.mean
    )


@pytest.mark.parametrize("batch", [0, 1, 10], ids=["no-write-ahead", "write-ahead-1", "write-ahead-10"])
@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_delivery_commits(benchmark: Any, targets: Targets, kind: str, batch: int) -> None:
    """What the runtime's billing path does per fact: write ahead to the outbox (`batch` facts per outbox
    transaction, as the relay hands them over; 0: in-memory outbox, no write-ahead), commit, remove the
    row."""
    facts = make_facts(FACTS_PER_ROUND)
    opened: list[Any] = []

    def setup() -> tuple[tuple[Any, ...], dict[str, Any]]:
        ledger = open_funded(kind, targets.new(kind))
        outbox = Outbox(":memory:" if batch == 0 else targets.tmp / f"{uuid.uuid4().hex}.outbox.sqlite3")
        delivery = BillingDelivery(ledger, outbox)
        opened.append((ledger, outbox, delivery))
        return (delivery,), {}

    def deliver_all(delivery: BillingDelivery) -> int:
        step = max(batch, 1)
        committed = 0
        for start in range(0, len(facts), step):
            chunk = [(f, start + i) for i, f in enumerate(facts[start : start + step])]
            journaled = delivery.write_ahead(chunk, pricing=PRICING, ingress_request_id=None)
            outcomes = delivery.commit(journaled, pricing=PRICING, ingress_request_id=None)
            committed += sum(o.receipt is not None for o in outcomes)
        return committed

    committed = benchmark.pedantic(deliver_all, setup=setup, rounds=10, iterations=1)
    for ledger, outbox, delivery in opened:
        assert outbox.pending(ledger.identity) == []
        delivery.close()
        outbox.close()
        ledger.close()
    assert committed == FACTS_PER_ROUND
    benchmark.extra_info["facts_per_second"] = round(FACTS_PER_ROUND / benchmark.stats.stats.mean)


@pytest.mark.parametrize("batch", [1, 10])
def test_write_ahead_alone(benchmark: Any, tmp_path: Path, batch: int) -> None:
    """The outbox's share of the delivery above, without a ledger: write ahead, then remove, `batch` facts
    per transaction."""
    facts = make_facts(FACTS_PER_ROUND)
    outbox = Outbox(tmp_path / "alone.outbox.sqlite3")

    def write_and_remove() -> int:
        for start in range(0, len(facts), batch):
            chunk = [Billable.resolve(f, start + i) for i, f in enumerate(facts[start : start + batch])]
            outbox.settle(outbox.write_ahead("bench", chunk, pricing=PRICING, ingress_request_id=None))
        return len(outbox.pending("bench"))

    assert benchmark.pedantic(write_and_remove, rounds=10, iterations=1) == 0
    outbox.close()
    benchmark.extra_info["facts_per_second"] = round(FACTS_PER_ROUND / benchmark.stats.stats.mean)


# -- the batch API and the per-fact floor (benches/README.md "Batch commits and round trips") ---------------

BATCH_FACTS = 1_000


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_batch_commits(benchmark: Any, targets: Targets, kind: str) -> None:
    """`commit_usage_facts` of 1,000 new facts: one transaction (compare per fact with
    `test_single_writer_commits`)."""
    facts = make_facts(BATCH_FACTS)
    opened: list[Any] = []

    def setup() -> tuple[tuple[Any, ...], dict[str, Any]]:
        ledger = open_funded(kind, targets.new(kind))
        opened.append(ledger)
        return (ledger,), {}

    def commit_batch(ledger: Any) -> int:
        return len(ledger.commit_usage_facts(facts, pricing=PRICING))

    committed = benchmark.pedantic(commit_batch, setup=setup, rounds=5, iterations=1)
    for ledger in opened:
        assert len(ledger.receipts()) == BATCH_FACTS
        ledger.close()
    assert committed == BATCH_FACTS
    benchmark.extra_info["facts_per_second"] = round(BATCH_FACTS / benchmark.stats.stats.mean)


def _raw_sqlite_commits(path: str, facts: list[Any]) -> int:
    """The per-fact floor: plain sqlite3 running the statements one SqliteLedger commit runs (BEGIN
    IMMEDIATE, the receipt insert, the upsert-debit, the entry insert, COMMIT) on the same schema and
    settings (WAL, synchronous=FULL), with the values precomputed."""
    from datetime import UTC, datetime  # noqa: PLC0415

    from chainwarden.billing.ledger import _INSERT_RECEIPT, _UPSERT_DEBIT, _insert_entries  # noqa: PLC0415

    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA synchronous=FULL")
    insert, upsert, entry = (
        s.replace("%s", "?") for s in (_INSERT_RECEIPT, _UPSERT_DEBIT, _insert_entries(1))
    )
    now = datetime.now(UTC).isoformat()
    rows = [
        (
            f.source,
            f"{f.run_id}/0/{f.usage_unit_id}",
            f.run_id,
            0,
            f.usage_unit_id,
            f.billing_account_id,
            f.virtual_key_id,
            None,
            None,
            f.model,
            f.input_tokens,
            f.output_tokens,
            None,
            None,
            26,
            "0.0000026",
            None,
            "c",
            now,
        )
        for f in facts
    ]
    committed = 0
    for row in rows:
        cur = conn.cursor()
        cur.execute("BEGIN IMMEDIATE")
        cur.execute(insert, row)
        cur.execute(upsert, (row[5], -26, now, 26, 26 - 2**63 + 1))
        balance = cur.fetchone()[0]
        cur.execute(entry, (row[5], -26, balance, "charge_receipt", row[1], now))
        cur.execute("COMMIT")
        committed += 1
    conn.close()
    return committed


@pytest.mark.parametrize("impl", ["ledger", "raw-sqlite3"])
def test_sqlite_per_fact_floor(benchmark: Any, tmp_path: Path, impl: str) -> None:
    """Per-fact SQLite commits against raw sqlite3 doing the same statements: the ledger's overhead."""
    facts = make_facts(FACTS_PER_ROUND)
    paths: list[str] = []

    def setup() -> tuple[tuple[Any, ...], dict[str, Any]]:
        path = str(tmp_path / f"{uuid.uuid4().hex}.sqlite3")
        open_funded("sqlite", path).close()  # the schema (and WAL mode) and the account, untimed for both
        paths.append(path)
        return (path,), {}

    def ledger_commits(path: str) -> int:
        with open_ledger("sqlite", path) as ledger:
            return sum(ledger.commit_usage_fact(f, call_index=0, pricing=PRICING) is not None for f in facts)

    run = ledger_commits if impl == "ledger" else lambda path: _raw_sqlite_commits(path, facts)
    assert benchmark.pedantic(run, setup=setup, rounds=10, iterations=1) == FACTS_PER_ROUND
    benchmark.extra_info["facts_per_second"] = round(FACTS_PER_ROUND / benchmark.stats.stats.mean)

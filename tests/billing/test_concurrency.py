"""4 real processes commit the same 1,000 facts at once into one store: exactly-once must hold."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from concurrent_writer import expected_balance
from stores import Store

WRITER = Path(__file__).with_name("concurrent_writer.py")
PROCESSES = 4
FACTS = 1_000


@pytest.mark.slow
def test_concurrent_processes_commit_each_fact_once(store: Store) -> None:
    # Create the schema first so the race is on the receipts, not on CREATE TABLE (tested separately below).
    store.open().close()
    writers = [
        subprocess.Popen(
            [sys.executable, str(WRITER), store.kind, store.target, str(seed), str(FACTS)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for seed in range(PROCESSES)
    ]
    try:
        for w in writers:
            assert w.stdout is not None
            assert w.stdout.readline().strip() == "ready"
        # Everyone is connected: release them together.
        for w in writers:
            assert w.stdin is not None
            w.stdin.write("go\n")
            w.stdin.flush()
        outputs = [w.communicate()[0] for w in writers]
    finally:
        for w in writers:
            if w.poll() is None:
                w.kill()
                w.wait()
    assert [w.returncode for w in writers] == [0] * PROCESSES
    committed = [int(out.split()[-1]) for out in outputs]
    # Every fact was committed by exactly one of the writers; the others saw duplicates.
    assert sum(committed) == FACTS
    with store.open() as ledger:
        receipts = ledger.receipts()
        assert len(receipts) == FACTS
        assert len({r.source_reference for r in receipts}) == FACTS
        assert ledger.balance("acct-shared") == expected_balance(FACTS)
        entries = ledger.ledger_entries("acct-shared")
        assert len(entries) == FACTS
        assert entries[-1].balance_after == expected_balance(FACTS)
        assert sum(e.amount for e in entries) == expected_balance(FACTS)


@pytest.mark.slow
def test_concurrent_first_use_creates_the_schema_once(store: Store) -> None:
    writers = [
        subprocess.Popen(
            [sys.executable, str(WRITER), store.kind, store.target, str(seed), "20"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for seed in range(PROCESSES)
    ]
    outputs = [w.communicate("go\n")[0] for w in writers]
    assert [w.returncode for w in writers] == [0] * PROCESSES
    assert sum(int(out.split()[-1]) for out in outputs) == 20
    with store.open() as ledger:
        assert len(ledger.receipts()) == 20
        assert ledger.balance("acct-shared") == expected_balance(20)

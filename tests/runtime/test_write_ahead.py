"""Write-ahead billing: a usage fact is in the durable outbox before its commit, so a SIGKILL at any point
after the write-ahead — commit not even tried, commit being retried, commit landed but row not removed —
loses nothing and bills nothing twice once a new process drains the outbox (docs/billing.md)."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from decimal import Decimal
from pathlib import Path

from outbox_child import Engine
from outbox_child import request as child_request
from runtime_helpers import ScriptedExecutor, request, usage_fact
from sqlite_locks import write_locked

from chainwarden.billing import Pricing, SqliteLedger
from chainwarden.billing.facts import Billable
from chainwarden.billing.outbox import Outbox, process_owner
from chainwarden.runtime import AiRuntime, Done, UsageReport

CHILD = Path(__file__).with_name("outbox_child.py")
PRICING = Pricing(markup=2.0)
WAIT_S = 20.0


def cost(i: int) -> Decimal:
    return Decimal(i % 89 + 1) * Decimal("0.0000013")


def expected_balance(count: int) -> int:
    return -sum(PRICING.credits_for(cost(i)) for i in range(count))


def count_rows(path: Path, query: str) -> int:
    if not path.exists():
        return 0
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
    try:
        return int(conn.execute(query).fetchone()[0])
    except sqlite3.OperationalError:
        return 0  # the table is not created yet
    finally:
        conn.close()


def wait_until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.02)


@contextmanager
def reporting_child(
    ledger: Path | str, outbox: Path, run_id: str, count: int, *, before: Callable[[], None] = lambda: None
) -> Iterator[subprocess.Popen[str]]:
    """A process whose run reported `count` facts into a runtime whose first commit waits (or retries):
    `before()` runs once its ledger is open and before the run starts (e.g. stops the server)."""
    child = subprocess.Popen(
        [sys.executable, str(CHILD), "ahead", str(ledger), str(outbox), run_id, str(count)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdin is not None
        assert child.stdout.readline().split() == ["ready"]
        before()
        child.stdin.write("go\n")
        child.stdin.flush()
        assert child.stdout.readline().split() == ["reported", str(count)]
        yield child
    finally:
        if child.poll() is None:
            child.kill()
        child.wait(timeout=30)
        for pipe in (child.stdin, child.stdout):
            if pipe is not None:
                pipe.close()


def sigkill(child: subprocess.Popen[str]) -> None:
    os.kill(child.pid, signal.SIGKILL)
    assert child.wait(timeout=30) == -signal.SIGKILL


def drain_in_a_new_process(ledger: Path | str, outbox: Path) -> None:
    drainer = subprocess.run(
        [sys.executable, str(CHILD), "drain", str(ledger), str(outbox)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (drainer.returncode, drainer.stdout.strip()) == (0, "drained"), drainer.stderr


def assert_billed_once(ledger_path: Path, run_id: str, count: int) -> None:
    with SqliteLedger(ledger_path) as ledger:
        receipts = ledger.receipts(run_id=run_id)
        assert sorted(r.source_reference for r in receipts) == sorted(
            f"{run_id}/0/u{i}" for i in range(count)
        )
        assert {r.usage_raw["i"] for r in receipts if r.usage_raw} == set(range(count))
        assert ledger.balance("acct-crash") == expected_balance(count)
        assert len(ledger.ledger_entries("acct-crash")) == count


def fresh_ledger(tmp_path: Path) -> Path:
    path = tmp_path / "ledger.sqlite3"
    with SqliteLedger(path) as ledger:
        ledger.create_account("acct-crash", balance_credits=0)
    return path


def replay_bills_nothing(ledger_path: Path, outbox: Path, run_id: str, count: int) -> None:
    async def replay() -> None:
        with (
            SqliteLedger(ledger_path) as ledger,
            AiRuntime({"engine": Engine(count)}, ledger, PRICING, outbox=outbox) as runtime,
        ):
            async with runtime.run(child_request(run_id)) as run:
                await run.billing_settled(timeout=30)
                assert (await run.final).ok
            assert run.receipts == []
            assert runtime.outbox.pending(ledger.identity) == []

    asyncio.run(replay())


def test_sigkill_before_any_commit_loses_nothing(tmp_path: Path) -> None:
    ledger_path, outbox = fresh_ledger(tmp_path), tmp_path / "outbox.sqlite3"
    count = 40
    with write_locked(ledger_path), reporting_child(ledger_path, outbox, "run-wal", count) as child:
        # Nothing committed, nothing failed: the first commit is still waiting for the lock, the other
        # facts wait behind it. Only the write-ahead can have put them in the outbox.
        wait_until(lambda: count_rows(outbox, "SELECT count(*) FROM usage_outbox") == count, "write-ahead")
        assert count_rows(ledger_path, "SELECT count(*) FROM charge_receipts") == 0
        sigkill(child)
    drain_in_a_new_process(ledger_path, outbox)
    assert_billed_once(ledger_path, "run-wal", count)
    replay_bills_nothing(ledger_path, outbox, "run-wal", count)
    assert_billed_once(ledger_path, "run-wal", count)


def test_sigkill_after_commits_landed_but_before_their_rows_left_bills_once(tmp_path: Path) -> None:
    ledger_path, outbox = fresh_ledger(tmp_path), tmp_path / "outbox.sqlite3"
    count = 30
    with (
        write_locked(ledger_path) as ledger_lock,
        reporting_child(ledger_path, outbox, "run-landed", count) as child,
    ):
        wait_until(lambda: count_rows(outbox, "SELECT count(*) FROM usage_outbox") == count, "write-ahead")
        # Lock the outbox, then free the ledger: commits land, removing their rows has to wait.
        with write_locked(outbox):
            ledger_lock.execute("ROLLBACK")
            wait_until(
                lambda: count_rows(ledger_path, "SELECT count(*) FROM charge_receipts") > 0, "a commit"
            )
            sigkill(child)
        landed = count_rows(ledger_path, "SELECT count(*) FROM charge_receipts")
    assert count_rows(outbox, "SELECT count(*) FROM usage_outbox") == count
    assert 0 < landed <= count
    drain_in_a_new_process(ledger_path, outbox)
    assert_billed_once(ledger_path, "run-landed", count)
    replay_bills_nothing(ledger_path, outbox, "run-landed", count)


def test_rows_being_committed_by_a_live_process_are_left_to_it(tmp_path: Path) -> None:
    outbox = Outbox(tmp_path / "o.sqlite3")
    facts = [Billable.resolve(usage_fact("run-c", f"u{i}"), i) for i in range(3)]
    seqs = outbox.write_ahead("ledger-a", facts, pricing=PRICING, ingress_request_id=None)
    assert len(set(seqs)) == 3
    assert outbox.due("ledger-a") == []  # this process is committing them
    assert not outbox.has_work("ledger-a")
    alive = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        raw = sqlite3.connect(outbox.path, isolation_level=None)
        raw.execute("UPDATE usage_outbox SET owner = ? WHERE seq = ?", (f"{alive.pid}:other", seqs[0]))
        # Our pid with another token: an earlier process that had our pid, so gone.
        raw.execute("UPDATE usage_outbox SET owner = ? WHERE seq = ?", (f"{os.getpid()}:earlier", seqs[1]))
        raw.close()
        assert [e.seq for e in outbox.due("ledger-a")] == [seqs[1]]
        # A claim expires: then anyone may commit the row (a second commit is a no-op).
        assert [e.seq for e in outbox.due("ledger-a", now=time.time() + 3600)] == seqs
    finally:
        alive.kill()
        alive.wait(timeout=30)
        assert alive.stdin is not None
        alive.stdin.close()
    assert [e.seq for e in outbox.due("ledger-a")] == seqs[:2]
    # A failed commit releases the rows to every drainer; a settled one leaves.
    outbox.park([seqs[2]], "LedgerUnavailable: away")
    outbox.settle([seqs[0], seqs[0]])
    assert [e.seq for e in outbox.due("ledger-a")] == seqs[1:]
    assert [e.last_error for e in outbox.due("ledger-a")] == [None, "LedgerUnavailable: away"]
    assert process_owner().startswith(f"{os.getpid()}:")
    outbox.close()


async def test_the_write_ahead_precedes_the_commit_and_a_commit_removes_it(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    facts = [UsageReport(usage_fact("run-w", f"u{i}")) for i in range(5)]
    with SqliteLedger(path, busy_timeout_s=10) as ledger:
        ledger.create_account("acct-1")

        async def script(req: object):  # type: ignore[no-untyped-def]
            for event in facts:
                yield event
            yield Done()

        with AiRuntime({"ext": ScriptedExecutor(script)}, ledger, PRICING) as rt:
            with write_locked(path) as holder:
                async with rt.run(request(graph_id="ext:x", run_id="run-w")) as run:
                    for _ in range(int(WAIT_S / 0.02)):
                        if len(rt.outbox.pending(ledger.identity, run_id="run-w")) == 5:
                            break
                        await asyncio.sleep(0.02)
                    # Written ahead while the first commit still waits: nothing failed, nothing is parked.
                    assert rt.outbox.pending(ledger.identity, run_id="run-w") == [
                        f"run-w/0/u{i}" for i in range(5)
                    ]
                    assert run.billing_failures == []
                    holder.execute("ROLLBACK")
                    await run.billing_settled(timeout=30)
                    assert (await run.final).ok
            assert len(run.receipts) == 5
            assert rt.outbox.pending(ledger.identity) == []
        assert ledger.balance("acct-1") == -5 * PRICING.credits_for(Decimal("0.00001"))


async def test_an_in_memory_ledger_keeps_its_outbox_in_memory() -> None:
    facts = [UsageReport(usage_fact("run-m", f"u{i}")) for i in range(3)]

    async def script(req: object):  # type: ignore[no-untyped-def]
        for event in facts:
            yield event
        yield Done()

    with SqliteLedger(":memory:") as ledger, AiRuntime({"ext": ScriptedExecutor(script)}, ledger) as rt:
        async with rt.run(request(graph_id="ext:x", run_id="run-m")) as run:
            await run.billing_settled(timeout=30)
        assert rt.outbox.path == ":memory:"
        assert not rt.outbox.exists()  # nothing was written ahead, nothing parked
        assert len(run.receipts) == 3

"""A real PostgreSQL server restarted, then stopped, while a run's usage facts flow through AiRuntime; and a
process SIGKILLed while the server is stopped.

Each test uses its own throwaway server (scripts/postgres-up.sh), so restarting it disturbs no other test.
Afterwards every fact must be billed exactly once: receipts == facts, balance exact.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import replace
from decimal import Decimal
from pathlib import Path

import psycopg
import pytest
from postgres_server import postgres_dsn

from chainwarden.billing import (
    BillingUnsettled,
    LedgerUnavailable,
    PostgresLedger,
    Pricing,
    UsageFact,
)
from chainwarden.runtime import (
    AiEvent,
    AiRuntime,
    Done,
    GraphFinal,
    GraphRunRequest,
    GraphRunResult,
    Usage,
    UsageReport,
)
from chainwarden.runtime.once import Once

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"
OUTBOX_CHILD = Path(__file__).resolve().parents[1] / "runtime" / "outbox_child.py"
PRICING = Pricing(markup=2.0)


class Server:
    """A dedicated PostgreSQL server that the test may stop, start and restart."""

    def __init__(self, datadir: str, dbname: str = "postgres") -> None:
        self.datadir = datadir
        self.dsn = f"host={datadir} port=5432 user=postgres dbname={dbname}"

    def ctl(self, action: str, *, check: bool = True) -> None:
        subprocess.run(
            [str(SCRIPTS / "postgres-ctl.sh"), self.datadir, action],
            check=check,
            timeout=60,
            capture_output=not check,
        )


@pytest.fixture(scope="module")
def dedicated_server() -> Iterator[Server]:
    postgres_dsn()  # skips when the developer opted out of PostgreSQL, fails when it is missing
    datadir = subprocess.run(
        [str(SCRIPTS / "postgres-up.sh")], check=True, capture_output=True, text=True, timeout=120
    ).stdout.strip()
    try:
        yield Server(datadir)
    finally:
        subprocess.run([str(SCRIPTS / "postgres-down.sh"), datadir], check=True, timeout=60)


@pytest.fixture
def server(dedicated_server: Server) -> Iterator[Server]:
    """The module's server, in a fresh database per test, running again after the test whatever it did."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(dedicated_server.dsn, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    try:
        yield Server(dedicated_server.datadir, dbname=name)
    finally:
        dedicated_server.ctl("start", check=False)


def cost(i: int) -> Decimal:
    # Long fractions: a lost or doubled charge shows in the balance.
    return Decimal(i % 89 + 1) * Decimal("0.0000013")


class FlowingEngine:
    """Reports `count` usage facts, calling `midway()` (in a thread) after `at` of them."""

    def __init__(self, count: int, at: int, midway: Callable[[], None]) -> None:
        self.count, self.at, self.midway = count, at, midway

    def run_graph(self, req: GraphRunRequest) -> GraphRunResult:
        assert req.run_id is not None
        run_id = req.run_id
        final: Once[GraphFinal] = Once()

        async def stream() -> AsyncIterator[AiEvent]:
            for i in range(self.count):
                if i == self.at:
                    await asyncio.to_thread(self.midway)
                yield UsageReport(
                    UsageFact(
                        run_id=run_id,
                        attempt=0,
                        source="external",
                        billing_account_id=req.billing_account_id,
                        virtual_key_id=req.virtual_key_id,
                        usage_unit_id=f"u{i}",
                        input_tokens=i,
                        output_tokens=1,
                        cost_usd=cost(i),
                    )
                )
                await asyncio.sleep(0)
            final.set(GraphFinal(ok=True, run_id=run_id, request_id=run_id, usage=Usage()))
            yield Done()

        return GraphRunResult(stream=stream(), final=final)


def request(run_id: str) -> GraphRunRequest:
    return GraphRunRequest(
        graph_id="engine:flow",
        messages=[],
        model="m",
        billing_account_id="acct-pg",
        virtual_key_id="vk-1",
        run_id=run_id,
    )


def expected_balance(count: int) -> int:
    return -sum(PRICING.credits_for(cost(i)) for i in range(count))


def assert_billed_once(ledger: PostgresLedger, run_id: str, count: int) -> None:
    receipts = ledger.receipts(run_id=run_id)
    assert sorted(r.source_reference for r in receipts) == sorted(f"{run_id}/0/u{i}" for i in range(count))
    assert ledger.balance("acct-pg") == expected_balance(count)
    entries = ledger.ledger_entries("acct-pg")
    assert len(entries) == count
    assert sum(e.amount for e in entries) == expected_balance(count)


@pytest.mark.slow
async def test_a_restart_in_the_middle_of_a_run_bills_every_fact_once(
    server: Server, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    count = 400
    with PostgresLedger(server.dsn, retry_timeout_s=30.0) as ledger:
        ledger.create_account("acct-pg")
        engine = FlowingEngine(count, at=150, midway=lambda: server.ctl("restart"))
        with (
            caplog.at_level(logging.WARNING, logger="chainwarden.billing"),
            AiRuntime({"engine": engine}, ledger, PRICING, outbox=tmp_path / "outbox.sqlite3") as rt,
        ):
            async with rt.run(request("run-restart")) as run:
                await run.billing_settled(timeout=60)
                final = await run.final
        assert final.ok, final
        # The restart really broke connections under the ledger, and the retries absorbed it.
        assert "connection failure" in caplog.text
        assert_billed_once(ledger, "run-restart", count)


@pytest.mark.slow
async def test_a_server_away_longer_than_the_retries_parks_facts_until_it_returns(
    server: Server, tmp_path: Path
) -> None:
    count = 60
    outbox = tmp_path / "outbox.sqlite3"
    with PostgresLedger(server.dsn, retry_timeout_s=0.5, connect_timeout_s=2) as ledger:
        ledger.create_account("acct-pg")
        engine = FlowingEngine(count, at=20, midway=lambda: server.ctl("stop"))
        with AiRuntime({"engine": engine}, ledger, PRICING, outbox=outbox) as rt:
            async with rt.run(request("run-away")) as run:
                with pytest.raises(BillingUnsettled) as unsettled:
                    await run.billing_settled(timeout=0.2)
                final = await run.final
            # Fail closed while the server is away: the run is not ok and says where its usage is.
            assert (final.ok, final.error) == (False, "internal")
            # The server stopped after 20 facts were reported; those the sink had committed by then have
            # receipts, all the others wait in the outbox.
            assert unsettled.value.count >= count - 20
            assert unsettled.value.count + len(run.receipts) == count
            assert unsettled.value.outbox == str(outbox)
            assert isinstance(unsettled.value.__cause__, LedgerUnavailable)
            server.ctl("start")
            # The drainer commits the parked facts once the server is back, each exactly once.
            await run.billing_settled(timeout=30)
        assert_billed_once(ledger, "run-away", count)
        # Replaying the whole run bills nothing more.
        with AiRuntime({"engine": FlowingEngine(count, at=-1, midway=lambda: None)}, ledger, PRICING) as rt:
            async with rt.run(request("run-away")) as replay:
                await replay.billing_settled(timeout=30)
            assert replay.receipts == []
        assert_billed_once(ledger, "run-away", count)


def test_the_ledger_reconnects_after_a_restart_and_fails_typed_while_away(server: Server) -> None:
    fact = UsageFact(
        run_id="r",
        attempt=0,
        source="s",
        billing_account_id="acct-pg",
        virtual_key_id="v",
        usage_unit_id="u1",
        cost_usd=Decimal("0.001"),
    )
    with PostgresLedger(server.dsn, retry_timeout_s=10, connect_timeout_s=1) as ledger:
        assert ledger.commit_usage_fact(fact, call_index=0, pricing=PRICING) is not None
        server.ctl("restart")
        # Every pooled connection is dead now; the call retries on fresh ones.
        second = ledger.commit_usage_fact(replace(fact, usage_unit_id="u2"), call_index=0, pricing=PRICING)
        assert second is not None
        assert ledger.commit_usage_fact(fact, call_index=0, pricing=PRICING) is None
        ledger._retry_timeout_s = 0.3  # the server stays away longer than this
        server.ctl("stop")
        with pytest.raises(LedgerUnavailable, match=r"PostgreSQL ledger .* unavailable") as away:
            ledger.balance("acct-pg")
        assert away.value.attempts >= 1
        server.ctl("start")
        ledger._retry_timeout_s = 10.0
        assert ledger.balance("acct-pg") == -2 * PRICING.credits_for(Decimal("0.001"))


def _outbox_rows(path: Path) -> int:
    if not path.exists():
        return 0
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
    try:
        return int(conn.execute("SELECT count(*) FROM usage_outbox").fetchone()[0])
    except sqlite3.OperationalError:
        return 0  # not created yet
    finally:
        conn.close()


@pytest.mark.slow
def test_sigkill_while_the_server_is_stopped_loses_no_reported_fact(server: Server, tmp_path: Path) -> None:
    """Facts reported while the server is down and the first commit is still being retried (nothing has
    failed yet) survive a SIGKILL: they were written ahead to the outbox, and a new process commits them."""
    count, run_id = 30, "run-pg-kill"
    outbox = tmp_path / "outbox.sqlite3"
    with PostgresLedger(server.dsn) as ledger:
        ledger.create_account("acct-crash")
    child = subprocess.Popen(
        [sys.executable, str(OUTBOX_CHILD), "ahead", server.dsn, str(outbox), run_id, str(count)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdin is not None and child.stdout is not None
        assert child.stdout.readline().split() == ["ready"]
        server.ctl("stop")
        child.stdin.write("go\n")
        child.stdin.flush()
        assert child.stdout.readline().split() == ["reported", str(count)]
        deadline = time.monotonic() + 20
        while _outbox_rows(outbox) < count:
            assert time.monotonic() < deadline, "the facts were not written ahead"
            time.sleep(0.02)
        os.kill(child.pid, signal.SIGKILL)
        assert child.wait(timeout=30) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
        child.wait(timeout=30)
        for pipe in (child.stdin, child.stdout):
            if pipe is not None:
                pipe.close()
    server.ctl("start")
    drainer = subprocess.run(
        [sys.executable, str(OUTBOX_CHILD), "drain", server.dsn, str(outbox)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (drainer.returncode, drainer.stdout.strip()) == (0, "drained"), drainer.stderr
    with PostgresLedger(server.dsn) as ledger:
        receipts = ledger.receipts(run_id=run_id)
        assert sorted(r.source_reference for r in receipts) == sorted(
            f"{run_id}/0/u{i}" for i in range(count)
        )
        assert ledger.balance("acct-crash") == expected_balance(count)
        assert len(ledger.ledger_entries("acct-crash")) == count
        # Replaying the run bills nothing more.
        replay = GraphRunRequest(
            graph_id="engine:flow",
            messages=[],
            model="m",
            billing_account_id="acct-crash",
            virtual_key_id="vk-1",
            run_id=run_id,
        )

        async def run_replay() -> list[object]:
            engine = FlowingEngine(count, at=-1, midway=lambda: None)
            with AiRuntime({"engine": engine}, ledger, PRICING, outbox=outbox) as rt:
                async with rt.run(replay) as run:
                    await run.billing_settled(timeout=30)
                return list(run.receipts)

        assert asyncio.run(run_replay()) == []
        assert ledger.balance("acct-crash") == expected_balance(count)

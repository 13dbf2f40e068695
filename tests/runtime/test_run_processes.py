"""Runs, DAG nodes and credits across real processes and servers: 50 agent nodes served by 2 worker
processes on PostgreSQL with one SIGKILL, every answered LLM call billed exactly once under its attempt and
the reconciliation clean; a client in another process attaching mid-run and after the end; 4 concurrent runs
in 2 processes holding credits against one account."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from runtime_helpers import request
from stores import Store as LedgerStore

from chainwarden.billing import PostgresLedger
from chainwarden.cli.app import cli
from chainwarden.dag import Store
from chainwarden.runtime import AiRuntime, InProcGraphExecutor, RunContext, TextDelta

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent
sys.path.insert(0, str(TESTS / "dag" / "store"))
from store_urls import postgres_url  # noqa: E402

sys.path.insert(0, str(TESTS))
from integrations.fake_provider import FakeProvider  # noqa: E402

ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), str(TESTS), os.environ.get("PYTHONPATH", "")])}


def child(script: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(HERE / script), *args], stdout=subprocess.PIPE, text=True, env=ENV
    )


def wait_for(check: Any, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


@pytest.mark.slow
def test_fifty_agent_nodes_two_worker_processes_one_sigkill_every_call_billed_once(tmp_path: Path) -> None:
    url = postgres_url(f"fifty_{uuid.uuid4().hex[:10]}")
    with Store.open(url) as store:
        g = store.create_graph("fifty")
        with g.mutate() as m:
            for i in range(50):
                m.create_node("user_message", "finished", content=f"question {i}", node_id=f"u{i:02d}")
                m.create_node("agent_message", node_id=f"a{i:02d}")
                m.create_edge(f"u{i:02d}", f"a{i:02d}", "sequence")
    with FakeProvider() as fake:
        fake.unique_ids = True
        fake.delay_s = 0.2  # 50 nodes keep both workers busy for a few seconds
        seen_a = [0]

        def hold(req: Any) -> bool:
            # Worker A's requests after its 2nd are never answered: A is killed while they are in flight.
            if req.headers.get("x-worker") != "A":
                return False
            seen_a[0] += 1
            return seen_a[0] > 2

        fake.hold = hold
        workers = {name: child("dag_worker_child.py", url, fake.anthropic_base_url, name) for name in "AB"}
        try:
            wait_for(lambda: len(fake.held) >= 4, 60, "worker A to have all its slots in held calls")
            time.sleep(0.5)  # what A was answered before is written ahead and journaled by now
            workers["A"].send_signal(signal.SIGKILL)
            workers["A"].wait(10)
            out, _ = workers["B"].communicate(timeout=90)
            assert workers["B"].returncode == 0, out
        finally:
            for proc in workers.values():
                if proc.poll() is None:
                    proc.kill()
                    proc.wait(10)
                if proc.stdout is not None:
                    proc.stdout.close()
        answered = list(fake.answered)
        held = list(fake.held)
    assert len(held) == 4 and len(answered) == 50  # every node answered once, A's held four by B
    # Whatever A wrote ahead and did not commit, a runtime on the same outbox commits (a restart drains it).
    with PostgresLedger(url) as ledger, AiRuntime({}, ledger, run_lease_s=1.0) as runtime:
        wait_for(lambda: len(ledger.receipts()) >= len(answered), 30, "the outbox to be drained")
        receipts = ledger.receipts()
        assert sorted(r.source_reference.rsplit("/", 1)[1] for r in receipts) == sorted(answered)
        with Store.open(url) as store:
            nodes = {
                n["node_id"]: n for n in store.load("fifty").nodes() if n["node_type"] == "agent_message"
            }
        assert {n["state"] for n in nodes.values()} == {"finished"}
        # Each call billed under the attempt of the node's execution that made it.
        by_run = {r.run_id: r for r in receipts}
        assert len(by_run) == 50
        for node_id, node in nodes.items():
            receipt = by_run[f"dag.fifty.{node_id}"]
            assert receipt.attempt == node["output"]["attempt"] == node["metadata"].get("attempt", 0)
        retried = sorted(n for n, node in nodes.items() if node["output"]["attempt"] == 1)
        assert len(retried) == 4
        # A's four attempt-0 runs were abandoned; their held calls were never answered, nor billed.
        wait_for(lambda: len(runtime.runs(status="abandoned")) == 4, 15, "the dead worker's runs to be swept")
        assert sorted(r.run_id for r in runtime.runs(status="abandoned")) == [
            f"dag.fifty.{n}" for n in retried
        ]
    result = CliRunner().invoke(
        cli, ["inspect", "--reconcile", "fifty", "--ledger", url, "--store", url, "--json"]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["clean"] and len(report["receipts"]) == 50 and report["nodes_billed"] == 50


def postgres_or_sqlite_target(store: LedgerStore) -> tuple[str, str]:
    return store.kind, store.target


@pytest.mark.slow
async def test_a_client_in_another_process_attaches_mid_run_and_after_the_end(store: LedgerStore) -> None:
    gate = asyncio.Event()

    async def agent(ctx: RunContext) -> str:
        for i in range(6):
            if i == 3:
                await gate.wait()
            ctx.emit(TextDelta(f"w{i}"))
        return "done"

    with store.open() as ledger:
        runtime = AiRuntime({"inproc": InProcGraphExecutor(agent)}, ledger)
        async with runtime.run(request(run_id="run-x", attempt=1)) as run:
            wait = time.monotonic() + 20
            while time.monotonic() < wait:
                records = ledger.runs(run_id="run-x")
                if records and records[0].events >= 3:
                    break
                await asyncio.sleep(0.02)
            reader = child("attach_child.py", store.kind, store.target, "run-x", "1")
            assert reader.stdout is not None
            first = await asyncio.to_thread(reader.stdout.readline)
            assert json.loads(first) == {"seq": 2, "type": "text_delta", "body": {"text": "w1"}, "attempt": 1}
            gate.set()  # the run goes on while the other process follows it live
            rest = await asyncio.wait_for(asyncio.to_thread(reader.stdout.read), 30)
            reader.stdout.close()
            assert reader.wait(10) == 0
            await run.final
        lines = [json.loads(line) for line in rest.splitlines()]
        assert [(e["seq"], e["type"]) for e in lines] == [(i, "text_delta") for i in range(3, 7)] + [
            (7, "assistant_final"),
            (8, "done"),
        ]
        # After the end: the whole log replayed from the database, ending with its Done.
        late = child("attach_child.py", store.kind, store.target, "run-x", "0")
        out, _ = late.communicate(timeout=30)
        events = [json.loads(line) for line in out.splitlines()]
        assert [e["seq"] for e in events] == list(range(1, 9)) and events[-1]["type"] == "done"
        assert {e["attempt"] for e in events} == {1}
        runtime.close()


@pytest.mark.slow
@pytest.mark.parametrize(("actual", "bound"), [("0.0007", 0), ("0.0012", 4 * 2_000)], ids=["under", "over"])
def test_four_runs_in_two_processes_never_overspend_beyond_the_calls_in_flight(
    store: LedgerStore, actual: str, bound: int
) -> None:
    """Each call holds $0.0010 (10,000 credits). `under`: it costs less than it holds, so the account can
    never go below 0. `over`: it costs 2,000 credits more than it holds: the overshoot is bounded by what the
    calls in flight at once (at most one per run) cost beyond their estimates."""
    with store.open() as ledger:
        ledger.create_account("shared", balance_credits=1_000_000)
    procs = [
        child("credit_child.py", store.kind, store.target, "0.001", actual, f"{p}-1", f"{p}-2")
        for p in ("p", "q")
    ]
    outputs = [proc.communicate(timeout=120)[0] for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0], outputs
    rows = [line.split() for out in outputs for line in out.splitlines() if not line.startswith("in_flight")]
    assert sorted(row[0] for row in rows) == ["p-1", "p-2", "q-1", "q-2"]
    assert {row[2] for row in rows} == {"insufficient_credits"}  # every run ran until the credits ran out
    calls = sum(int(row[1]) for row in rows)
    with store.open() as ledger:
        balance = ledger.balance("shared")
        receipts = ledger.receipts()
        held = int(ledger._read("SELECT COUNT(*) FROM credit_holds", ())[0][0])
    per_call = int(Decimal(actual) * 10_000_000)
    assert len(receipts) == calls and balance == 1_000_000 - calls * per_call
    assert balance >= -bound
    assert held == 0
    if bound == 0:
        assert balance < 4 * 10_000  # they stopped only when their next holds did not fit

"""AiRuntime writes one run record per (run_id, attempt), at start and at the end; it outlives the process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from runtime_helpers import llm, request

from chainwarden.billing import Pricing, SqliteLedger
from chainwarden.runtime import AiRuntime, Done, Error, InProcGraphExecutor, RunContext, TextDelta

HERE = Path(__file__).resolve().parent


async def agent(ctx: RunContext) -> str:
    await ctx.call_llm(llm("plan", "call-a", tokens=(10, 5)))
    await ctx.call_llm(llm("answer", "call-b", tokens=(7, 3)))
    return "done"


async def broken(ctx: RunContext) -> str:
    await ctx.call_llm(llm("plan", "call-a"))
    raise RuntimeError("graph bug")


async def test_a_finished_run_is_recorded_with_its_totals(ledger: SqliteLedger) -> None:
    runtime = AiRuntime({"inproc": InProcGraphExecutor(agent)}, ledger, Pricing(markup=2.0))
    async with runtime.run(request(run_id="run-ok", attempt=2)) as run:
        final = await run.final
        # The record is complete once the final has resolved.
        [record] = ledger.runs(run_id="run-ok")
        await run.billing_settled()
    assert final.ok
    assert (record.status, record.attempt, record.graph_id, record.model) == (
        "ok",
        2,
        "inproc:agent",
        "sim-1",
    )
    assert (record.prompt_tokens, record.completion_tokens) == (17, 8)
    assert record.finish_reason == "stop" and record.error is None
    assert record.ended_at is not None and record.ended_at >= record.started_at
    [record] = ledger.runs(run_id="run-ok")
    assert record.receipt_count == 2
    assert record.charged_credits == sum(r.charged_credits for r in ledger.receipts(run_id="run-ok"))


async def test_failed_and_unknown_runs_are_recorded_with_their_error(ledger: SqliteLedger) -> None:
    runtime = AiRuntime({"inproc": InProcGraphExecutor({"broken": broken})}, ledger)
    async with runtime.run(request("inproc:broken", run_id="run-bad")) as run:
        assert not (await run.final).ok
    async with runtime.run(request("nowhere:graph", run_id="run-lost")) as run:
        assert not (await run.final).ok
    records = {r.run_id: r for r in ledger.runs()}
    assert (records["run-bad"].status, records["run-bad"].error) == ("error", "internal")
    assert records["run-bad"].receipt_count == 1  # the usage before the failure stays billed
    assert (records["run-lost"].status, records["run-lost"].graph_id) == ("error", "nowhere:graph")


async def test_a_run_killed_mid_way_is_running_until_its_lease_runs_out_then_abandoned(
    tmp_path: Path,
) -> None:
    path = tmp_path / "ledger.sqlite3"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}
    with subprocess.Popen(
        [sys.executable, str(HERE / "run_record_child.py"), str(path), "run-killed", "1.0"],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    ) as child:
        try:
            assert child.stdout is not None
            assert child.stdout.readline().strip() == "running"
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait(timeout=10)
    with SqliteLedger(path) as ledger:
        [record] = ledger.runs(run_id="run-killed")
        assert (record.status, record.ended_at, record.receipt_count) == ("running", None, 1)
        runtime = AiRuntime({}, ledger, run_lease_s=1.0)
        # An attached client waits while the lease runs; then the run is swept and its log ended.
        events = [event async for event in runtime.attach("run-killed")]
        assert [(e.seq, e) for e in events] == [
            (1, TextDelta("thinking")),
            (2, Error("internal")),
            (3, Done()),
        ]
        [record] = ledger.runs(run_id="run-killed")
        assert (record.status, record.error, record.events, record.receipt_count) == (
            "abandoned",
            "internal",
            3,
            1,
        )
        assert record.ended_at is not None
        runtime.close()

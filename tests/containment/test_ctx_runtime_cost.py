"""docs/design.md §20 through the runtime: `RunLimits.max_cost_usd` counts what the ledger bills
(`LlmResult.cost_usd`), with the real in-process executor, a real ExecutionContext and a real
SQLite ledger file."""

from __future__ import annotations

import asyncio
from decimal import Decimal
from pathlib import Path

from chainwarden.billing import Pricing, SqliteLedger
from chainwarden.runtime import (
    AiRuntime,
    Done,
    Error,
    GraphRunRequest,
    InProcGraphExecutor,
    LlmResult,
    RunContext,
    RunLimits,
)


def _request(run_id: str) -> GraphRunRequest:
    return GraphRunRequest(
        graph_id="inproc:agent",
        messages=[{"role": "user", "content": "hi"}],
        model="sim-1",
        billing_account_id="acct-1",
        virtual_key_id="vk-1",
        run_id=run_id,
    )


async def test_a_half_dollar_ceiling_stops_a_dollar_per_call_provider_after_one_call(tmp_path: Path) -> None:
    provider_calls = 0

    async def dollar_call() -> LlmResult:
        nonlocal provider_calls
        provider_calls += 1
        await asyncio.sleep(0)
        return LlmResult(
            content="ok", model="sim-1", usage_unit_id=f"u{provider_calls}", cost_usd=Decimal("1.00")
        )

    async def agent(ctx: RunContext) -> str:
        for _ in range(20):
            await ctx.call_llm(dollar_call)  # estimate 0: only the real cost can stop this loop
        return "done"

    limits = RunLimits(max_cost_usd=0.5, max_steps=100, max_retries_total=10)
    with SqliteLedger(tmp_path / "ledger.sqlite3") as ledger:
        executor = InProcGraphExecutor(agent, limits=limits)
        rt = AiRuntime(executors={"inproc": executor}, ledger=ledger, pricing=Pricing(markup=1.0))
        try:
            async with rt.run(_request("run-dollar")) as run:
                events = [e async for e in run.ui_events()]
                final = await run.final
                await run.billing_settled()
        finally:
            executor.close()
        receipts = ledger.receipts(run_id="run-dollar")
    assert provider_calls == 1
    assert events == [Error("aborted"), Done()]
    assert final.ok is False
    assert [r.source_reference for r in receipts] == ["run-dollar/0/u1"]
    assert [r.charged_credits for r in receipts] == [10_000_000]  # $1.00, markup 1.0


async def test_calls_under_the_ceiling_are_charged_their_billed_cost(tmp_path: Path) -> None:
    async def cheap_call() -> LlmResult:
        return LlmResult(content="ok", model="sim-1", cost_usd=Decimal("0.125"))

    calls = 0

    async def agent(ctx: RunContext) -> str:
        nonlocal calls
        while True:
            # The estimate is higher than the real cost: the loop is admitted until real spend
            # plus the estimate no longer fits under $1.
            await ctx.call_llm(cheap_call, cost_estimate_hint=0.25)
            calls += 1

    limits = RunLimits(max_cost_usd=1.0, max_steps=100, max_retries_total=10)
    with SqliteLedger(tmp_path / "ledger.sqlite3") as ledger:
        executor = InProcGraphExecutor(agent, limits=limits)
        rt = AiRuntime(executors={"inproc": executor}, ledger=ledger)
        try:
            async with rt.run(_request("run-cheap")) as run:
                _ = [e async for e in run.ui_events()]
                final = await run.final
                await run.billing_settled()
        finally:
            executor.close()
        billed = len(ledger.receipts(run_id="run-cheap"))
    # 6 x 0.125 = 0.75 spent; 0.75 + 0.25 = 1.0 still fits; 0.875 + 0.25 does not.
    assert calls == 7
    assert billed == 7
    assert final.ok is False

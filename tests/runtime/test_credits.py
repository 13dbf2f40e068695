"""Credits as a budget: runs refused at or below the minimum balance before their executor starts, and each
call's estimate held against the balance in the ledger's database (every runtime sees every hold), the
actual charge replacing it, a dead process's holds expiring."""

from __future__ import annotations

import asyncio
import time
from decimal import Decimal

import pytest
from runtime_helpers import request
from stores import Store

from chainwarden.billing import Ledger, Pricing
from chainwarden.billing.holds import CreditHolds
from chainwarden.runtime import (
    AiRuntime,
    CreditPolicy,
    Done,
    Error,
    InProcGraphExecutor,
    LlmResult,
    RunContext,
)


def priced(cost: str, unit: str) -> LlmResult:
    return LlmResult(
        content="ok", usage_unit_id=unit, input_tokens=10, output_tokens=5, cost_usd=Decimal(cost)
    )


def holds_count(ledger: Ledger) -> int:
    return int(ledger._read("SELECT COUNT(*) FROM credit_holds", ())[0][0])


async def test_a_run_at_or_below_the_minimum_is_refused_before_its_executor_starts(store: Store) -> None:
    started: list[str] = []

    async def agent(ctx: RunContext) -> str:
        started.append(ctx.run_id)
        return "ran"

    with store.open() as ledger:
        ledger.create_account("empty", balance_credits=0)
        ledger.create_account("rich", balance_credits=1_000)
        ledger.create_account("owing", balance_credits=-50)
        runtime = AiRuntime(
            {"inproc": InProcGraphExecutor(agent)}, ledger, credit_policy=CreditPolicy(min_balance_credits=0)
        )
        outcomes = {}
        for account in ("empty", "owing", "unknown-account", "rich"):
            async with runtime.run(request(run_id=f"run-{account}", billing_account_id=account)) as run:
                events = [e async for e in run.ui_events()]
                outcomes[account] = (events, (await run.final).error)
        for account in ("empty", "owing", "unknown-account"):
            assert outcomes[account] == ([Error("insufficient_credits"), Done()], "insufficient_credits")
        assert outcomes["rich"][1] is None
        assert started == ["run-rich"]
        assert ledger.receipts() == []
        records = {r.run_id: r for r in ledger.runs()}
        assert (records["run-empty"].status, records["run-empty"].error) == ("error", "insufficient_credits")
        # An overdraft policy lets an account run down to its (negative) minimum.
        overdraft = AiRuntime(
            {"inproc": InProcGraphExecutor(agent)},
            ledger,
            credit_policy=CreditPolicy(min_balance_credits=-100),
        )
        async with overdraft.run(request(run_id="run-owing-2", billing_account_id="owing")) as run:
            assert (await run.final).ok
        runtime.close()
        overdraft.close()


async def test_each_call_holds_its_estimate_and_one_that_does_not_fit_is_refused(store: Store) -> None:
    calls = []

    async def agent(ctx: RunContext) -> str:
        for i in range(10):
            # Each call reserves $0.00005 (500 credits) and costs $0.00003 (300 credits).
            async def call(i: int = i) -> LlmResult:
                calls.append(i)
                return priced("0.00003", f"msg-{i}")

            await ctx.call_llm(call, cost_estimate_hint=0.00005)
        return "all ten"

    with store.open() as ledger:
        ledger.create_account("acct-1", balance_credits=1_000)
        runtime = AiRuntime(
            {"inproc": InProcGraphExecutor(agent)}, ledger, Pricing(markup=1.0), credit_policy=CreditPolicy()
        )
        async with runtime.run(request(run_id="run-h")) as run:
            events = [e async for e in run.ui_events()]
            final = await run.final
            await run.billing_settled()
        # 1,000 → 700 → 400; the third call's 500 would take it below 0: refused before it is sent.
        assert calls == [0, 1]
        assert events[-2:] == [Error("insufficient_credits"), Done()]
        assert (final.ok, final.error, final.stop_reason) == (
            False,
            "insufficient_credits",
            "insufficient_credits",
        )
        assert ledger.balance("acct-1") == 400
        assert holds_count(ledger) == 0
        runtime.close()


async def test_holds_are_seen_by_every_runtime_and_the_charge_replaces_them(store: Store) -> None:
    in_call = asyncio.Event()
    release = asyncio.Event()

    async def slow(ctx: RunContext) -> str:
        async def call() -> LlmResult:
            in_call.set()
            await release.wait()
            return priced("0.00004", f"slow-{ctx.run_id}")

        await ctx.call_llm(call, cost_estimate_hint=0.00006)
        return "slow done"

    async def quick(ctx: RunContext) -> str:
        async def call() -> LlmResult:
            return priced("0.00001", f"quick-{ctx.run_id}")

        await ctx.call_llm(call, cost_estimate_hint=0.00006)
        return "quick done"

    with store.open() as ledger, store.open() as elsewhere:
        ledger.create_account("acct-1", balance_credits=1_000)
        policy = CreditPolicy()
        a = AiRuntime(
            {"inproc": InProcGraphExecutor(slow)}, ledger, Pricing(markup=1.0), credit_policy=policy
        )
        b = AiRuntime(
            {"inproc": InProcGraphExecutor(quick)}, elsewhere, Pricing(markup=1.0), credit_policy=policy
        )
        async with a.run(request(run_id="run-a")) as run_a:
            await asyncio.wait_for(in_call.wait(), 10)
            holds = CreditHolds(elsewhere)
            assert holds.available("acct-1") == 400  # 600 held by run-a, in the other runtime
            async with b.run(request(run_id="run-b")) as run_b:  # 600 more does not fit
                final_b = await run_b.final
            assert final_b.error == "insufficient_credits"
            release.set()
            assert (await run_a.final).ok
            await run_a.billing_settled()
        # The charge (400) replaced the hold (600): nothing held, the balance is what was billed.
        assert holds.available("acct-1") == 600 == ledger.balance("acct-1")
        assert holds_count(ledger) == 0
        async with b.run(request(run_id="run-b2")) as run_b:
            assert (await run_b.final).ok
        a.close()
        b.close()


async def test_a_dead_process_holds_expire_with_its_lease(store: Store) -> None:
    with store.open() as ledger:
        ledger.create_account("acct-1", balance_credits=1_000)
        holds = CreditHolds(ledger)
        hold, before = holds.place("acct-1", "run-dead", 0, 900, owner="gone:1:x", ttl_s=0.3, min_balance=0)
        assert hold is not None and before == 1_000
        assert holds.available("acct-1") == 100
        refused, available = holds.place("acct-1", "run-2", 0, 200, owner="me", ttl_s=30, min_balance=0)
        assert (refused, available) == (None, 100)
        time.sleep(0.5)  # nobody renews the dead owner's hold
        assert holds.available("acct-1") == 1_000
        again, _ = holds.place("acct-1", "run-2", 0, 200, owner="me", ttl_s=30, min_balance=0)
        assert again is not None and holds_count(ledger) == 1


def test_a_credit_policy_is_checked() -> None:
    with pytest.raises(TypeError, match="min_balance_credits"):
        CreditPolicy(min_balance_credits=0.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="hold_estimates"):
        CreditPolicy(hold_estimates=1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="min_balance_credits"):
        CreditPolicy(min_balance_credits=2**63)

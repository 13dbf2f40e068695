"""A process of the concurrent-credits test (not a test itself).

Usage: python credit_child.py KIND TARGET ESTIMATE_USD ACTUAL_USD RUN_ID...
Runs the given runs at once against account `shared` under CreditPolicy(): each makes calls (each holding
ESTIMATE_USD, costing ACTUAL_USD, a few milliseconds long) until one is refused; prints each run's number of
calls, error and the most calls it saw in flight at once across the process.
"""

from __future__ import annotations

import asyncio
import sys
from decimal import Decimal

from chainwarden.billing import Ledger, PostgresLedger, Pricing, SqliteLedger
from chainwarden.runtime import (
    AiRuntime,
    CreditPolicy,
    GraphRunRequest,
    InProcGraphExecutor,
    LlmResult,
    RunContext,
)

IN_FLIGHT = [0, 0]


async def main(kind: str, target: str, estimate: float, actual: str, run_ids: list[str]) -> None:
    calls: dict[str, int] = {}

    async def agent(ctx: RunContext) -> str:
        for i in range(10_000):

            async def call(i: int = i) -> LlmResult:
                IN_FLIGHT[0] += 1
                IN_FLIGHT[1] = max(IN_FLIGHT)
                try:
                    await asyncio.sleep(0.005)
                finally:
                    IN_FLIGHT[0] -= 1
                calls[ctx.run_id] = calls.get(ctx.run_id, 0) + 1
                return LlmResult(content="x", usage_unit_id=f"{ctx.run_id}-{i}", cost_usd=Decimal(actual))

            await ctx.call_llm(call, cost_estimate_hint=estimate)
        return "never refused"

    ledger: Ledger = SqliteLedger(target) if kind == "sqlite" else PostgresLedger(target)
    executor = InProcGraphExecutor(agent)
    with (
        ledger,
        AiRuntime({"inproc": executor}, ledger, Pricing(markup=1.0), credit_policy=CreditPolicy()) as rt,
    ):
        runs = [
            rt.run_graph(
                GraphRunRequest(
                    graph_id="inproc:spend",
                    messages=[],
                    model="m",
                    billing_account_id="shared",
                    virtual_key_id="vk",
                    run_id=run_id,
                )
            )
            for run_id in run_ids
        ]
        finals = [await run.final for run in runs]
        for run in runs:
            await run.billing_settled()
    for run_id, final in zip(run_ids, finals, strict=True):
        print(run_id, calls.get(run_id, 0), final.error, flush=True)
    print("in_flight", IN_FLIGHT[1], flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4], sys.argv[5:]))

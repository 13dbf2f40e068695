"""A process of the run-record crash test (not a test itself).

Usage: python run_record_child.py LEDGER RUN_ID [RUN_LEASE_S]
Starts one run whose graph streams a text, then waits (bounded) after its first LLM call, prints "running"
once the call is billed and the text journaled, then waits until the parent kills it.
"""

from __future__ import annotations

import asyncio
import sys

from runtime_helpers import llm, request

from chainwarden.billing import SqliteLedger
from chainwarden.runtime import AiRuntime, InProcGraphExecutor, RunContext, TextDelta


async def main(path: str, run_id: str, lease_s: float) -> None:
    billed = asyncio.Event()

    async def agent(ctx: RunContext) -> str:
        ctx.emit(TextDelta("thinking"))
        await ctx.call_llm(llm("first", "call-1"))
        billed.set()
        await asyncio.sleep(60)  # the parent kills us long before
        return "never"

    with SqliteLedger(path) as ledger:
        runtime = AiRuntime({"inproc": InProcGraphExecutor(agent)}, ledger, run_lease_s=lease_s)
        run = runtime.run_graph(request(run_id=run_id))
        await asyncio.wait_for(billed.wait(), timeout=30)
        # The commit and the journal run beside the graph.
        while not ledger.receipts(run_id=run_id) or ledger.runs(run_id=run_id)[0].events < 1:
            await asyncio.sleep(0.01)
        print("running", flush=True)
        await asyncio.wait_for(run.final, timeout=60)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], float(sys.argv[3]) if len(sys.argv) > 3 else 30.0))

"""A process of the outbox crash test (not a test itself).

Usage:
  python outbox_child.py park LEDGER OUTBOX RUN_ID COUNT
      runs one run of COUNT usage facts against a ledger the parent keeps locked, so every fact is parked;
      prints "final <ok> <error>" and "unsettled <n>", then waits on stdin until it is killed.
  python outbox_child.py ahead LEDGER OUTBOX RUN_ID COUNT
      opens the ledger and a runtime, prints "ready" and waits for a line on stdin (the parent now locks the
      SQLite file or stops the PostgreSQL server); then reports COUNT usage facts (its first commit waits or
      retries for up to 30 s), prints "reported <n>" once the run's relay has accepted them all, and waits on
      stdin until it is killed: nothing is committed and nothing has failed yet, so only the write-ahead can
      keep the facts.
  python outbox_child.py drain LEDGER OUTBOX
      starts a runtime on the same outbox (which drains it at start-up) and prints "drained" once the
      outbox holds nothing for the ledger.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import AsyncIterator
from decimal import Decimal

from chainwarden.billing import BillingUnsettled, Ledger, PostgresLedger, Pricing, SqliteLedger, UsageFact
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

PRICING = Pricing(markup=2.0)


def cost(i: int) -> Decimal:
    return Decimal(i % 89 + 1) * Decimal("0.0000013")


class Engine:
    def __init__(self, count: int, *, announce: bool = False) -> None:
        self.count = count
        self.announce = announce

    def run_graph(self, req: GraphRunRequest) -> GraphRunResult:
        assert req.run_id is not None
        run_id = req.run_id
        final: Once[GraphFinal] = Once()

        async def stream() -> AsyncIterator[AiEvent]:
            for i in range(self.count):
                await asyncio.sleep(0)  # one fact at a time, like a real provider
                yield UsageReport(
                    UsageFact(
                        run_id=run_id,
                        attempt=0,
                        source="external",
                        billing_account_id="acct-crash",
                        virtual_key_id="vk-1",
                        usage_unit_id=f"u{i}",
                        cost_usd=cost(i),
                        usage_raw={"i": i},
                    )
                )
            # Resumed after the relay accepted the last fact.
            if self.announce:
                print(f"reported {self.count}", flush=True)
            final.set(GraphFinal(ok=True, run_id=run_id, request_id=run_id, usage=Usage()))
            yield Done()

        return GraphRunResult(stream=stream(), final=final)


def open_ledger(target: str, *, patience_s: float = 60.0) -> Ledger:
    """LEDGER is a SQLite file, or a PostgreSQL DSN ("host=... dbname=...")."""
    if "host=" in target:
        return PostgresLedger(target, retry_timeout_s=patience_s, connect_timeout_s=2)
    return SqliteLedger(target, busy_timeout_s=patience_s)


def request(run_id: str) -> GraphRunRequest:
    return GraphRunRequest(
        graph_id="engine:x",
        messages=[],
        model="m",
        billing_account_id="acct-crash",
        virtual_key_id="vk-1",
        run_id=run_id,
    )


async def park(ledger_path: str, outbox: str, run_id: str, count: int) -> None:
    ledger = SqliteLedger(ledger_path, busy_timeout_s=0.2)
    runtime = AiRuntime({"engine": Engine(count)}, ledger, PRICING, outbox=outbox)
    async with runtime.run(request(run_id)) as run:
        final = await run.final
        try:
            await run.billing_settled(timeout=0)
            unsettled = 0
        except BillingUnsettled as error:
            unsettled = error.count
    print(f"final {final.ok} {final.error}", flush=True)
    print(f"unsettled {unsettled}", flush=True)
    # The drainer keeps trying in the background; the parent kills us here.
    await asyncio.to_thread(sys.stdin.readline)


async def ahead(ledger_path: str, outbox: str, run_id: str, count: int) -> None:
    ledger = open_ledger(ledger_path, patience_s=30)
    runtime = AiRuntime({"engine": Engine(count, announce=True)}, ledger, PRICING, outbox=outbox)
    print("ready", flush=True)
    await asyncio.to_thread(sys.stdin.readline)
    runtime.run_graph(request(run_id))  # the engine prints "reported"; its first commit waits on the lock
    await asyncio.to_thread(sys.stdin.readline)


def drain(ledger_path: str, outbox: str) -> None:
    with open_ledger(ledger_path) as ledger, AiRuntime({}, ledger, PRICING, outbox=outbox) as runtime:
        deadline = time.monotonic() + 20
        while runtime.outbox.pending(ledger.identity):
            if time.monotonic() > deadline:
                print("still pending", flush=True)
                sys.exit(1)
            time.sleep(0.05)
    print("drained", flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "park":
        asyncio.run(park(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])))
    elif sys.argv[1] == "ahead":
        asyncio.run(ahead(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])))
    else:
        drain(sys.argv[2], sys.argv[3])

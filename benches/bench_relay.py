"""Relay throughput: UI events per second through one run's pump with 1 and 10 subscribers.

Run: .venv/bin/pytest benches/bench_relay.py --benchmark-only -p no:randomly
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from chainwarden.billing import SqliteLedger
from chainwarden.runtime import (
    AiEvent,
    AiRuntime,
    Done,
    GraphFinal,
    GraphRunRequest,
    GraphRunResult,
    TextDelta,
    Usage,
)
from chainwarden.runtime.once import Once

EVENTS = 10_000


class BurstExecutor:
    """Streams EVENTS text deltas, yielding to the loop after each one as a network-fed stream would.

    Without the yield the pump would drain the whole stream in one step and subscribers would only replay the
    log; with it they are live subscribers fed through their buffers.
    """

    def run_graph(self, req: GraphRunRequest) -> GraphRunResult:
        final: Once[GraphFinal] = Once()
        run_id = req.run_id or "bench"

        async def stream() -> AsyncIterator[AiEvent]:
            delta = TextDelta("tok")
            for _ in range(EVENTS):
                yield delta
                await asyncio.sleep(0)
            final.set(GraphFinal(ok=True, run_id=run_id, request_id=run_id, usage=Usage()))
            yield Done()

        return GraphRunResult(stream=stream(), final=final)


async def one_run(subscribers: int) -> int:
    with SqliteLedger() as ledger:
        rt = AiRuntime(executors={"burst": BurstExecutor()}, ledger=ledger)
        req = GraphRunRequest(
            graph_id="burst:x", messages=[], model="m", billing_account_id="a", virtual_key_id="k"
        )
        async with rt.run(req) as run:

            async def drain() -> int:
                return sum([1 async for _ in run.ui_events()])

            counts = await asyncio.gather(*(drain() for _ in range(subscribers)))
    return sum(counts)


@pytest.mark.parametrize("subscribers", [1, 10])
def test_relay_events_per_second(benchmark: Any, subscribers: int) -> None:
    delivered = benchmark.pedantic(lambda: asyncio.run(one_run(subscribers)), rounds=5, iterations=1)
    assert delivered == subscribers * (EVENTS + 1)
    benchmark.extra_info["events_per_second"] = round((EVENTS + 1) / benchmark.stats.stats.mean)
    benchmark.extra_info["deliveries_per_second"] = round(delivered / benchmark.stats.stats.mean)

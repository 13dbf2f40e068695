"""The cost of run-event persistence (docs/runtime.md "Reconnect, resume and retry"): one run's UI events
through AiRuntime with its journal in a SQLite or PostgreSQL ledger, side by side with the same runtime whose
journal is switched off (the relay's cost without persistence), in one session.

Each round streams EVENTS text deltas (the upstream yields to the loop after each, as a network-fed stream
does) to one live subscriber and waits for the run's final, which resolves only once every event is in the
database. `durable` (the default) commits every batch waiting for the disk (synchronous=FULL /
synchronous_commit=on); `relaxed` does not (docs/design.md §39).

Run: .venv/bin/pytest benches/bench_run_journal.py --benchmark-only -p no:randomly
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from bench_billing import Targets, postgres_dsn, targets  # noqa: F401 - fixtures

from chainwarden.billing import Ledger, PostgresLedger, SqliteLedger
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
from chainwarden.runtime.run_records import RunRecorder

EVENTS = 2_000


class Stream:
    def run_graph(self, req: GraphRunRequest) -> GraphRunResult:
        final: Once[GraphFinal] = Once()
        run_id = req.run_id or "bench"

        async def stream() -> AsyncIterator[AiEvent]:
            for _ in range(EVENTS):
                yield TextDelta("tok")
                await asyncio.sleep(0)
            final.set(GraphFinal(ok=True, run_id=run_id, request_id=run_id, usage=Usage()))
            yield Done()

        return GraphRunResult(stream=stream(), final=final)


async def _nothing(*_: Any) -> None:
    return None


async def one_run(ledger: Ledger, journal: str) -> int:
    with AiRuntime({"s": Stream()}, ledger) as rt:
        rt._durable_events = journal != "relaxed"
        req = GraphRunRequest(
            graph_id="s:x", messages=[], model="m", billing_account_id="a", virtual_key_id="k"
        )
        async with rt.run(req) as run:
            seen = sum([1 async for _ in run.ui_events()])
            await run.final
    return seen


@pytest.mark.parametrize(
    ("store", "journal"),
    [
        ("sqlite", "off"),
        ("sqlite", "relaxed"),
        ("sqlite", "durable"),
        ("postgres", "relaxed"),
        ("postgres", "durable"),
    ],
)
def test_run_events_through_the_runtime(
    benchmark: Any,
    targets: Targets,  # noqa: F811 - the fixture imported above
    monkeypatch: pytest.MonkeyPatch,
    store: str,
    journal: str,
) -> None:
    if journal == "off":
        # The same runtime with its journal switched off: what the relay costs without persistence.
        monkeypatch.setattr(RunRecorder, "started", _nothing)
        monkeypatch.setattr(RunRecorder, "ended", _nothing)
        monkeypatch.setattr(RunRecorder, "event", lambda self, event: None)

    def setup() -> tuple[tuple[Any, ...], dict[str, Any]]:
        target = targets.new(store)
        ledger: Ledger = SqliteLedger(target) if store == "sqlite" else PostgresLedger(target)
        return (ledger,), {}

    def run(ledger: Ledger) -> int:
        try:
            return asyncio.run(one_run(ledger, journal))
        finally:
            ledger.close()

    seen = benchmark.pedantic(run, setup=setup, rounds=7, iterations=1)
    assert seen == EVENTS + 1
    benchmark.extra_info["us_per_event"] = round(benchmark.stats.stats.median / (EVENTS + 1) * 1e6, 2)

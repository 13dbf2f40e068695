"""Whatever an upstream does, subscribers get one well-formed stream and billing gets every usage report."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from hypothesis import given, settings
from hypothesis import strategies as st
from runtime_helpers import ScriptedExecutor, request, usage_fact

from chainwarden.billing import SqliteLedger
from chainwarden.runtime import (
    AiEvent,
    AiRuntime,
    AssistantFinal,
    Done,
    Error,
    GraphRunRequest,
    TextDelta,
    UsageReport,
)

# Upstream steps: an event, a usage report (by unit id), an exception, or a yield to the loop.
step = st.one_of(
    st.builds(TextDelta, st.text(max_size=3)),
    st.builds(AssistantFinal, st.text(max_size=3)),
    st.builds(Error, st.sampled_from(["timeout", "internal", "rate_limit"])),
    st.just(Done()),
    st.integers(min_value=0, max_value=30).map(lambda i: ("usage", f"u{i}")),
    st.just(("raise", "")),
    st.just(("sleep", "")),
)


def expected_ui(steps: list[object]) -> list[AiEvent]:
    ui: list[AiEvent] = []
    for s in steps:
        if isinstance(s, tuple):
            if s[0] == "raise":
                return [*ui, Error("internal"), Done()]
            continue
        assert isinstance(s, TextDelta | AssistantFinal | Error | Done)
        if isinstance(s, Error):
            return [*ui, s, Done()]
        ui.append(s)
        if isinstance(s, Done):
            return ui
    return [*ui, Done()]


def billed_units(steps: list[object]) -> list[str]:
    units: list[str] = []
    for s in steps:
        if isinstance(s, tuple) and s[0] == "raise":
            break
        if isinstance(s, tuple) and s[0] == "usage" and s[1] not in units:
            units.append(s[1])
    return units


async def play(steps: list[object], subscribers: int, late: bool) -> None:
    async def script(req: GraphRunRequest) -> AsyncIterator[AiEvent]:
        for s in steps:
            if isinstance(s, tuple):
                kind, unit = s
                if kind == "raise":
                    raise RuntimeError("upstream failed")
                if kind == "sleep":
                    await asyncio.sleep(0)
                    continue
                yield UsageReport(usage_fact("run-p", unit))
            else:
                yield s  # type: ignore[misc]

    with SqliteLedger() as ledger:
        rt = AiRuntime(executors={"x": ScriptedExecutor(script)}, ledger=ledger, ui_buffer=1_000)
        async with rt.run(request(graph_id="x:g", run_id="run-p")) as run:
            readers = [asyncio.create_task(_collect(run.ui_events())) for _ in range(subscribers)]
            if late:
                await run.final
            readers.append(asyncio.create_task(_collect(run.ui_events())))
            seen = await asyncio.gather(*readers)
            final = await run.final
            await run.billing_settled()
        want = expected_ui(steps)
        assert all(s == want for s in seen)
        assert (
            final.ok == (want[-2:-1] == [] or not isinstance(want[-2], Error)) if len(want) > 1 else final.ok
        )
        assert [r.source_reference for r in ledger.receipts()] == [
            f"run-p/0/{u}" for u in billed_units(steps)
        ]


async def _collect(stream: AsyncIterator[AiEvent]) -> list[AiEvent]:
    return [e async for e in stream]


@settings(max_examples=100, deadline=None)
@given(steps=st.lists(step, max_size=25), subscribers=st.integers(0, 3), late=st.booleans())
def test_any_upstream_gives_one_done_and_full_billing(
    steps: list[object], subscribers: int, late: bool
) -> None:
    asyncio.run(play(steps, subscribers, late))

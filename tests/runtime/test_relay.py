"""The relay's guarantees: billing never drops, UI subscribers never slow or stop the run, one Done."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import pytest
from runtime_helpers import ScriptedExecutor, llm, request, usage_fact

from chainwarden.billing import METRICS, BillingUnsettled, SqliteLedger
from chainwarden.runtime import (
    AiEvent,
    AiRuntime,
    AssistantFinal,
    Containment,
    Done,
    Error,
    GraphRunRequest,
    InProcGraphExecutor,
    RunContext,
    TextDelta,
    UsageReport,
)


def scripted(*events: AiEvent | Exception) -> ScriptedExecutor:
    async def script(req: GraphRunRequest) -> AsyncIterator[AiEvent]:
        for event in events:
            if isinstance(event, Exception):
                raise event
            yield event

    return ScriptedExecutor(script)


def external_runtime(ledger: SqliteLedger, executor: ScriptedExecutor, **kw: object) -> AiRuntime:
    return AiRuntime(executors={"ext": executor}, ledger=ledger, **kw)  # type: ignore[arg-type]


async def test_subscriber_that_leaves_after_one_event_does_not_stop_billing(
    ledger: SqliteLedger, containment: Containment
) -> None:
    async def graph(ctx: RunContext) -> str:
        for i in range(20):
            ctx.emit(TextDelta(f"t{i}"))
            await ctx.call_llm(llm("x", f"u{i}"))
        return "done"

    rt = AiRuntime(executors={"inproc": InProcGraphExecutor(graph, containment=containment)}, ledger=ledger)
    async with rt.run(request(graph_id="inproc:agent", run_id="run-b")) as run:
        async for event in run.ui_events():
            assert event == TextDelta("t0")
            break
        final = await run.final
        await run.billing_settled()
    assert final.ok and final.content == "done"
    assert len(ledger.receipts(run_id="run-b")) == 20
    assert ledger.balance("acct-1") == -200 * 20


async def test_slow_subscriber_never_slows_the_pump(ledger: SqliteLedger) -> None:
    events: list[AiEvent] = [TextDelta(f"t{i}") for i in range(50)]
    events += [UsageReport(usage_fact("run-s", f"u{i}")) for i in range(10)]
    go = asyncio.Event()

    async def script(req: GraphRunRequest) -> AsyncIterator[AiEvent]:
        await go.wait()
        for event in events:
            yield event
        yield Done()

    rt = external_runtime(ledger, ScriptedExecutor(script), ui_buffer=8)
    run = rt.run_graph(request(graph_id="ext:slow", run_id="run-s"))
    gate = asyncio.Event()
    seen: list[AiEvent] = []

    async def slow_reader() -> None:
        async for event in run.ui_events():
            seen.append(event)
            # Stuck until the run is over: if the pump waited for this reader, the run would never end.
            await gate.wait()

    reader = asyncio.create_task(slow_reader())
    # Let the reader subscribe while the run has produced nothing, so it is a live subscriber.
    await asyncio.sleep(0)
    go.set()
    await run.final
    await run.billing_settled()
    assert len(seen) == 1
    assert len(ledger.receipts(run_id="run-s")) == 10
    gate.set()
    await reader
    # Overflow policy: the 8 buffered events, then rate_limit and Done; the run itself was fine.
    assert seen == [*(TextDelta(f"t{i}") for i in range(8)), Error("rate_limit"), Done()]
    assert (await run.final).ok
    # A client that was cut off can subscribe again and get the whole run from its log.
    assert [e async for e in run.ui_events()] == [*events[:50], Done()]


async def test_any_number_of_subscribers_see_the_same_run(ledger: SqliteLedger) -> None:
    events: list[AiEvent] = [
        TextDelta("a"),
        UsageReport(usage_fact("run-m", "u1")),
        TextDelta("b"),
        AssistantFinal("ab"),
    ]
    rt = external_runtime(ledger, scripted(*events, Done()))
    async with rt.run(request(graph_id="ext:x", run_id="run-m")) as run:
        early = [asyncio.create_task(_collect(run.ui_events())) for _ in range(10)]
        results = await asyncio.gather(*early)
        late = await _collect(run.ui_events())
    expected = [TextDelta("a"), TextDelta("b"), AssistantFinal("ab"), Done()]
    assert results == [expected] * 10
    assert late == expected
    assert (await run.final).content == "ab"
    assert len(ledger.receipts()) == 1


async def _collect(stream: AsyncIterator[AiEvent]) -> list[AiEvent]:
    return [e async for e in stream]


async def test_upstream_exception_mid_stream(ledger: SqliteLedger) -> None:
    executor = scripted(
        TextDelta("a"),
        UsageReport(usage_fact("run-e", "u1")),
        UsageReport(usage_fact("run-e", "u2")),
        RuntimeError("engine died"),
    )
    async with external_runtime(ledger, executor).run(request(graph_id="ext:x", run_id="run-e")) as run:
        events = await _collect(run.ui_events())
        final = await run.final
    assert events == [TextDelta("a"), Error("internal"), Done()]
    assert (final.ok, final.error) == (False, "internal")
    assert [r.source_reference for r in ledger.receipts()] == ["run-e/0/u1", "run-e/0/u2"]


async def test_stream_without_done_gets_one(ledger: SqliteLedger) -> None:
    async with external_runtime(ledger, scripted(TextDelta("a"))).run(request(graph_id="ext:x")) as run:
        assert await _collect(run.ui_events()) == [TextDelta("a"), Done()]
        assert (await run.final).ok


async def test_usage_after_the_terminal_event_is_still_billed(ledger: SqliteLedger) -> None:
    executor = scripted(
        TextDelta("a"),
        Error("timeout"),
        TextDelta("late text"),
        Done(),
        Done(),
        UsageReport(usage_fact("run-t", "late-usage")),
    )
    async with external_runtime(ledger, executor).run(request(graph_id="ext:x", run_id="run-t")) as run:
        events = await _collect(run.ui_events())
        final = await run.final
    assert events == [TextDelta("a"), Error("timeout"), Done()]
    assert (final.ok, final.error) == (False, "timeout")
    assert [r.source_reference for r in ledger.receipts()] == ["run-t/0/late-usage"]


async def test_missing_unit_ids_use_the_runs_call_index(ledger: SqliteLedger) -> None:
    facts = [
        UsageReport(usage_fact("run-f", None)),
        UsageReport(usage_fact("run-f", "given")),
        UsageReport(usage_fact("run-f", None)),
    ]
    rt = external_runtime(ledger, scripted(*facts, Done()))
    for _ in range(2):  # the replay lands on the same keys
        async with rt.run(request(graph_id="ext:x", run_id="run-f")) as run:
            await run.billing_settled()
    assert [r.source_reference for r in ledger.receipts()] == [
        "run-f/0/MISSING:run-f/0",
        "run-f/0/given",
        "run-f/0/MISSING:run-f/2",
    ]


def _reject_unit(path: Path, unit: str) -> None:
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute(
            "CREATE TRIGGER reject BEFORE INSERT ON charge_receipts "
            f"WHEN NEW.usage_unit_id = '{unit}' BEGIN SELECT RAISE(ABORT, 'rejected by test'); END"
        )
    conn.close()


@pytest.mark.parametrize("strict", [False, True])
async def test_a_ledger_failure_on_one_fact_spares_the_others(tmp_path: Path, strict: bool) -> None:
    path = tmp_path / "ledger.sqlite3"
    with SqliteLedger(path) as ledger:
        _reject_unit(path, "u2")
        facts = [UsageReport(usage_fact("run-l", f"u{i}")) for i in range(1, 4)]
        with external_runtime(
            ledger, scripted(facts[0], TextDelta("x"), *facts[1:], Done()), strict_billing=strict
        ) as rt:
            async with rt.run(request(graph_id="ext:x", run_id="run-l")) as run:
                events = await _collect(run.ui_events())
                if strict:
                    # Strict billing raises the failure it knows as soon as every fact was attempted, not
                    # after the timeout (60 s here, beyond the test's own 15 s limit).
                    with pytest.raises(sqlite3.IntegrityError, match="rejected by test"):
                        await run.billing_settled(timeout=60)
                else:
                    # The refused fact waits in the outbox: billing is not settled, and the run says so.
                    with pytest.raises(BillingUnsettled, match="1 usage fact") as unsettled:
                        await run.billing_settled(timeout=0.1)
                    assert unsettled.value.keys == ["run-l/0/u2"]
                    assert isinstance(unsettled.value.__cause__, sqlite3.IntegrityError)
                assert await run._sink.waiting() == ["run-l/0/u2"]
            assert events == [TextDelta("x"), Done()]
            final = await run.final
            assert (final.ok, final.error) == (False, "internal")
            assert [r.source_reference for r in ledger.receipts()] == ["run-l/0/u1", "run-l/0/u3"]
            assert len(run.billing_failures) == 1
            # Once the store takes it again, the drainer commits the parked fact, exactly once.
            with closing(sqlite3.connect(path)) as conn, conn:
                conn.execute("DROP TRIGGER reject")
            conn.close()
            if strict:
                with pytest.raises(sqlite3.IntegrityError, match="rejected by test"):
                    await run.billing_settled(timeout=30)
                for _ in range(200):  # the drainer goes on with the parked fact all the same
                    if not await run._sink.unsettled():
                        break
                    await asyncio.sleep(0.05)
            else:
                await run.billing_settled(timeout=30)
            assert await run._sink.unsettled() == []
        assert sorted(r.source_reference for r in ledger.receipts()) == [
            "run-l/0/u1",
            "run-l/0/u2",
            "run-l/0/u3",
        ]
        assert ledger.balance("acct-1") == -600


async def test_cancel_stops_upstream_and_keeps_reported_usage(
    ledger: SqliteLedger, containment: Containment
) -> None:
    started, stopped = asyncio.Event(), asyncio.Event()
    forever = asyncio.Event()

    async def graph(ctx: RunContext) -> str:
        await ctx.call_llm(llm("one", "u1"))
        ctx.emit(TextDelta("working"))
        started.set()
        try:
            # Only the cancel ends this wait; bounded so a missed cancel fails the test, not hangs it.
            await asyncio.wait_for(forever.wait(), 5)
        finally:
            stopped.set()
        return "unreachable"

    rt = AiRuntime(executors={"inproc": InProcGraphExecutor(graph, containment=containment)}, ledger=ledger)
    async with rt.run(request(graph_id="inproc:agent", run_id="run-c")) as run:
        stream = run.ui_events()
        assert await anext(stream) == TextDelta("working")
        run.cancel()
        rest = await _collect(stream)
        final = await run.final
    assert rest == [Error("aborted"), Done()]
    assert (final.ok, final.error) == (False, "aborted")
    assert stopped.is_set()
    assert [r.source_reference for r in ledger.receipts()] == ["run-c/0/u1"]


async def test_cancel_before_the_pump_ran(ledger: SqliteLedger) -> None:
    executor = scripted(UsageReport(usage_fact("run-0", "u1")), Done())
    async with external_runtime(ledger, executor).run(request(graph_id="ext:x", run_id="run-0")) as run:
        run.cancel()
        run.cancel()
        assert await _collect(run.ui_events()) == [Error("aborted"), Done()]
        assert (await run.final).error == "aborted"
    assert ledger.receipts() == []


async def test_cancel_after_the_end_changes_nothing(ledger: SqliteLedger) -> None:
    async with external_runtime(ledger, scripted(TextDelta("a"), Done())).run(
        request(graph_id="ext:x")
    ) as run:
        await run.final
        run.cancel()
        assert await _collect(run.ui_events()) == [TextDelta("a"), Done()]
        assert (await run.final).ok


async def test_detaching_with_aclose_does_not_cancel(ledger: SqliteLedger) -> None:
    release = asyncio.Event()

    async def script(req: GraphRunRequest) -> AsyncIterator[AiEvent]:
        yield TextDelta("a")
        await release.wait()
        yield UsageReport(usage_fact("run-d", "u1"))
        yield Done()

    executor = ScriptedExecutor(script)
    async with external_runtime(ledger, executor).run(request(graph_id="ext:x", run_id="run-d")) as run:
        stream = run.ui_events()
        assert await anext(stream) == TextDelta("a")
        await stream.aclose()  # type: ignore[attr-defined]
        release.set()
        assert (await run.final).ok
        await run.billing_settled()
    assert executor.closed == 1
    assert len(ledger.receipts()) == 1


async def test_cancel_after_done_keeps_the_outcome_and_stops_the_tail(ledger: SqliteLedger) -> None:
    release = asyncio.Event()

    async def script(req: GraphRunRequest) -> AsyncIterator[AiEvent]:
        yield UsageReport(usage_fact("run-tail", "u1"))
        yield Done()
        await release.wait()
        yield UsageReport(usage_fact("run-tail", "never"))

    executor = ScriptedExecutor(script)
    async with external_runtime(ledger, executor).run(request(graph_id="ext:x", run_id="run-tail")) as run:
        assert await _collect(run.ui_events()) == [Done()]
        run.cancel()
        final = await run.final
    assert (final.ok, final.error) == (True, None)
    assert executor.closed == 1
    assert [r.source_reference for r in ledger.receipts()] == ["run-tail/0/u1"]


async def test_usage_an_upstream_hands_on_after_the_cancel_is_billed_and_not_shown(
    ledger: SqliteLedger,
) -> None:
    """docs/runtime.md "Cancelling a run": the upstream gets the cancel inside its stream, and what it reports
    while stopping is billed; its other events are not shown, and the run ends aborted."""
    reading = asyncio.Event()

    async def script(req: GraphRunRequest) -> AsyncIterator[AiEvent]:
        yield UsageReport(usage_fact("run-late", "u1"))
        try:
            reading.set()
            await asyncio.sleep(5)  # bounded: a missed cancel fails the test below
        except asyncio.CancelledError:
            yield UsageReport(usage_fact("run-late", "u2"))
            yield TextDelta("nobody sees this")
            yield UsageReport(usage_fact("run-late", "u3"))

    executor = ScriptedExecutor(script)
    before = asyncio.all_tasks()
    async with external_runtime(ledger, executor).run(request(graph_id="ext:x", run_id="run-late")) as run:
        await reading.wait()
        run.cancel()
        shown = await _collect(run.ui_events())
        final = await run.final
        await run.billing_settled(timeout=10)
    assert shown == [Error("aborted"), Done()]
    assert (final.ok, final.error) == (False, "aborted")
    assert sorted(r.source_reference for r in ledger.receipts()) == [f"run-late/0/u{i}" for i in (1, 2, 3)]
    assert asyncio.all_tasks() == before


async def test_an_upstream_that_ignores_the_cancel_is_cancelled_again_and_let_go(
    ledger: SqliteLedger, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from chainwarden.runtime import relay  # noqa: PLC0415

    monkeypatch.setattr(relay, "CANCEL_GRACE_S", 0.3)
    reading = asyncio.Event()
    stopped = asyncio.Event()
    yielded: list[str] = []
    at_cancel: list[int] = []

    def report() -> UsageReport:
        unit = f"u{len(yielded) + 1}"
        yielded.append(f"run-deaf/0/{unit}")
        return UsageReport(usage_fact("run-deaf", unit))

    async def script(req: GraphRunRequest) -> AsyncIterator[AiEvent]:
        reading.set()
        try:
            while True:  # swallows the first cancel and goes on reporting, as a broken upstream would
                try:
                    await asyncio.sleep(0.02)
                except asyncio.CancelledError:
                    if stopped.is_set():
                        raise
                    stopped.set()
                    at_cancel.append(len(yielded))
                    # Late usage handed on at once, with no await in between: the pump reads all of it in
                    # the step that delivered the cancel, so before the grace can end. Paced by the sleep
                    # alone it could miss the grace entirely: a loop that a loaded machine holds back past
                    # the grace runs the grace's timer together with the sleep's, and the second cancel
                    # lands before the next report.
                    for _ in range(3):
                        yield report()
                yield report()
        finally:
            stopped.set()

    async with external_runtime(ledger, ScriptedExecutor(script)).run(
        request(graph_id="ext:x", run_id="run-deaf")
    ) as run:
        await reading.wait()
        await asyncio.sleep(0.05)
        run.cancel()
        shown = await asyncio.wait_for(_collect(run.ui_events()), timeout=10)
        await run.billing_settled(timeout=10)
    assert shown == [Error("aborted"), Done()]
    assert "cancelled again and no longer read" in caplog.text
    # Everything it reported was billed, what it reported after the first cancel included.
    assert sorted(r.source_reference for r in ledger.receipts()) == sorted(yielded)
    assert len(yielded) > at_cancel[0] + 2


async def test_cancel_during_an_llm_call_cancels_the_provider_call(
    ledger: SqliteLedger, containment: Containment
) -> None:
    in_call, provider_cancelled = asyncio.Event(), asyncio.Event()

    async def hanging_provider() -> object:
        in_call.set()
        try:
            await asyncio.sleep(5)  # "forever", bounded: a missed cancel fails below instead of hanging
        except asyncio.CancelledError:
            provider_cancelled.set()
            raise
        raise AssertionError("unreachable")

    async def graph(ctx: RunContext) -> str:
        await ctx.call_llm(llm("first", "u1"))
        await ctx.call_llm(hanging_provider)  # type: ignore[arg-type]
        return "unreachable"

    before = asyncio.all_tasks()
    rt = AiRuntime(executors={"inproc": InProcGraphExecutor(graph, containment=containment)}, ledger=ledger)
    async with rt.run(request(graph_id="inproc:agent", run_id="run-h")) as run:
        await in_call.wait()
        run.cancel()
        assert await _collect(run.ui_events()) == [Error("aborted"), Done()]
    await provider_cancelled.wait()
    assert (await run.final).error == "aborted"
    assert [r.source_reference for r in ledger.receipts()] == ["run-h/0/u1"]
    assert asyncio.all_tasks() == before


async def test_one_malformed_report_is_refused_alone(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """docs/design.md §30: a report without a UsageFact (an executor bug that slipped past UsageReport's own
    check) is refused alone; the valid facts reported beside it, in the same write-ahead batch, are billed,
    and the run says its billing did not settle."""

    @dataclass(frozen=True)
    class LooksLikeAFact:  # the fields a UsageFact has, none of its checks
        run_id: str = "run-m"
        attempt: int = 0
        usage_unit_id: str | None = None
        input_tokens: int = 5
        output_tokens: int = 5

    with pytest.raises(TypeError, match="fact must be a UsageFact"):
        UsageReport(LooksLikeAFact())  # type: ignore[arg-type]
    smuggled = object.__new__(UsageReport)
    object.__setattr__(smuggled, "fact", LooksLikeAFact())
    reports = [UsageReport(usage_fact("run-m", "u1")), smuggled, UsageReport(usage_fact("run-m", "u3"))]
    with (
        SqliteLedger(tmp_path / "ledger.sqlite3") as ledger,
        external_runtime(ledger, scripted(*reports, Done())) as rt,
    ):
        async with rt.run(request(graph_id="ext:x", run_id="run-m")) as run:
            with pytest.raises(BillingUnsettled, match="could not be written") as unsettled:
                await run.billing_settled(timeout=5)
            assert isinstance(unsettled.value.__cause__, TypeError)
        assert [r.source_reference for r in ledger.receipts(run_id="run-m")] == ["run-m/0/u1", "run-m/0/u3"]
        assert (await run.final).ok is False
    assert METRICS.get("billing.malformed_usage_report") >= 1

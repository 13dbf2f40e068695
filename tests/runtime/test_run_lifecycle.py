"""AiRuntime end to end with the in-process executor, a real ExecutionContext and a real SQLite ledger."""

from __future__ import annotations

import asyncio

import pytest
from runtime_helpers import llm, request

from chainwarden.billing import Pricing, SqliteLedger
from chainwarden.runtime import (
    AiRuntime,
    AssistantFinal,
    Containment,
    Done,
    Error,
    InProcGraphExecutor,
    RunContext,
    RunLimits,
    TextDelta,
    ToolCallResult,
    ToolCallStart,
    UsageReport,
)


async def two_step_agent(ctx: RunContext) -> str:
    first = await ctx.call_llm(llm("plan", "call-a"), cost_estimate_hint=0.00001)
    ctx.emit(TextDelta(first.content))
    ctx.emit(ToolCallStart("t1", "search", {"q": "x"}))
    ctx.emit(ToolCallResult("t1", {"hits": 1}))
    second = await ctx.call_llm(llm("answer", "call-b", cost="0.0000015", tokens=(7, 3)))
    ctx.emit(TextDelta(second.content))
    return "the answer"


def runtime(
    ledger: SqliteLedger, containment: Containment, graph: object = two_step_agent, **kw: object
) -> AiRuntime:
    return AiRuntime(
        executors={"inproc": InProcGraphExecutor(graph, containment=containment, **kw)},  # type: ignore[arg-type]
        ledger=ledger,
        pricing=Pricing(markup=2.0),
    )


async def test_a_run_streams_bills_and_finishes(ledger: SqliteLedger, containment: Containment) -> None:
    async with runtime(ledger, containment).run(request(run_id="run-1", ingress_request_id="req-1")) as run:
        events = [e async for e in run.ui_events()]
        final = await run.final
        await run.billing_settled()
    assert events == [
        TextDelta("plan"),
        ToolCallStart("t1", "search", {"q": "x"}),
        ToolCallResult("t1", {"hits": 1}),
        TextDelta("answer"),
        AssistantFinal("the answer"),
        Done(),
    ]
    assert not any(isinstance(e, UsageReport) for e in events)
    assert final.ok and final.error is None
    assert (final.run_id, final.request_id, final.content, final.finish_reason) == (
        "run-1",
        "req-1",
        "the answer",
        "stop",
    )
    assert (final.usage.prompt_tokens, final.usage.completion_tokens) == (17, 8)
    receipts = ledger.receipts(run_id="run-1")
    assert [r.source_reference for r in receipts] == ["run-1/0/call-a", "run-1/0/call-b"]
    assert [r.charged_credits for r in receipts] == [200, 30]
    assert {r.ingress_request_id for r in receipts} == {"req-1"}
    assert ledger.balance("acct-1") == -230


async def test_run_id_is_generated_and_final_resolves_once(
    ledger: SqliteLedger, containment: Containment
) -> None:
    rt = runtime(ledger, containment)
    async with rt.run(request()) as run:
        first = await run.final
        again = await run.final
    assert first is again
    assert run.run_id.startswith("run_")
    assert first.run_id == run.run_id == first.request_id
    assert {r.run_id for r in ledger.receipts()} == {run.run_id}


async def test_replaying_a_run_bills_nothing_new_and_a_new_attempt_does(
    ledger: SqliteLedger, containment: Containment
) -> None:
    rt = runtime(ledger, containment)
    for attempt in (0, 0, 1):
        async with rt.run(request(run_id="run-7", attempt=attempt)) as run:
            await run.billing_settled()
    assert [r.source_reference for r in ledger.receipts()] == [
        "run-7/0/call-a",
        "run-7/0/call-b",
        "run-7/1/call-a",
        "run-7/1/call-b",
    ]
    assert ledger.balance("acct-1") == -460


async def test_unknown_graph_gives_internal_error(ledger: SqliteLedger, containment: Containment) -> None:
    rt = runtime(ledger, containment)
    for graph_id in ("nowhere:agent", "agent", "inproc:"):
        run = rt.run_graph(request(graph_id=graph_id))
        assert [e async for e in run.ui_events()] == [Error("internal"), Done()]
        final = await run.final
        assert (final.ok, final.error) == (False, "internal")
        await run.wait()
    assert ledger.receipts() == []


async def test_unknown_name_in_a_graph_mapping_is_not_found(
    ledger: SqliteLedger, containment: Containment
) -> None:
    rt = runtime(ledger, containment, graph={"agent": two_step_agent})
    async with rt.run(request(graph_id="inproc:other")) as run:
        assert [e async for e in run.ui_events()] == [Error("not_found"), Done()]
        assert (await run.final).error == "not_found"
    async with rt.run(request(graph_id="inproc:agent")) as run:
        assert (await run.final).ok


async def test_graph_exception_keeps_billed_usage(ledger: SqliteLedger, containment: Containment) -> None:
    async def flaky(ctx: RunContext) -> str:
        await ctx.call_llm(llm("one", "u1"))
        ctx.emit(TextDelta("partial"))
        await ctx.call_llm(llm("two", "u2"))
        raise RuntimeError("tool crashed")

    async with runtime(ledger, containment, flaky).run(request(run_id="run-x")) as run:
        events = [e async for e in run.ui_events()]
        final = await run.final
    assert events == [TextDelta("partial"), Error("internal"), Done()]
    assert (final.ok, final.error, final.finish_reason) == (False, "internal", "error")
    assert final.usage.prompt_tokens == 20
    assert len(ledger.receipts(run_id="run-x")) == 2


async def test_containment_limits_stop_the_graph(ledger: SqliteLedger, containment: Containment) -> None:
    calls = 0

    async def runaway(ctx: RunContext) -> str:
        nonlocal calls
        while True:
            await ctx.call_llm(llm("again", f"u{calls}"))
            calls += 1

    rt = runtime(ledger, containment, runaway, limits=RunLimits(max_steps=3))
    async with rt.run(request(run_id="run-loop")) as run:
        events = [e async for e in run.ui_events()]
        final = await run.final
    assert events == [Error("aborted"), Done()]
    assert final.error == "aborted"
    assert calls == 3
    # Every call that ran was billed; the refused one never reached the provider.
    assert [r.source_reference for r in ledger.receipts()] == [f"run-loop/0/u{i}" for i in range(3)]


async def test_chain_timeout_ends_the_run_with_timeout(
    ledger: SqliteLedger, containment: Containment
) -> None:
    calls = 0

    async def slow(ctx: RunContext) -> str:
        nonlocal calls

        async def call() -> object:
            await asyncio.sleep(0.01)
            return await llm("x", f"u{calls}")()

        while True:
            await ctx.call_llm(call)  # type: ignore[arg-type]
            calls += 1

    rt = runtime(ledger, containment, slow, limits=RunLimits(timeout_ms=50, max_steps=10_000))
    async with rt.run(request(run_id="run-slow")) as run:
        assert [e async for e in run.ui_events()] == [Error("timeout"), Done()]
    assert calls >= 1
    assert len(ledger.receipts()) == calls


async def test_a_failing_llm_call_is_retried_within_the_budget(
    ledger: SqliteLedger, containment: Containment
) -> None:
    attempts = 0

    async def flaky_provider_call() -> object:
        nonlocal attempts
        attempts += 1
        if attempts == 1:
            raise ConnectionError("provider hiccup")
        return await llm("ok", "u-retry")()

    async def graph(ctx: RunContext) -> str:
        result = await ctx.call_llm(flaky_provider_call)  # type: ignore[arg-type]
        return result.content

    async with runtime(ledger, containment, graph).run(request(run_id="run-r")) as run:
        final = await run.final
    assert (final.ok, final.content, attempts) == (True, "ok", 2)
    assert [r.source_reference for r in ledger.receipts()] == ["run-r/0/u-retry"]


async def test_llm_result_without_unit_id_gets_a_stable_one(
    ledger: SqliteLedger, containment: Containment
) -> None:
    # Seed 004's fallback, MISSING:{run_id}/{call_index} (docs/design.md §17, §30): the same on a replay.
    async def graph(ctx: RunContext) -> None:
        await ctx.call_llm(llm("a", None))
        await ctx.call_llm(llm("b", None))

    rt = runtime(ledger, containment, graph)
    for _ in range(2):
        async with rt.run(request(run_id="run-s")) as run:
            assert (await run.final).content is None
    assert [r.source_reference for r in ledger.receipts()] == [
        "run-s/0/MISSING:run-s/0",
        "run-s/0/MISSING:run-s/1",
    ]


async def test_graph_may_not_emit_terminal_or_usage_events(
    ledger: SqliteLedger, containment: Containment
) -> None:
    async def graph(ctx: RunContext) -> str:
        ctx.emit(Done())
        return "never"

    async with runtime(ledger, containment, graph).run(request()) as run:
        assert [e async for e in run.ui_events()] == [Error("internal"), Done()]


async def test_no_task_outlives_the_run_block(ledger: SqliteLedger, containment: Containment) -> None:
    before = asyncio.all_tasks()
    async with runtime(ledger, containment).run(request()) as run:
        async for _ in run.ui_events():
            break
    assert asyncio.all_tasks() == before
    assert (await run.final).ok
    assert len(ledger.receipts()) == 2


def test_bad_requests_are_typed_errors() -> None:
    with pytest.raises(TypeError):
        request(messages="hi")
    with pytest.raises(TypeError):
        request(messages=["hi"])
    with pytest.raises(ValueError):
        request(attempt=-1)
    with pytest.raises(TypeError):
        request(attempt="0")
    with pytest.raises(ValueError):
        request(graph_id="")
    with pytest.raises(ValueError):
        Error("bogus")  # type: ignore[arg-type]


async def test_bad_runtime_configuration_is_rejected(ledger: SqliteLedger) -> None:
    with pytest.raises(TypeError):
        AiRuntime(executors={"inproc": object()}, ledger=ledger)  # type: ignore[dict-item]
    with pytest.raises(ValueError):
        AiRuntime(executors={"in:proc": InProcGraphExecutor(two_step_agent)}, ledger=ledger)
    with pytest.raises(TypeError):
        AiRuntime(executors={}, ledger="ledger.sqlite3")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        AiRuntime(executors={}, ledger=ledger, ui_buffer=0)
    rt = AiRuntime(executors={}, ledger=ledger)
    with pytest.raises(TypeError):
        rt.run_graph({"graph_id": "inproc:agent"})  # type: ignore[arg-type]


async def test_many_runs_have_llm_calls_in_flight_together(
    ledger: SqliteLedger, containment: Containment
) -> None:
    runs = 20
    in_flight = 0
    all_in = asyncio.Event()

    async def waits_for_the_others() -> object:
        nonlocal in_flight
        in_flight += 1
        if in_flight == runs:
            all_in.set()
        # Only returns once every run has a call in flight: needs more threads than the default executor has.
        await all_in.wait()
        return await llm("x", "u")()

    async def graph(ctx: RunContext) -> str:
        await ctx.call_llm(waits_for_the_others)  # type: ignore[arg-type]
        return "ok"

    executor = InProcGraphExecutor(graph, containment=containment, max_concurrent_llm_calls=runs)
    rt = AiRuntime(executors={"inproc": executor}, ledger=ledger)
    started = [rt.run_graph(request(run_id=f"run-{i}")) for i in range(runs)]
    # A guard against a hang on regression, not a timing assertion.
    async with asyncio.timeout(60):
        finals = [await run.final for run in started]
        for run in started:
            await run.wait()
    executor.close()
    assert all(f.ok for f in finals)
    assert len(ledger.receipts()) == runs


def test_executor_rejects_a_bad_thread_count() -> None:
    for bad in (0, -1, True, 2.5):
        with pytest.raises(ValueError):
            InProcGraphExecutor(two_step_agent, max_concurrent_llm_calls=bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        InProcGraphExecutor("not a function")  # type: ignore[arg-type]


async def test_a_reported_fact_is_resolved_once_for_the_billing_and_the_journal(
    ledger: SqliteLedger, containment: Containment, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run's context reports the fact as the provider gave it; the run's billing resolves it once (its
    usage_unit_id and key, `Billable.resolve`) and the run's journal records that same resolution
    (docs/billing.md "The outbox")."""
    from chainwarden.billing import facts  # noqa: PLC0415
    from chainwarden.billing.run_store import RunStore  # noqa: PLC0415

    keys: list[str] = []
    compute = facts.compute_idempotency_key

    def counted(fact: facts.UsageFact) -> str:
        keys.append(compute(fact))
        return keys[-1]

    monkeypatch.setattr(facts, "compute_idempotency_key", counted)
    reported: list[str | None] = []

    async def graph(ctx: RunContext) -> None:
        emit = ctx._emit  # type: ignore[attr-defined]

        def seen(event: object) -> None:
            if isinstance(event, UsageReport):
                reported.append(event.fact.usage_unit_id)
            emit(event)

        ctx._emit = seen  # type: ignore[attr-defined]
        await ctx.call_llm(llm("a", None))
        await ctx.call_llm(llm("b", "u-b"))

    async with runtime(ledger, containment, graph).run(request(run_id="run-once")) as run:
        await run.final
        await run.billing_settled()
    expected = ["run-once/0/MISSING:run-once/0", "run-once/0/u-b"]
    assert reported == [None, "u-b"]  # as the provider gave it: the context resolves nothing
    assert [r.source_reference for r in ledger.receipts(run_id="run-once")] == expected
    assert [c.source_reference for c in RunStore(ledger).calls(["run-once"])] == expected
    assert keys == expected  # once each: the journal, the outbox and the ledger share one Billable

"""Runs that outlive their process (seed 004 P1): every UI event journaled at its position in the ledger's
database, `attach` (replay after a position, then live) from another runtime, `retry` as a new attempt,
`runs` listing, and the seed's attempt tests: a resume never changes `attempt`, a replay bills nothing."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from runtime_helpers import llm, request
from stores import Store

from chainwarden.billing import Ledger, Pricing
from chainwarden.runtime import (
    AiEvent,
    AiRuntime,
    AssistantFinal,
    Done,
    Error,
    InProcGraphExecutor,
    RunContext,
    TextDelta,
)


def chatty(words: int, gate: asyncio.Event | None = None, after: int = 0) -> InProcGraphExecutor:
    """An agent that bills one call, streams `words` deltas (waiting on `gate` after `after` of them)."""

    async def agent(ctx: RunContext) -> str:
        await ctx.call_llm(llm("x", None))  # no provider id: billed under MISSING:{run_id}/0
        for i in range(words):
            if gate is not None and i == after:
                await gate.wait()
            ctx.emit(TextDelta(f"w{i} "))
        return "".join(f"w{i} " for i in range(words))

    return InProcGraphExecutor(agent)


async def collect(stream: AsyncIterator[AiEvent]) -> list[AiEvent]:
    return [event async for event in stream]


def texts(events: list[AiEvent]) -> list[tuple[int, str]]:
    return [(e.seq, e.type) for e in events if not isinstance(e, AssistantFinal)]


async def test_every_ui_event_is_journaled_at_its_position(store: Store) -> None:
    with store.open() as ledger, store.open() as elsewhere:
        runtime = AiRuntime({"inproc": chatty(5)}, ledger, Pricing(markup=1.0))
        async with runtime.run(request(run_id="run-1")) as run:
            seen = await collect(run.ui_events())
            await run.final
        assert [e.seq for e in seen] == list(range(1, 8))
        assert [e.type for e in seen] == ["text_delta"] * 5 + ["assistant_final", "done"]
        # Another runtime on its own connection reads the same log back from the database.
        other = AiRuntime({}, elsewhere)
        attached = runtime_attach = other.attach("run-1")
        replay = await collect(runtime_attach)
        assert replay == seen and [e.seq for e in replay] == [e.seq for e in seen]
        assert (attached.run_id, attached.attempt) == ("run-1", 0)
        [record] = elsewhere.runs(run_id="run-1")
        assert (record.status, record.events) == ("ok", 7)
        # From a position on: the rest only; at or past the end of an ended log: nothing.
        assert [e.seq for e in await collect(other.attach("run-1", after=5))] == [6, 7]
        assert await collect(other.attach("run-1", after=7)) == []
        assert [e.seq for e in await collect(runtime.attach("run-1", after=6))] == [7]
        runtime.close()
        other.close()


async def test_a_client_attaches_mid_run_from_another_runtime_and_follows_it_live(store: Store) -> None:
    gate = asyncio.Event()
    with store.open() as ledger, store.open() as elsewhere:
        runtime = AiRuntime({"inproc": chatty(6, gate, after=3)}, ledger)
        other = AiRuntime({}, elsewhere)
        async with runtime.run(request(run_id="run-live")) as run:
            # Wait until the first three deltas are in the database, then attach from the other runtime.
            for _ in range(500):
                if other.runs(status="running") and elsewhere.runs(run_id="run-live")[0].events >= 3:
                    break
                await asyncio.sleep(0.01)
            attached = other.attach("run-live", after=1)
            first = await attached.__anext__()
            assert (first.seq, first) == (2, TextDelta("w1 "))
            gate.set()
            rest = await collect(attached)
            await run.final
        assert [e.seq for e in rest] == list(range(3, 9))
        assert isinstance(rest[-1], Done)
        assert attached.attempt == 0
        runtime.close()
        other.close()


async def test_an_unknown_run_attaches_to_not_found(store: Store) -> None:
    with store.open() as ledger:
        runtime = AiRuntime({}, ledger)
        assert await collect(runtime.attach("no-such-run")) == [Error("not_found"), Done()]
        with pytest.raises(ValueError, match="run_id"):
            runtime.attach("a/b")
        with pytest.raises(ValueError, match="after"):
            runtime.attach("x", after=-1)
        runtime.close()


async def test_a_resume_does_not_change_attempt(store: Store) -> None:
    """Seed 004 P1 (attempt-semantics): reconnecting is a new ingress request of the same run and attempt."""
    gate = asyncio.Event()
    with store.open() as ledger, store.open() as elsewhere:
        runtime = AiRuntime({"inproc": chatty(4, gate, after=2)}, ledger, Pricing(markup=1.0))
        other = AiRuntime({}, elsewhere)
        async with runtime.run(request(run_id="run-r", ingress_request_id="req-first")) as run:
            first = runtime.attach("run-r")
            seen = [await first.__anext__(), await first.__anext__()]
            await first.aclose()  # the browser went away
            gate.set()
            await run.final
            await run.billing_settled()
        again = other.attach("run-r", after=seen[-1].seq)
        rest = await collect(again)
        assert [e.seq for e in seen + rest] == list(range(1, 7))
        assert first.ingress_request_id != again.ingress_request_id
        assert (first.attempt, again.attempt) == (0, 0)
        assert [r.attempt for r in elsewhere.runs(run_id="run-r")] == [0]
        assert [r.source_reference for r in elsewhere.receipts(run_id="run-r")] == ["run-r/0/MISSING:run-r/0"]
        runtime.close()
        other.close()


async def test_a_replay_bills_nothing(store: Store) -> None:
    """Seed 004 P1: attaching replays without billing, and running the same attempt again reports the same
    keys, which the ledger already has."""
    with store.open() as ledger:
        ledger.create_account("acct-1", balance_credits=1_000)
        runtime = AiRuntime({"inproc": chatty(2)}, ledger, Pricing(markup=1.0))
        async with runtime.run(request(run_id="run-p")) as run:
            await run.billing_settled()
        balance = ledger.balance("acct-1")
        assert balance == 900
        for _ in range(3):
            await collect(runtime.attach("run-p"))
        async with runtime.run(request(run_id="run-p")) as run:  # the same attempt again
            await run.billing_settled()
        assert ledger.balance("acct-1") == balance
        assert len(ledger.receipts(run_id="run-p")) == 1
        # The log of the attempt is the latest execution's, not both.
        assert [e.seq for e in await collect(runtime.attach("run-p"))] == [1, 2, 3, 4]
        runtime.close()


async def test_retry_is_a_new_attempt_billed_under_its_own_keys(store: Store) -> None:
    failing = {"first": True}

    async def agent(ctx: RunContext) -> str:
        await ctx.call_llm(llm("x", None))
        if failing["first"]:
            failing["first"] = False
            raise RuntimeError("the first attempt breaks")
        return "fine"

    with store.open() as ledger, store.open() as elsewhere:
        ledger.create_account("acct-1", balance_credits=1_000)
        runtime = AiRuntime({"inproc": InProcGraphExecutor(agent)}, ledger, Pricing(markup=1.0))
        async with runtime.run(
            request(run_id="run-t", messages=[{"role": "user", "content": "again"}])
        ) as run:
            assert (await run.final).error == "internal"
            await run.billing_settled()
        # Any runtime sharing the database can retry it: the request comes from the record.
        other = AiRuntime({"inproc": InProcGraphExecutor(agent)}, elsewhere, Pricing(markup=1.0))
        retried = other.retry("run-t")
        assert (retried.run_id, retried.attempt) == ("run-t", 1)
        assert retried.request.messages == [{"role": "user", "content": "again"}]
        with pytest.raises(ValueError, match="still running"):
            other.retry("run-t")
        final = await retried.final
        await retried.billing_settled()
        assert final.ok and final.content == "fine"
        assert sorted(r.source_reference for r in ledger.receipts(run_id="run-t")) == [
            "run-t/0/MISSING:run-t/0",
            "run-t/1/MISSING:run-t/0",
        ]
        assert ledger.balance("acct-1") == 800
        assert [(r.attempt, r.status) for r in ledger.runs(run_id="run-t")] == [(1, "ok"), (0, "error")]
        # attach follows the latest attempt unless asked for another.
        assert (await collect(other.attach("run-t")))[-2] == AssistantFinal("fine")
        assert (await collect(other.attach("run-t", attempt=0)))[-2:] == [Error("internal"), Done()]
        with pytest.raises(KeyError):
            other.retry("never-ran")
        runtime.close()
        other.close()


async def test_runs_lists_records_newest_first_by_account_and_status(store: Store) -> None:
    with store.open() as ledger:
        runtime = AiRuntime({"inproc": chatty(1)}, ledger)
        for i, account in enumerate(["a", "b", "a"]):
            async with runtime.run(request(run_id=f"run-{i}", billing_account_id=account)) as run:
                await run.final
        async with runtime.run(request("nowhere:x", run_id="run-x", billing_account_id="a")) as run:
            await run.final
        assert [r.run_id for r in runtime.runs()] == ["run-x", "run-2", "run-1", "run-0"]
        assert [r.run_id for r in runtime.runs(billing_account_id="a", status="ok")] == ["run-2", "run-0"]
        assert [r.run_id for r in runtime.runs(status="error")] == ["run-x"]
        assert [r.run_id for r in runtime.runs(limit=1)] == ["run-x"]
        with pytest.raises(ValueError, match="status"):
            runtime.runs(status="done")
        runtime.close()


def ledger_runs(ledger: Ledger, run_id: str) -> list[tuple[int, str]]:
    return [(r.attempt, r.status) for r in ledger.runs(run_id=run_id)]

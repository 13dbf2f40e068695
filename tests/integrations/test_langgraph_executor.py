"""LangGraphExecutor: real `langgraph` StateGraphs with `langchain-core` fake chat models through AiRuntime;
every LLM call contained and billed exactly once, on SQLite and on the real PostgreSQL of `make test`."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models.chat_models import LangSmithParams
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from chainwarden.billing import Ledger, PostgresLedger, Pricing, SqliteLedger
from chainwarden.runtime import (
    AiRuntime,
    AssistantFinal,
    Done,
    Error,
    GraphRunRequest,
    LangGraphExecutor,
    RunLimits,
    TextDelta,
    ToolCallResult,
    ToolCallStart,
)

PROVIDER, MODEL = "fakeprovider", "fake-1"
# $1 per million tokens in and $2 out: costs are exact and need no price data.
PRICES = {(PROVIDER, MODEL): {"input_mtok": "1", "output_mtok": "2"}}


class PricedFakeModel(FakeMessagesListChatModel):
    """langchain-core's fake chat model, reporting a provider and model name as real integrations do."""

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> LangSmithParams:
        params = super()._get_ls_params(stop=stop, **kwargs)
        params["ls_provider"], params["ls_model_name"] = PROVIDER, MODEL
        return params


def reply(text: str, response_id: str, tokens: tuple[int, int] = (1000, 100), **extra: Any) -> AIMessage:
    return AIMessage(
        content=text,
        usage_metadata={"input_tokens": tokens[0], "output_tokens": tokens[1], "total_tokens": sum(tokens)},
        response_metadata={"id": response_id, "model_name": MODEL},
        **extra,
    )


def tool_call(response_id: str) -> AIMessage:
    return reply("", response_id, tool_calls=[{"name": "weather", "args": {"city": "Paris"}, "id": "call_1"}])


@tool
def weather(city: str) -> str:
    """Current weather of a city."""
    return f"sunny in {city}"


def agent_graph(model: PricedFakeModel, *, fail_after_tool: bool = False) -> Any:
    """The usual tool loop: the model asks for tools until it answers."""
    calls = {"n": 0}

    async def agent(state: MessagesState) -> dict[str, Any]:
        calls["n"] += 1
        if fail_after_tool and calls["n"] == 2:
            raise RuntimeError("the agent node broke")
        return {"messages": [await model.ainvoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_node("tools", ToolNode([weather]))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    graph.add_edge("agent", END)
    return graph.compile()


def request(run_id: str, name: str = "weather") -> GraphRunRequest:
    return GraphRunRequest(
        graph_id=f"langgraph:{name}",
        messages=[{"role": "user", "content": "Weather in Paris?"}],
        model=MODEL,
        billing_account_id="acct-1",
        virtual_key_id="vk-1",
        run_id=run_id,
    )


def runtime(ledger: Ledger, graphs: Any, **options: Any) -> AiRuntime:
    executor = LangGraphExecutor(graphs, price_overrides=PRICES, **options)
    return AiRuntime({"langgraph": executor}, ledger, Pricing(markup=1.0))


async def run_once(rt: AiRuntime, req: GraphRunRequest) -> tuple[list[Any], Any]:
    async with rt.run(req) as run:
        events = [event async for event in run.ui_events()]
        final = await run.final
        await run.billing_settled()
    return events, final


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[SqliteLedger]:
    with SqliteLedger(tmp_path / "ledger.sqlite3") as opened:
        yield opened


async def test_a_tool_loop_streams_its_events_and_bills_each_llm_call_once(ledger: SqliteLedger) -> None:
    model = PricedFakeModel(responses=[tool_call("resp-1"), reply("Sunny in Paris.", "resp-2", (2000, 50))])
    events, final = await run_once(runtime(ledger, agent_graph(model)), request("run-1"))

    assert events[0] == ToolCallStart("call_1", "weather", {"city": "Paris"})
    assert events[1] == ToolCallResult("call_1", "sunny in Paris")
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Sunny in Paris."
    assert events[-2:] == [AssistantFinal("Sunny in Paris."), Done()]
    assert final.ok and final.content == "Sunny in Paris."
    assert (final.usage.prompt_tokens, final.usage.completion_tokens) == (3000, 150)

    receipts = ledger.receipts(run_id="run-1")
    assert [(r.source_system, r.source_reference) for r in receipts] == [
        ("langgraph", "run-1/0/resp-1"),
        ("langgraph", "run-1/0/resp-2"),
    ]
    assert [r.response_cost_usd for r in receipts] == [Decimal("0.0012"), Decimal("0.0021")]
    [record] = ledger.runs(run_id="run-1")
    assert (record.status, record.graph_id, record.receipt_count) == ("ok", "langgraph:weather", 2)


async def test_replaying_a_run_bills_nothing_new(ledger: SqliteLedger) -> None:
    def graph() -> Any:
        return agent_graph(PricedFakeModel(responses=[tool_call("resp-1"), reply("Sunny.", "resp-2")]))

    await run_once(runtime(ledger, graph()), request("run-1"))
    balance = ledger.balance("acct-1")
    _, final = await run_once(runtime(ledger, graph()), request("run-1"))
    assert final.ok
    assert len(ledger.receipts(run_id="run-1")) == 2
    assert ledger.balance("acct-1") == balance


async def test_a_graph_failing_mid_run_ends_with_an_error_and_keeps_its_billed_usage(
    ledger: SqliteLedger,
) -> None:
    model = PricedFakeModel(responses=[tool_call("resp-1"), reply("never", "resp-2")])
    events, final = await run_once(
        runtime(ledger, agent_graph(model, fail_after_tool=True)), request("run-f")
    )
    assert not final.ok and final.error == "internal"
    assert events[-2:] == [Error("internal"), Done()]
    assert [r.source_reference for r in ledger.receipts(run_id="run-f")] == ["run-f/0/resp-1"]


async def test_the_cost_ceiling_halts_the_graph_before_its_next_llm_call(ledger: SqliteLedger) -> None:
    # The first call costs $0.0012 against a $0.001 ceiling: the second is refused before the model runs.
    # (No reservation, cost_estimate_hint=0.0: the ceiling is reached by what the first call really cost.)
    model = PricedFakeModel(responses=[tool_call("resp-1"), reply("never", "resp-2")])
    rt = runtime(ledger, agent_graph(model), limits=RunLimits(max_cost_usd=0.001), cost_estimate_hint=0.0)
    events, final = await run_once(rt, request("run-h"))
    assert not final.ok and final.error == "aborted"
    assert events[-2:] == [Error("aborted"), Done()]
    assert model.i == 1  # the fake model answered once
    assert [r.source_reference for r in ledger.receipts(run_id="run-h")] == ["run-h/0/resp-1"]


async def test_an_unknown_graph_name_is_not_found(ledger: SqliteLedger) -> None:
    model = PricedFakeModel(responses=[reply("hi", "resp-1")])
    _, final = await run_once(runtime(ledger, {"weather": agent_graph(model)}), request("run-x", "nope"))
    assert not final.ok and final.error == "not_found"


async def test_a_detached_subscriber_does_not_stop_billing(ledger: SqliteLedger) -> None:
    model = PricedFakeModel(responses=[tool_call("resp-1"), reply("Sunny.", "resp-2")])
    async with runtime(ledger, agent_graph(model)).run(request("run-d")) as run:
        async for _ in run.ui_events():
            break  # the UI goes away after the first event
        assert (await run.final).ok
        await run.billing_settled()
    assert len(ledger.receipts(run_id="run-d")) == 2


async def test_cancelling_the_run_cancels_the_graph(ledger: SqliteLedger) -> None:
    entered = asyncio.Event()
    finished: list[str] = []

    async def slow(state: MessagesState) -> dict[str, Any]:
        entered.set()
        await asyncio.sleep(10)
        finished.append("slow")
        return {"messages": []}

    graph = StateGraph(MessagesState)
    graph.add_node("slow", slow)
    graph.add_edge(START, "slow")
    graph.add_edge("slow", END)
    async with runtime(ledger, graph.compile()).run(request("run-c")) as run:
        await asyncio.wait_for(entered.wait(), timeout=5)
        run.cancel()
        final = await asyncio.wait_for(run.final, timeout=5)
    assert not final.ok and final.error == "aborted" and finished == []


def test_bad_arguments_are_typed_errors_naming_them() -> None:
    with pytest.raises(TypeError, match="graphs"):
        LangGraphExecutor(object())
    graph = agent_graph(PricedFakeModel(responses=[reply("hi", "r")]))
    with pytest.raises(TypeError, match="input_of"):
        LangGraphExecutor(graph, input_of="messages")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="recursion_limit"):
        LangGraphExecutor(graph, recursion_limit=0)


async def test_four_concurrent_runs_on_one_postgres_ledger_bill_exactly_once(postgres_schema: str) -> None:
    def graph(i: int) -> Any:
        responses = [tool_call(f"resp-{i}-a"), reply(f"answer {i}", f"resp-{i}-b")]
        return agent_graph(PricedFakeModel(responses=responses))

    with PostgresLedger(postgres_schema) as ledger:
        # Each run twice at once (a replay racing its original): the ledger decides, once per call.
        rts = [runtime(ledger, graph(i)) for i in range(4)] + [runtime(ledger, graph(i)) for i in range(4)]
        finals = await asyncio.gather(*(run_once(rt, request(f"run-{i % 4}")) for i, rt in enumerate(rts)))
        assert all(final.ok for _, final in finals)
        receipts = ledger.receipts()
        assert sorted(r.source_reference for r in receipts) == sorted(
            f"run-{i}/0/resp-{i}-{x}" for i in range(4) for x in "ab"
        )
        total = sum(r.charged_credits for r in receipts)
        assert ledger.balance("acct-1") == -total

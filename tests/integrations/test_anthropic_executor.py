"""AnthropicExecutor: a Claude tool-use loop through AiRuntime, with the real `anthropic` client against the
local fake Messages API; every message billed once under its message id."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import anthropic
import pytest

from chainwarden.billing import Pricing, SqliteLedger
from chainwarden.runtime import (
    AiRuntime,
    AnthropicExecutor,
    AnthropicTool,
    AssistantFinal,
    Done,
    Error,
    GraphRunRequest,
    RunLimits,
    TextDelta,
    ToolCallResult,
    ToolCallStart,
)

from .fake_provider import FakeProvider, Reply, ToolCall

MODEL = "claude-test-1"
# Per-million-token prices for the fake model, so costs are exact and need no price data.
PRICES = {("anthropic", MODEL): {"input_mtok": "3", "output_mtok": "15", "cache_read_mtok": "0.3"}}


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[SqliteLedger]:
    with SqliteLedger(tmp_path / "ledger.sqlite3") as opened:
        yield opened


def request(run_id: str = "run-claude-1", text: str = "What is the weather in Paris?") -> GraphRunRequest:
    return GraphRunRequest(
        graph_id="anthropic:weather",
        messages=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": text}],
        model=MODEL,
        billing_account_id="acct-1",
        virtual_key_id="vk-1",
        run_id=run_id,
    )


def weather_tool(calls: list[dict[str, Any]], *, fail: bool = False) -> AnthropicTool:
    async def weather(args: dict[str, Any]) -> dict[str, Any]:
        calls.append(args)
        if fail:
            raise RuntimeError("weather service down")
        return {"city": args.get("city"), "sky": "sunny"}

    return AnthropicTool(
        name="get_weather",
        description="Current weather of a city.",
        fn=weather,
        input_schema={"type": "object", "properties": {"city": {"type": "string"}}},
    )


def tool_loop_script(fake: FakeProvider) -> None:
    fake.script(
        Reply(
            tool_call=ToolCall("get_weather", {"city": "Paris"}, call_id="toolu_1"),
            input_tokens=100,
            output_tokens=20,
            cache_read_tokens=40,
            response_id="msg_1",
        ),
        Reply(text="Sunny in Paris.", input_tokens=150, output_tokens=10, response_id="msg_2"),
    )


@pytest.fixture
async def claude(fake_provider: FakeProvider) -> AsyncIterator[anthropic.AsyncAnthropic]:
    """The real async client, pointed at the fake and closed (its sockets too) after the test."""
    client = anthropic.AsyncAnthropic(
        base_url=fake_provider.anthropic_base_url, api_key="test", max_retries=0
    )
    async with client:
        yield client


def executor(
    client: anthropic.AsyncAnthropic, tools: list[AnthropicTool], **options: Any
) -> AnthropicExecutor:
    return AnthropicExecutor(client, tools=tools, price_overrides=PRICES, **options)


async def run_once(runtime: AiRuntime, req: GraphRunRequest) -> tuple[list[Any], Any]:
    async with runtime.run(req) as run:
        events = [event async for event in run.ui_events()]
        final = await run.final
        await run.billing_settled()
    return events, final


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "plain"])
async def test_tool_loop_streams_events_and_bills_each_message_once(
    fake_provider: FakeProvider, claude: anthropic.AsyncAnthropic, ledger: SqliteLedger, stream: bool
) -> None:
    tool_loop_script(fake_provider)
    calls: list[dict[str, Any]] = []
    executors = {"anthropic": executor(claude, [weather_tool(calls)], stream=stream)}
    runtime = AiRuntime(executors, ledger, Pricing(markup=1.0))  # receipts show the provider's cost

    events, final = await run_once(runtime, request())

    assert calls == [{"city": "Paris"}]
    kinds = [type(e) for e in events]
    assert kinds[:2] == [ToolCallStart, ToolCallResult]
    assert events[0] == ToolCallStart("toolu_1", "get_weather", {"city": "Paris"})
    assert events[1].result == {"content": '{"city": "Paris", "sky": "sunny"}', "is_error": False}
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Sunny in Paris."
    assert events[-2:] == [AssistantFinal("Sunny in Paris."), Done()]
    assert final.ok and final.content == "Sunny in Paris."
    assert (final.usage.prompt_tokens, final.usage.completion_tokens) == (250, 30)

    # What the model was sent: the system prompt beside the messages, then the tool's result.
    first, second = (r.body for r in fake_provider.requests)
    assert first["system"] == "Be brief." and first["tools"][0]["name"] == "get_weather"
    assert bool(first.get("stream")) is stream
    assert second["messages"][-1]["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": '{"city": "Paris", "sky": "sunny"}'}
    ]

    receipts = sorted(ledger.receipts(run_id="run-claude-1"), key=lambda r: r.source_reference)
    assert [(r.source_system, r.source_reference) for r in receipts] == [
        ("anthropic_sdk", "run-claude-1/0/msg_1"),
        ("anthropic_sdk", "run-claude-1/0/msg_2"),
    ]
    # input_tokens counts cached tokens too; the cache read is priced at its own rate.
    assert (receipts[0].input_tokens, receipts[0].output_tokens) == (100, 20)
    assert receipts[0].response_cost_usd == (Decimal(60) * 3 + Decimal(40) * Decimal("0.3") + 20 * 15) / 10**6
    assert receipts[1].response_cost_usd == (Decimal(150) * 3 + 10 * 15) / 10**6
    assert receipts[0].usage_raw is not None and receipts[0].usage_raw["cache_read_input_tokens"] == 40


async def test_replaying_a_run_bills_nothing_new(
    fake_provider: FakeProvider, claude: anthropic.AsyncAnthropic, ledger: SqliteLedger
) -> None:
    runtime = AiRuntime({"anthropic": executor(claude, [weather_tool([])])}, ledger)
    tool_loop_script(fake_provider)
    await run_once(runtime, request())
    balance = ledger.balance("acct-1")
    tool_loop_script(fake_provider)
    _, final = await run_once(runtime, request())
    assert final.ok
    assert len(ledger.receipts(run_id="run-claude-1")) == 2
    assert ledger.balance("acct-1") == balance


async def test_a_failing_tool_is_reported_to_the_model_and_the_run_goes_on(
    fake_provider: FakeProvider, claude: anthropic.AsyncAnthropic, ledger: SqliteLedger
) -> None:
    tool_loop_script(fake_provider)
    runtime = AiRuntime({"anthropic": executor(claude, [weather_tool([], fail=True)])}, ledger)
    events, final = await run_once(runtime, request())
    assert final.ok
    result = next(e for e in events if isinstance(e, ToolCallResult))
    assert result.result == {"content": "RuntimeError: weather service down", "is_error": True}
    sent = fake_provider.requests[1].body["messages"][-1]["content"][0]
    assert sent["is_error"] is True and "weather service down" in sent["content"]


async def test_cost_ceiling_refuses_the_next_message_before_it_is_sent(
    fake_provider: FakeProvider, claude: anthropic.AsyncAnthropic, ledger: SqliteLedger
) -> None:
    # The first message costs $0.000492 against a $0.0004 ceiling: the second one is never requested.
    # (No reservation, cost_estimate_usd=0.0: the ceiling is reached by what the first message cost.)
    tool_loop_script(fake_provider)
    limits = RunLimits(max_cost_usd=0.0004)
    tools = [weather_tool([])]
    runtime = AiRuntime({"anthropic": executor(claude, tools, limits=limits, cost_estimate_usd=0.0)}, ledger)
    events, final = await run_once(runtime, request())
    assert len(fake_provider.requests) == 1
    assert not final.ok and final.error == "aborted"
    assert events[-2:] == [Error("aborted"), Done()]
    assert [r.source_reference for r in ledger.receipts(run_id="run-claude-1")] == ["run-claude-1/0/msg_1"]


async def test_an_unknown_tool_is_an_error_result_not_a_crash(
    fake_provider: FakeProvider, claude: anthropic.AsyncAnthropic, ledger: SqliteLedger
) -> None:
    fake_provider.script(
        Reply(tool_call=ToolCall("launch_rocket", {}, call_id="toolu_9"), response_id="msg_a"),
        Reply(text="I cannot do that.", response_id="msg_b"),
    )
    runtime = AiRuntime({"anthropic": executor(claude, [])}, ledger)
    events, final = await run_once(runtime, request())
    assert final.ok and final.content == "I cannot do that."
    result = next(e for e in events if isinstance(e, ToolCallResult))
    assert result.result["is_error"] is True and "launch_rocket" in result.result["content"]


async def test_cancelling_the_run_stops_the_loop(
    fake_provider: FakeProvider, claude: anthropic.AsyncAnthropic, ledger: SqliteLedger
) -> None:
    started = asyncio.Event()
    release = asyncio.Event()

    async def slow(args: dict[str, Any]) -> str:
        started.set()
        await asyncio.wait_for(release.wait(), timeout=5)
        return "late"

    tool = AnthropicTool(name="get_weather", description="slow", fn=slow)
    tool_loop_script(fake_provider)
    runtime = AiRuntime({"anthropic": executor(claude, [tool])}, ledger)
    async with runtime.run(request()) as run:
        await asyncio.wait_for(started.wait(), timeout=5)
        run.cancel()
        final = await asyncio.wait_for(run.final, timeout=5)
    assert not final.ok and final.error == "aborted"
    assert len(fake_provider.requests) == 1  # the second message was never asked for


async def test_bad_arguments_are_typed_errors_naming_them(
    fake_provider: FakeProvider, claude: anthropic.AsyncAnthropic
) -> None:
    sync_client = anthropic.Anthropic(base_url=fake_provider.anthropic_base_url, api_key="test")
    with sync_client, pytest.raises(TypeError, match="client"):
        AnthropicExecutor(sync_client)
    client = claude
    with pytest.raises(TypeError, match="tools"):
        AnthropicExecutor(client, tools=["get_weather"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="max_tokens"):
        AnthropicExecutor(client, max_tokens=0)
    with pytest.raises(ValueError, match="same name"):
        tool = weather_tool([])
        AnthropicExecutor(client, tools=[tool, tool])
    with pytest.raises(ValueError, match="name"):
        AnthropicTool(name="", description="x", fn=print)

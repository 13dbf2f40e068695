"""ClaudeAgentExecutor: the real Claude Agent SDK driving the `claude` CLI its wheel bundles, pointed at the
local fake Messages API (ANTHROPIC_BASE_URL=127.0.0.1), offline; one UsageReport per API message under its
message id, source `anthropic_sdk`, its final usage. Edge cases (a message cut short, usage the CLI did not
stream, a refused message) replay recorded SDK message streams through the executor's client seam."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import claude_agent_sdk as sdk
import pytest

from chainwarden.billing import Pricing, SqliteLedger
from chainwarden.runtime import (
    AiRuntime,
    AnthropicTool,
    AssistantFinal,
    ClaudeAgentExecutor,
    CreditPolicy,
    Done,
    Error,
    GraphRunRequest,
    TextDelta,
    ToolCallResult,
    ToolCallStart,
)

from .fake_provider import FakeProvider, Reply, ToolCall

MODEL = "claude-test-1"
PRICES = {("anthropic", MODEL): {"input_mtok": "3", "output_mtok": "15", "cache_read_mtok": "0.3"}}


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[SqliteLedger]:
    with SqliteLedger(tmp_path / "ledger.sqlite3") as opened:
        yield opened


def request(run_id: str) -> GraphRunRequest:
    return GraphRunRequest(
        graph_id="claude:weather",
        messages=[
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Weather in Paris?"},
        ],
        model=MODEL,
        billing_account_id="acct-1",
        virtual_key_id="vk-1",
        run_id=run_id,
    )


def offline(fake: FakeProvider, home: Path) -> sdk.ClaudeAgentOptions:
    """The CLI talks to the fake only (its URL, a test key, nothing else sent), its state in a temp dir."""
    home.mkdir(exist_ok=True)
    return sdk.ClaudeAgentOptions(
        cwd=str(home),
        env={
            "ANTHROPIC_BASE_URL": fake.anthropic_base_url,
            "ANTHROPIC_API_KEY": "test",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1",
            "HOME": str(home),
        },
    )


@pytest.mark.slow
async def test_an_agent_with_a_tool_runs_through_the_port_billed_per_message(
    fake_provider: FakeProvider, ledger: SqliteLedger, tmp_path: Path
) -> None:
    asked: list[dict[str, Any]] = []

    async def weather(args: dict[str, Any]) -> dict[str, Any]:
        asked.append(args)
        return {"sky": "sunny"}

    tool = AnthropicTool(
        "weather",
        "Current weather of a city.",
        weather,
        {"type": "object", "properties": {"city": {"type": "string"}}},
    )
    fake_provider.script(
        Reply(
            tool_call=ToolCall("mcp__chainwarden__weather", {"city": "Paris"}, "toolu_1"),
            response_id="msg_A",
            input_tokens=200,
            output_tokens=30,
        ),
        Reply(text="Paris is sunny.", response_id="msg_B", input_tokens=260, output_tokens=9),
    )
    executor = ClaudeAgentExecutor(
        tools=[tool], options=offline(fake_provider, tmp_path / "home"), price_overrides=PRICES
    )
    runtime = AiRuntime({"claude": executor}, ledger, Pricing(markup=1.0))
    async with runtime.run(request("run-agent")) as run:
        events = [e async for e in run.ui_events()]
        final = await run.final
        await run.billing_settled()
    assert final.ok and final.content == "Paris is sunny."
    assert asked == [{"city": "Paris"}]
    kinds = [type(e).__name__ for e in events]
    assert kinds[0] == "ToolCallStart" and kinds[-2:] == ["AssistantFinal", "Done"]
    assert ToolCallStart("toolu_1", "mcp__chainwarden__weather", {"city": "Paris"}) in events
    assert ToolCallResult("toolu_1", {"content": '{"sky": "sunny"}', "is_error": False}) in events
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Paris is sunny."
    receipts = ledger.receipts(run_id="run-agent")
    # The final usage of each message (message_delta), not the partial one the SDK's AssistantMessage carries.
    assert [(r.source_system, r.source_reference, r.input_tokens, r.output_tokens) for r in receipts] == [
        ("anthropic_sdk", "run-agent/0/msg_A", 200, 30),
        ("anthropic_sdk", "run-agent/0/msg_B", 260, 9),
    ]
    # 200 x $3 + 30 x $15 per million = $0.00105; 260 x $3 + 9 x $15 = $0.000915.
    assert [r.charged_credits for r in receipts] == [10_500, 9_150]
    assert [r.body["model"] for r in fake_provider.requests] == [MODEL, MODEL]
    runtime.close()
    executor.close()


class Recorded:
    """A stand-in for `ClaudeSDKClient` replaying a recorded message stream."""

    def __init__(self, messages: list[Any]) -> None:
        self.messages = messages
        self.options: Any = None

    async def __aenter__(self) -> Recorded:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    async def query(self, prompt: str) -> None:
        self.prompt = prompt

    async def receive_response(self) -> AsyncIterator[Any]:
        for message in self.messages:
            await asyncio.sleep(0)
            yield message


class Replaying(ClaudeAgentExecutor):
    def __init__(self, messages: list[Any], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.recorded = Recorded(messages)

    def _client(self, options: Any) -> Any:
        self.recorded.options = options
        return self.recorded


def started(message_id: str, input_tokens: int, parent: str | None = None) -> sdk.StreamEvent:
    usage = {
        "input_tokens": input_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": 1,
    }
    event = {"type": "message_start", "message": {"id": message_id, "model": MODEL, "usage": usage}}
    return sdk.StreamEvent(uuid="u", session_id="s1", event=event, parent_tool_use_id=parent)


def delta(output_tokens: int, text: str | None = None) -> list[sdk.StreamEvent]:
    out = []
    if text is not None:
        event = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}
        out.append(sdk.StreamEvent(uuid="u", session_id="s1", event=event))
    usage = {"output_tokens": output_tokens}
    out.append(
        sdk.StreamEvent(
            uuid="u", session_id="s1", event={"type": "message_delta", "delta": {}, "usage": usage}
        )
    )
    return out


def stopped() -> sdk.StreamEvent:
    return sdk.StreamEvent(uuid="u", session_id="s1", event={"type": "message_stop"})


def result(
    text: str, model_usage: dict[str, Any] | None = None, subtype: str = "success"
) -> sdk.ResultMessage:
    return sdk.ResultMessage(
        subtype=subtype,
        duration_ms=1,
        duration_api_ms=1,
        is_error=subtype != "success",
        num_turns=1,
        session_id="s1",
        result=text,
        model_usage=model_usage,
    )


async def run_recorded(
    executor: ClaudeAgentExecutor, ledger: SqliteLedger, run_id: str, **runtime: Any
) -> tuple[list[Any], Any]:
    rt = AiRuntime({"claude": executor}, ledger, Pricing(markup=1.0), **runtime)
    async with rt.run(request(run_id)) as run:
        events = [e async for e in run.ui_events()]
        final = await run.final
        await run.billing_settled()
    rt.close()
    return events, final


async def test_recorded_a_message_cut_short_is_billed_what_it_reported(ledger: SqliteLedger) -> None:
    messages = [started("msg_1", 100), *delta(5, "Hel"), started("msg_2", 120), result("Hel")]
    executor = Replaying(messages, price_overrides=PRICES)
    events, final = await run_recorded(executor, ledger, "run-cut")
    assert final.ok and events[0] == TextDelta("Hel")
    assert [(r.source_reference, r.input_tokens, r.output_tokens) for r in ledger.receipts()] == [
        ("run-cut/0/msg_1", 100, 5),
        ("run-cut/0/msg_2", 120, 1),
    ]
    # The executor's own choices reached the SDK's options.
    options = executor.recorded.options
    assert (options.model, options.include_partial_messages, options.tools, options.max_budget_usd) == (
        MODEL,
        True,
        [],
        10.0,
    )
    assert options.system_prompt == "Be brief." and executor.recorded.prompt == "Weather in Paris?"


async def test_recorded_usage_the_cli_did_not_stream_is_billed_once_per_model(ledger: SqliteLedger) -> None:
    totals = {
        MODEL: {
            "inputTokens": 150,
            "outputTokens": 12,
            "cacheReadInputTokens": 0,
            "cacheCreationInputTokens": 0,
        }
    }
    messages = [started("msg_1", 100), *delta(7, "ok"), stopped(), result("ok", totals)]
    _, final = await run_recorded(Replaying(messages, price_overrides=PRICES), ledger, "run-extra")
    assert final.ok
    assert [(r.source_reference, r.input_tokens, r.output_tokens) for r in ledger.receipts()] == [
        ("run-extra/0/msg_1", 100, 7),
        (f"run-extra/0/s1:unstreamed:{MODEL}", 50, 5),
    ]


async def test_recorded_a_message_refused_for_credits_is_billed_and_stops_the_agent(
    ledger: SqliteLedger,
) -> None:
    ledger.create_account("acct-1", balance_credits=5_000)
    # The first message holds its worst case (100 in, 32,000 out): far beyond 5,000 credits: refused.
    messages = [
        started("msg_1", 100),
        *delta(7, "no"),
        stopped(),
        started("msg_2", 100),
        stopped(),
        result("no"),
    ]
    executor = Replaying(messages, price_overrides=PRICES)
    events, final = await run_recorded(executor, ledger, "run-poor", credit_policy=CreditPolicy())
    assert events[-2:] == [Error("insufficient_credits"), Done()]
    assert (final.error, final.stop_reason) == ("insufficient_credits", "insufficient_credits")
    # It was sent all the same: billed once, with what it reported when the agent was stopped.
    assert [r.source_reference for r in ledger.receipts()] == ["run-poor/0/msg_1"]


async def test_recorded_the_cli_own_limits_end_the_run_with_their_stop_reason(ledger: SqliteLedger) -> None:
    messages = [started("msg_1", 10), *delta(2), stopped(), result("", subtype="error_max_budget_usd")]
    events, final = await run_recorded(Replaying(messages, price_overrides=PRICES), ledger, "run-limit")
    assert events[-2:] == [Error("aborted"), Done()]
    assert final.stop_reason == "budget_exceeded"
    assert len(ledger.receipts()) == 1


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(TypeError, match="options"):
        ClaudeAgentExecutor(options={"model": "x"})
    with pytest.raises(ValueError, match="max_output_tokens"):
        ClaudeAgentExecutor(max_output_tokens=0)
    assert AssistantFinal("x") == AssistantFinal("x")

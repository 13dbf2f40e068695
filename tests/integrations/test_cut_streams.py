"""Streams cut mid-way for real (the fake provider closes the connection inside the chunked body): what the
provider reported before the cut is charged once, counted against the ceiling before any retry, and
billed once by the runtime (docs/design.md §30)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import anthropic
import httpx
import httpx2
import openai
import pytest

import chainwarden
from chainwarden.billing import Pricing, SqliteLedger
from chainwarden.containment import ChainHalted, ExecutionConfig, ExecutionContext
from chainwarden.pricing import price_usage
from chainwarden.runtime import AiRuntime, AnthropicExecutor, GraphRunRequest, RunLimits

from .fake_provider import FakeProvider, Reply

pytestmark = pytest.mark.timeout(60)

HI = [{"role": "user", "content": "hi"}]
CLAUDE = "claude-sonnet-4-6"
# A long prompt: message_start reports it (100,000 input tokens, 1 output token so far).
PROMPT = Reply(text="never seen", input_tokens=100_000, output_tokens=50, cut_after=1)
CUT_ERRORS = (httpx.HTTPError, httpx2.HTTPError, openai.APIError, anthropic.APIError)


def context(max_cost_usd: float = 10.0, retries: int = 5) -> ExecutionContext:
    return ExecutionContext(
        ExecutionConfig(max_cost_usd=max_cost_usd, max_steps=100, max_retries_total=retries)
    )


def llm_nodes(ctx: ExecutionContext) -> list[dict[str, Any]]:
    return [n for n in ctx.get_graph_snapshot()["nodes"].values() if n["kind"] == "llm"]


def claude_price(tokens_in: int, tokens_out: int) -> float:
    price = price_usage(provider="anthropic", model=CLAUDE, input_tokens=tokens_in, output_tokens=tokens_out)
    assert price is not None
    return float(price)


def test_a_cut_anthropic_stream_is_charged_the_usage_it_reported(fake_provider: FakeProvider) -> None:
    fake_provider.default = PROMPT
    ctx = context()
    client = chainwarden.instrument(
        anthropic.Anthropic(base_url=fake_provider.anthropic_base_url, api_key="k", max_retries=0), ctx
    )
    stream = client.messages.create(model=CLAUDE, max_tokens=50, messages=HI, stream=True)
    seen: list[str] = []
    with pytest.raises(CUT_ERRORS):
        for event in stream:
            seen.append(event.type)
    assert seen == ["message_start"]  # the cut came right after it, for real
    [node] = llm_nodes(ctx)
    assert node["status"] == "fail"
    expected = claude_price(100_000, 1)
    assert ctx.get_snapshot().cost_usd_accumulated == pytest.approx(expected)
    assert ctx.reserved_usd == 0.0
    stream.close()  # settled once: closing after the failure charges nothing more
    assert ctx.get_snapshot().cost_usd_accumulated == pytest.approx(expected)


async def test_a_cut_async_anthropic_stream_is_charged_the_usage_it_reported(
    fake_provider: FakeProvider,
) -> None:
    fake_provider.default = PROMPT
    ctx = context()
    client = chainwarden.instrument(
        anthropic.AsyncAnthropic(base_url=fake_provider.anthropic_base_url, api_key="k", max_retries=0), ctx
    )
    stream = await client.messages.create(model=CLAUDE, max_tokens=50, messages=HI, stream=True)
    with pytest.raises(CUT_ERRORS):
        async for _event in stream:
            pass
    await client.close()
    assert [n["status"] for n in llm_nodes(ctx)] == ["fail"]
    assert ctx.get_snapshot().cost_usd_accumulated == pytest.approx(claude_price(100_000, 1))
    assert ctx.reserved_usd == 0.0


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
async def test_a_cut_openai_stream_without_usage_is_charged_its_estimate(
    fake_provider: FakeProvider, asynchronous: bool, caplog: pytest.LogCaptureFixture
) -> None:
    # OpenAI reports a stream's usage in its last chunk: cut before it, the call used tokens nobody counted.
    fake_provider.default = Reply(text="x" * 60, chunks=6, cut_after=3)
    ctx = context()
    kwargs: dict[str, Any] = {"model": "gpt-4o", "messages": HI, "stream": True, "max_tokens": 100}
    caplog.set_level(logging.WARNING, logger="chainwarden.integrations")
    if asynchronous:
        aclient = openai.AsyncOpenAI(base_url=fake_provider.openai_base_url, api_key="k", max_retries=0)
        chainwarden.instrument(aclient, ctx, cost_estimate_hint=0.03)
        with pytest.raises(CUT_ERRORS):
            async for _chunk in await aclient.chat.completions.create(**kwargs):
                pass
        await aclient.close()
    else:
        client = openai.OpenAI(base_url=fake_provider.openai_base_url, api_key="k", max_retries=0)
        chainwarden.instrument(client, ctx, cost_estimate_hint=0.03)
        with pytest.raises(CUT_ERRORS):
            for _chunk in client.chat.completions.create(**kwargs):
                pass
    [node] = llm_nodes(ctx)
    assert node["status"] == "fail"
    assert node["metadata"] == {"usage_missing": True}
    assert ctx.get_snapshot().cost_usd_accumulated == pytest.approx(0.03)  # not $0
    assert ctx.reserved_usd == 0.0
    assert any(getattr(r, "chainwarden_metric", None) == "usage_missing" for r in caplog.records)


def test_retrying_cut_streams_stops_at_the_ceiling(fake_provider: FakeProvider) -> None:
    # The caller retries a stream that keeps being cut after message_start ($0.30 of prompt each time):
    # every attempt counts before the next is admitted, so a $1 ceiling stops the loop.
    fake_provider.default = PROMPT
    ctx = context(max_cost_usd=1.0, retries=20)
    client = chainwarden.instrument(
        anthropic.Anthropic(base_url=fake_provider.anthropic_base_url, api_key="k", max_retries=0), ctx
    )
    halted: ChainHalted | None = None
    for _ in range(20):
        try:
            for _event in client.messages.create(model=CLAUDE, max_tokens=50, messages=HI, stream=True):
                pass
        except CUT_ERRORS:
            continue
        except ChainHalted as stop:
            halted = stop
            break
    assert halted is not None and halted.stop_reason == "budget_exceeded"
    spent = ctx.get_snapshot().cost_usd_accumulated
    per_attempt = claude_price(100_000, 1)
    assert (
        len(fake_provider.requests) == 4
    )  # $0.90 spent + the next worst case ($0.0015) fits; $1.20 does not
    assert spent == pytest.approx(4 * per_attempt)


# -- the runtime: AnthropicExecutor ---------------------------------------------------------------------

PRICES = {("anthropic", "claude-test-1"): {"input_mtok": "3", "output_mtok": "15"}}


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[SqliteLedger]:
    with SqliteLedger(tmp_path / "ledger.sqlite3") as opened:
        yield opened


@pytest.fixture
async def claude(fake_provider: FakeProvider) -> AsyncIterator[anthropic.AsyncAnthropic]:
    client = anthropic.AsyncAnthropic(base_url=fake_provider.anthropic_base_url, api_key="k", max_retries=0)
    async with client:
        yield client


async def test_the_executor_bills_every_cut_message_once_and_stops_at_the_ceiling(
    fake_provider: FakeProvider, claude: anthropic.AsyncAnthropic, ledger: SqliteLedger
) -> None:
    # Today's failure: 9 requests, $2.70 spent under a $1 ceiling, $0.00 billed. Each message is cut after
    # message_start, which reports 100,000 prompt tokens ($0.30 at $3/M).
    fake_provider.script(
        *(
            Reply(input_tokens=100_000, output_tokens=10, cut_after=1, response_id=f"msg_{i}")
            for i in range(20)
        )
    )
    limits = RunLimits(max_cost_usd=1.0, max_retries_total=8)
    executor = AnthropicExecutor(claude, price_overrides=PRICES, limits=limits)
    runtime = AiRuntime({"anthropic": executor}, ledger, Pricing(markup=1.0))
    req = GraphRunRequest(
        graph_id="anthropic:chat",
        messages=[{"role": "user", "content": "Summarise the attached report."}],
        model="claude-test-1",
        billing_account_id="acct-1",
        virtual_key_id="vk-1",
        run_id="run-cut",
    )
    async with runtime.run(req) as run:
        final = await run.final
        await run.billing_settled()
    assert not final.ok and final.error == "aborted"
    receipts = ledger.receipts(run_id="run-cut")
    per_message = Decimal(100_000) * 3 / 10**6 + Decimal(1) * 15 / 10**6
    # Admitted while $0.30 x sent + the worst case of the next (1,024 tokens out at $15/M) fits under $1.
    assert len(fake_provider.requests) == 4
    assert sorted(r.source_reference for r in receipts) == [f"run-cut/0/msg_{i}" for i in range(4)]
    assert all(r.response_cost_usd == per_message for r in receipts)
    assert all(r.input_tokens == 100_000 for r in receipts)

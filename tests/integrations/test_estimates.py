"""Estimates by default (docs/design.md §35): an instrumented call reserves what its request can cost at
most before it is sent, so a ceiling holds under fan-out without any hint. Today every integration
reserves 0: 200 concurrent calls under a $1 ceiling all run."""

from __future__ import annotations

import asyncio
import logging
from decimal import Decimal
from typing import Any

import anthropic
import openai
import pytest
from langchain_openai import ChatOpenAI

import chainwarden
from chainwarden.containment import ChainHalted, ExecutionConfig, ExecutionContext
from chainwarden.integrations._estimate import DEFAULT_OUTPUT_TOKENS, prompt_tokens
from chainwarden.integrations.langchain import ChainwardenCallbackHandler
from chainwarden.pricing import context_window, price_usage

from .fake_provider import FakeProvider, Reply

pytestmark = pytest.mark.timeout(120)

# A 40,000-byte prompt that the provider counts as 10,000 tokens (4 bytes a token, as English text is).
PROMPT = "four" * 10_000
ANSWER = Reply(text="ok", input_tokens=10_000, output_tokens=500)


def context(max_cost_usd: float) -> ExecutionContext:
    return ExecutionContext(
        ExecutionConfig(max_cost_usd=max_cost_usd, max_steps=10_000, max_retries_total=10)
    )


def price(provider: str, model: str, tokens_in: int, tokens_out: int) -> float:
    value = price_usage(provider=provider, model=model, input_tokens=tokens_in, output_tokens=tokens_out)
    assert value is not None
    return float(value)


def ceiling_held(ctx: ExecutionContext, outcomes: list[Any], sent: int) -> None:
    refused = [o for o in outcomes if isinstance(o, ChainHalted)]
    assert all(o.stop_reason == "budget_exceeded" for o in refused)
    assert len(refused) + sent == len(outcomes) == 200
    assert ctx.get_snapshot().cost_usd_accumulated <= 1.0
    assert ctx.reserved_usd == 0.0
    assert 1 <= sent <= 20  # today: all 200 are sent


@pytest.mark.parametrize("sdk", ["openai", "anthropic"])
async def test_200_concurrent_client_calls_hold_a_1_dollar_ceiling(
    fake_provider: FakeProvider, sdk: str
) -> None:
    fake_provider.default = ANSWER
    ctx = context(1.0)
    messages = [{"role": "user", "content": PROMPT}]
    client: Any
    if sdk == "openai":
        client = openai.AsyncOpenAI(base_url=fake_provider.openai_base_url, api_key="k", max_retries=0)
        create, model = client.chat.completions, "gpt-4o"
    else:
        client = anthropic.AsyncAnthropic(
            base_url=fake_provider.anthropic_base_url, api_key="k", max_retries=0
        )
        create, model = client.messages, "claude-sonnet-4-6"
    chainwarden.instrument(client, ctx)
    calls = (create.create(model=model, messages=messages, max_tokens=500) for _ in range(200))
    outcomes = await asyncio.gather(*calls, return_exceptions=True)
    await client.close()
    ceiling_held(ctx, list(outcomes), len(fake_provider.requests))


async def test_200_concurrent_langchain_calls_hold_a_1_dollar_ceiling(fake_provider: FakeProvider) -> None:
    fake_provider.default = ANSWER
    ctx = context(1.0)
    handler = ChainwardenCallbackHandler(ctx)
    model = ChatOpenAI(model="gpt-4o", base_url=fake_provider.openai_base_url, api_key="k", max_tokens=500)
    outcomes = await model.abatch(
        [PROMPT] * 200, config={"callbacks": [handler], "max_concurrency": 200}, return_exceptions=True
    )
    ceiling_held(ctx, list(outcomes), len(fake_provider.requests))


def test_the_reservation_is_the_worst_case_of_the_request(fake_provider: FakeProvider) -> None:
    ctx = context(10.0)
    raw = openai.OpenAI(base_url=fake_provider.openai_base_url, api_key="k", max_retries=0)
    client = chainwarden.instrument(raw, ctx)
    messages = [{"role": "user", "content": "é" * 500}]  # 1,000 UTF-8 bytes
    bound = prompt_tokens(messages)
    assert bound == 1_000 + len("user") + 2 * 4  # the text, the role, a list and a message of overhead
    with client.chat.completions.create(model="gpt-4o", messages=messages, max_tokens=100, stream=True) as s:
        assert ctx.reserved_usd == pytest.approx(price("openai", "gpt-4o", bound, 100))
        list(s)
    # Without max_tokens the output is bounded by the model's context window as genai-prices lists it.
    window = context_window(provider="openai", model="gpt-4o")
    assert window is not None
    with client.chat.completions.create(model="gpt-4o", messages=messages, stream=True, n=2) as s:
        assert ctx.reserved_usd == pytest.approx(price("openai", "gpt-4o", bound, window))
        list(s)
    # n choices multiply the output bound; Responses' max_output_tokens is read too.
    with client.chat.completions.create(
        model="gpt-4o", messages=messages, max_tokens=100, n=3, stream=True
    ) as s:
        assert ctx.reserved_usd == pytest.approx(price("openai", "gpt-4o", bound, 300))
        list(s)
    with client.responses.create(model="gpt-4o", input="hi", max_output_tokens=50, stream=True) as s:
        assert ctx.reserved_usd == pytest.approx(price("openai", "gpt-4o", prompt_tokens("hi"), 50))
        list(s)
    assert ctx.reserved_usd == 0.0
    raw.close()


def test_anthropic_cache_writes_are_the_dearer_input_rate(fake_provider: FakeProvider) -> None:
    ctx = context(10.0)
    client = chainwarden.instrument(
        anthropic.Anthropic(base_url=fake_provider.anthropic_base_url, api_key="k", max_retries=0), ctx
    )
    messages = [{"role": "user", "content": "x" * 10_000}]
    bound = prompt_tokens(messages)
    with client.messages.create(
        model="claude-sonnet-4-6", max_tokens=10, messages=messages, stream=True
    ) as s:
        written = price_usage(
            provider="anthropic",
            model="claude-sonnet-4-6",
            input_tokens=bound,
            output_tokens=10,
            cache_write_tokens=bound,
        )
        assert written is not None and written > Decimal(
            str(price("anthropic", "claude-sonnet-4-6", bound, 10))
        )
        assert ctx.reserved_usd == pytest.approx(float(written))
        list(s)


def test_price_overrides_without_max_tokens_bound_the_output_by_the_default(
    fake_provider: FakeProvider,
) -> None:
    ctx = context(1_000.0)
    rates = {("acme", "house-7b"): {"input_mtok": "1", "output_mtok": "2"}}
    client = chainwarden.instrument(
        openai.OpenAI(base_url=fake_provider.openai_base_url, api_key="k", max_retries=0),
        ctx,
        provider="acme",
        price_overrides=rates,
    )
    with client.chat.completions.create(model="house-7b", messages=[], stream=True) as s:
        assert ctx.reserved_usd == pytest.approx(DEFAULT_OUTPUT_TOKENS * 2 / 1e6 + 4 / 1e6)  # 4: the list
        list(s)


async def test_an_unknown_model_reserves_the_remaining_budget(
    fake_provider: FakeProvider, caplog: pytest.LogCaptureFixture
) -> None:
    # No price: nothing tells what a call may cost, so each one holds all that is left and they run one at
    # a time; its tokens are recorded, and it is charged nothing for them (the WARNING says why).
    fake_provider.default = Reply(input_tokens=1_000, output_tokens=10)
    ctx = context(1.0)
    client = chainwarden.instrument(
        openai.AsyncOpenAI(base_url=fake_provider.openai_base_url, api_key="k", max_retries=0), ctx
    )
    caplog.set_level(logging.WARNING, logger="chainwarden.integrations")
    outcomes = await asyncio.gather(
        *(client.chat.completions.create(model="in-house-9", messages=[], max_tokens=5) for _ in range(10)),
        return_exceptions=True,
    )
    assert len(fake_provider.requests) == 1
    assert sum(isinstance(o, ChainHalted) for o in outcomes) == 9
    await client.chat.completions.create(model="in-house-9", messages=[], max_tokens=5)  # alone: admitted
    await client.close()
    nodes = [n for n in ctx.get_graph_snapshot()["nodes"].values() if n["status"] == "success"]
    assert [(n["tokens_in"], n["cost_usd"]) for n in nodes] == [(1_000, 0.0), (1_000, 0.0)]
    assert any("remaining budget" in r.getMessage() for r in caplog.records)


def test_an_explicit_hint_wins(fake_provider: FakeProvider) -> None:
    ctx = context(1.0)
    client = chainwarden.instrument(
        openai.OpenAI(base_url=fake_provider.openai_base_url, api_key="k", max_retries=0),
        ctx,
        cost_estimate_hint=0.0,
    )
    with client.chat.completions.create(model="gpt-4o", messages=[], stream=True) as s:  # no max_tokens
        assert ctx.reserved_usd == 0.0
        list(s)

"""``chainwarden.instrument``: the real openai / anthropic clients, pointed at the local fake provider,
make contained ``llm`` calls whose actual cost is priced from the reply's usage and settled."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import anthropic
import openai
import pytest

import chainwarden
from chainwarden.containment import CallRefused, ChainHalted, ExecutionConfig, ExecutionContext
from chainwarden.integrations.clients import uninstrument
from chainwarden.pricing import price_usage
from chainwarden.shield import Decision

from .fake_provider import FakeProvider, Reply

pytestmark = pytest.mark.timeout(30)

USAGE = Reply(text="The answer is 42.", input_tokens=1200, output_tokens=90, cache_read_tokens=1000)
# Anthropic reports the uncached 300 input tokens beside the 1,000 read from and 200 written to the cache.
CACHED = Reply(
    text="cached", input_tokens=1500, output_tokens=40, cache_read_tokens=1000, cache_write_tokens=200
)
HI = [{"role": "user", "content": "hi"}]


def context(max_cost_usd: float = 10.0, max_steps: int = 50, retries: int = 3) -> ExecutionContext:
    return ExecutionContext(
        ExecutionConfig(max_cost_usd=max_cost_usd, max_steps=max_steps, max_retries_total=retries)
    )


# Clients a test made, closed after it: a client left to the collector leaves its sockets open (a
# ResourceWarning that Python reports against whichever later test collects it).
_OPENED: list[openai.OpenAI | anthropic.Anthropic] = []


@pytest.fixture(autouse=True)
def _close_clients() -> Iterator[None]:
    yield
    while _OPENED:
        _OPENED.pop().close()


def openai_client(fake: FakeProvider) -> openai.OpenAI:
    client = openai.OpenAI(base_url=fake.openai_base_url, api_key="k", max_retries=0, timeout=10.0)
    _OPENED.append(client)
    return client


def anthropic_client(fake: FakeProvider) -> anthropic.Anthropic:
    client = anthropic.Anthropic(base_url=fake.anthropic_base_url, api_key="k", max_retries=0, timeout=10.0)
    _OPENED.append(client)
    return client


def llm_nodes(ctx: ExecutionContext) -> list[dict[str, Any]]:
    nodes = ctx.get_graph_snapshot()["nodes"].values()
    return [n for n in nodes if n["kind"] == "llm"]


def openai_price(model: str, tokens_in: int, tokens_out: int, cache_read: int = 0) -> float:
    price = price_usage(
        provider="openai",
        model=model,
        input_tokens=tokens_in,
        output_tokens=tokens_out,
        cache_read_tokens=cache_read,
    )
    assert price is not None and price > 0
    return float(price)


# -- OpenAI ---------------------------------------------------------------------------------------------


def test_chat_completion_is_a_priced_contained_call(fake_provider: FakeProvider) -> None:
    fake_provider.default = USAGE
    ctx = context()
    client = openai_client(fake_provider)
    assert chainwarden.instrument(client, ctx) is client
    reply = client.chat.completions.create(model="gpt-4o", messages=HI)
    assert reply.choices[0].message.content == "The answer is 42."
    [node] = llm_nodes(ctx)
    assert (node["name"], node["model"], node["status"]) == ("openai.chat.completions", "gpt-4o", "success")
    assert (node["tokens_in"], node["tokens_out"]) == (1200, 90)
    expected = openai_price("gpt-4o", 1200, 90, cache_read=1000)
    assert node["cost_usd"] == pytest.approx(expected)
    assert ctx.get_snapshot().cost_usd_accumulated == pytest.approx(expected)


def test_chat_stream_stays_open_until_it_ends(fake_provider: FakeProvider) -> None:
    fake_provider.default = USAGE
    ctx = context()
    client = chainwarden.instrument(openai_client(fake_provider), ctx, cost_estimate_hint=0.25)
    stream = client.chat.completions.create(model="gpt-4o", messages=HI, stream=True)
    assert ctx.reserved_usd == pytest.approx(0.25)  # the call is in flight while the stream is read
    first = next(stream)
    assert llm_nodes(ctx)[0]["status"] == "running"
    rest = list(stream)
    chunks = [first, *rest]
    # The caller did not ask for usage: chainwarden asked for it and hid the usage-only chunk.
    assert fake_provider.requests[0].body["stream_options"] == {"include_usage": True}
    assert all(chunk.choices for chunk in chunks)
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == "The answer is 42."
    assert ctx.reserved_usd == 0.0
    [node] = llm_nodes(ctx)
    assert (node["status"], node["tokens_in"], node["tokens_out"]) == ("success", 1200, 90)
    assert node["cost_usd"] == pytest.approx(openai_price("gpt-4o", 1200, 90, cache_read=1000))


def test_chat_stream_keeps_a_usage_chunk_the_caller_asked_for(fake_provider: FakeProvider) -> None:
    fake_provider.default = USAGE
    ctx = context()
    client = chainwarden.instrument(openai_client(fake_provider), ctx)
    stream = client.chat.completions.create(
        model="gpt-4o", messages=HI, stream=True, stream_options={"include_usage": True}
    )
    chunks = list(stream)
    assert chunks[-1].usage is not None and not chunks[-1].choices
    assert llm_nodes(ctx)[0]["tokens_out"] == 90


def test_chat_stream_without_usage_is_charged_its_estimate(fake_provider: FakeProvider) -> None:
    fake_provider.default = USAGE
    ctx = context()
    client = chainwarden.instrument(openai_client(fake_provider), ctx, cost_estimate_hint=0.125)
    stream = client.chat.completions.create(
        model="gpt-4o", messages=HI, stream=True, stream_options={"include_usage": False}
    )
    assert len(list(stream)) > 1
    [node] = llm_nodes(ctx)
    assert (node["status"], node["cost_usd"], node["tokens_in"]) == ("success", 0.125, None)


def test_stream_closed_early_is_settled(fake_provider: FakeProvider) -> None:
    fake_provider.default = Reply(text="x" * 200, chunks=20)
    ctx = context()
    client = chainwarden.instrument(openai_client(fake_provider), ctx, cost_estimate_hint=0.01)
    with client.chat.completions.create(model="gpt-4o", messages=HI, stream=True) as stream:
        next(stream)
        assert ctx.reserved_usd == pytest.approx(0.01)
    assert ctx.reserved_usd == 0.0
    [node] = llm_nodes(ctx)
    assert (node["status"], node["cost_usd"]) == ("success", 0.01)  # no usage seen: the estimate
    stream.close()  # a second close settles nothing twice
    assert ctx.get_snapshot().cost_usd_accumulated == pytest.approx(0.01)


def test_abandoned_stream_is_settled_when_collected(fake_provider: FakeProvider) -> None:
    ctx = context()
    client = chainwarden.instrument(openai_client(fake_provider), ctx, cost_estimate_hint=0.02)
    stream = client.chat.completions.create(model="gpt-4o", messages=HI, stream=True)
    next(stream)
    del stream
    gc.collect()
    assert ctx.reserved_usd == 0.0
    assert llm_nodes(ctx)[0]["status"] == "success"


def test_responses_plain_and_streamed(fake_provider: FakeProvider) -> None:
    fake_provider.default = USAGE
    ctx = context()
    client = chainwarden.instrument(openai_client(fake_provider), ctx)
    reply = client.responses.create(model="gpt-4o-mini", input="hi")
    assert reply.output_text == "The answer is 42."
    with client.responses.create(model="gpt-4o-mini", input="hi", stream=True) as stream:
        types = [event.type for event in stream]
    assert types[-1] == "response.completed"
    plain, streamed = llm_nodes(ctx)
    expected = openai_price("gpt-4o-mini", 1200, 90, cache_read=1000)
    for node in (plain, streamed):
        assert (node["name"], node["model"]) == ("openai.responses", "gpt-4o-mini")
        assert (node["tokens_in"], node["tokens_out"]) == (1200, 90)
        assert node["cost_usd"] == pytest.approx(expected)


async def test_async_openai_plain_and_streamed(fake_provider: FakeProvider) -> None:
    fake_provider.default = USAGE
    ctx = context()
    client = chainwarden.instrument(
        openai.AsyncOpenAI(base_url=fake_provider.openai_base_url, api_key="k", max_retries=0), ctx
    )
    reply = await client.chat.completions.create(model="gpt-4o", messages=HI)
    assert reply.usage is not None
    stream = await client.chat.completions.create(model="gpt-4o", messages=HI, stream=True)
    assert ctx.reserved_usd > 0.0 and llm_nodes(ctx)[1]["status"] == "running"  # its worst case held
    text = "".join([c.choices[0].delta.content or "" async for c in stream])
    assert text == "The answer is 42."
    async with await client.responses.create(model="gpt-4o", input="hi", stream=True) as events:
        async for _event in events:
            break  # closed early by the block
    await client.close()
    nodes = llm_nodes(ctx)
    assert [n["status"] for n in nodes] == ["success"] * 3
    assert [n["tokens_in"] for n in nodes] == [1200, 1200, None]


# -- Anthropic ------------------------------------------------------------------------------------------


def test_anthropic_messages_count_cache_tokens_as_input(fake_provider: FakeProvider) -> None:
    fake_provider.default = CACHED
    ctx = context()
    client = chainwarden.instrument(anthropic_client(fake_provider), ctx)
    message = client.messages.create(model="claude-sonnet-4-6", max_tokens=50, messages=HI)
    assert message.content[0].text == "cached"  # type: ignore[union-attr]
    stream = client.messages.create(model="claude-sonnet-4-6", max_tokens=50, messages=HI, stream=True)
    assert [e.type for e in stream][-1] == "message_stop"
    expected = price_usage(
        provider="anthropic",
        model="claude-sonnet-4-6",
        input_tokens=300 + 1000 + 200,
        output_tokens=40,
        cache_read_tokens=1000,
        cache_write_tokens=200,
    )
    assert expected is not None
    for node in llm_nodes(ctx):
        assert (node["name"], node["model"]) == ("anthropic.messages", "claude-sonnet-4-6")
        assert (node["tokens_in"], node["tokens_out"]) == (1500, 40)
        assert node["cost_usd"] == pytest.approx(float(expected))


async def test_async_anthropic_stream(fake_provider: FakeProvider) -> None:
    fake_provider.default = CACHED
    ctx = context()
    client = chainwarden.instrument(
        anthropic.AsyncAnthropic(base_url=fake_provider.anthropic_base_url, api_key="k", max_retries=0), ctx
    )
    stream = await client.messages.create(model="claude-sonnet-4-6", max_tokens=5, messages=HI, stream=True)
    kinds = [event.type async for event in stream]
    await client.close()
    assert kinds[0] == "message_start"
    [node] = llm_nodes(ctx)
    assert (node["status"], node["tokens_in"], node["tokens_out"]) == ("success", 1500, 40)


# -- refusals and failures ------------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
def test_refused_call_sends_no_request(fake_provider: FakeProvider, stream: bool) -> None:
    ctx = context(max_steps=1)
    client = chainwarden.instrument(openai_client(fake_provider), ctx)
    client.chat.completions.create(model="gpt-4o", messages=HI)
    with pytest.raises(ChainHalted) as caught:
        client.chat.completions.create(model="gpt-4o", messages=HI, stream=stream)
    assert caught.value.stop_reason == "step_limit_exceeded"
    assert caught.value.decision is Decision.HALT
    assert isinstance(caught.value, CallRefused)  # existing `except CallRefused` still catches it
    assert "step_limit_exceeded" in str(caught.value)
    assert len(fake_provider.requests) == 1


async def test_refused_async_calls_send_no_request(fake_provider: FakeProvider) -> None:
    ctx = context(max_cost_usd=0.05)
    client = chainwarden.instrument(
        anthropic.AsyncAnthropic(base_url=fake_provider.anthropic_base_url, api_key="k", max_retries=0),
        ctx,
        cost_estimate_hint=0.1,
    )
    for stream in (False, True):
        with pytest.raises(ChainHalted) as caught:
            await client.messages.create(model="claude-sonnet-4-6", max_tokens=5, messages=HI, stream=stream)
        assert caught.value.stop_reason == "budget_exceeded"
    await client.close()
    assert fake_provider.requests == []


def test_provider_errors_use_the_retry_budget(fake_provider: FakeProvider) -> None:
    fake_provider.fail_next(500, times=3)
    ctx = context(retries=1)
    client = chainwarden.instrument(openai_client(fake_provider), ctx)
    with pytest.raises(openai.InternalServerError):  # retried: the budget had one retry
        client.chat.completions.create(model="gpt-4o", messages=HI)
    with pytest.raises(ChainHalted) as caught:  # none left: the chain stops (docs/design.md §34)
        client.chat.completions.create(model="gpt-4o", messages=HI, stream=True)
    assert caught.value.stop_reason == "provider_error"
    assert isinstance(caught.value.__cause__, openai.InternalServerError)
    assert len(fake_provider.requests) == 2
    assert [n["status"] for n in llm_nodes(ctx)] == ["fail", "halt"]


# -- options and bad input ------------------------------------------------------------------------------


def test_price_overrides_and_unknown_models(fake_provider: FakeProvider) -> None:
    fake_provider.default = Reply(input_tokens=1_000_000, output_tokens=500_000)
    ctx = context(max_cost_usd=100.0)
    rates = {("acme", "house-7b"): {"input_mtok": "0.5", "output_mtok": "2"}}
    client = chainwarden.instrument(
        openai_client(fake_provider), ctx, provider="acme", price_overrides=rates, cost_estimate_hint=0.75
    )
    client.chat.completions.create(model="house-7b", messages=HI)
    client.chat.completions.create(model="no-such-model", messages=HI)  # no price: its estimate
    priced, unknown = llm_nodes(ctx)
    assert priced["cost_usd"] == pytest.approx(float(Decimal("0.5") + Decimal("1")))
    assert (unknown["cost_usd"], unknown["tokens_in"]) == (0.75, 1_000_000)


def test_bad_arguments_leave_the_client_unchanged(fake_provider: FakeProvider) -> None:
    ctx = context()
    client = openai_client(fake_provider)
    original = client.chat.completions.create
    with pytest.raises(TypeError, match="client"):
        chainwarden.instrument(object(), ctx)
    with pytest.raises(TypeError, match="ctx"):
        chainwarden.instrument(client, "ctx")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="cost_estimate_hint"):
        chainwarden.instrument(client, ctx, cost_estimate_hint=-1.0)
    with pytest.raises(ValueError, match="price_overrides"):
        chainwarden.instrument(client, ctx, price_overrides={("a", "b"): {"input_mtok": 1}})
    with pytest.raises(TypeError, match="provider"):
        chainwarden.instrument(client, ctx, provider="")
    assert client.chat.completions.create == original


def test_instrument_again_rebinds_and_uninstrument_restores(fake_provider: FakeProvider) -> None:
    first, second = context(), context()
    client = chainwarden.instrument(openai_client(fake_provider), first)
    chainwarden.instrument(client, second)
    client.chat.completions.create(model="gpt-4o", messages=HI)
    assert (len(llm_nodes(first)), len(llm_nodes(second))) == (0, 1)  # wrapped once, for `second`
    uninstrument(client)
    client.chat.completions.create(model="gpt-4o", messages=HI)
    assert len(llm_nodes(second)) == 1
    assert len(fake_provider.requests) == 2

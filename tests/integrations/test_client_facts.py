"""What the client integrations keep on a provider call's node besides cost and tokens: the provider, the
model asked for, the response id, finish reasons and cache tokens, and (only when the chain captures
content) the masked messages sent and the reply; and how it reaches OpenTelemetry. Real clients, local
fake provider."""

from __future__ import annotations

from typing import Any

import anthropic
import openai
import pytest

import chainwarden
from chainwarden.containment import ExecutionConfig, ExecutionContext
from chainwarden.otel import export_snapshot

from .conftest import Spans
from .fake_provider import FakeProvider, Reply

pytestmark = pytest.mark.timeout(30)

SECRET = "sk-live-abcdef123456"
ASK = [{"role": "user", "content": f"my key is {SECRET}, what is 6 x 7?"}]
ANSWER = Reply(text="The answer is 42.", input_tokens=1200, output_tokens=90, cache_read_tokens=1000)


def _ctx(capture: bool) -> ExecutionContext:
    config = ExecutionConfig(
        100.0, 20, 2, capture_content=capture, mask=lambda text: text.replace(SECRET, "[key]")
    )
    return ExecutionContext(config)


def _node(ctx: ExecutionContext) -> dict[str, Any]:
    [node] = [n for n in ctx.get_graph_snapshot()["nodes"].values() if n["kind"] == "llm"]
    return node


@pytest.mark.parametrize("stream", [False, True])
def test_openai_chat_facts_and_masked_content(fake_provider: FakeProvider, stream: bool) -> None:
    fake_provider.default = ANSWER
    ctx = _ctx(capture=True)
    client = chainwarden.instrument(
        openai.OpenAI(base_url=fake_provider.openai_base_url, api_key="k", max_retries=0), ctx
    )
    reply = client.chat.completions.create(model="gpt-4o", messages=ASK, stream=stream)
    if stream:
        list(reply)
    meta = _node(ctx)["metadata"]
    assert meta["provider"] == "openai" and meta["request_model"] == "gpt-4o"
    assert meta["response_id"].startswith("chatcmpl") and meta["finish_reasons"] == ["stop"]
    assert (meta["cache_read_tokens"], meta["cache_write_tokens"]) == (1000, 0)
    assert "[key]" in meta["content_input"] and SECRET not in meta["content_input"]
    assert "The answer is 42." in meta["content_output"]
    assert SECRET.encode() not in ctx.get_graph_snapshot_json()


def test_without_capture_no_content_is_kept(fake_provider: FakeProvider) -> None:
    fake_provider.default = ANSWER
    ctx = _ctx(capture=False)
    client = chainwarden.instrument(
        openai.OpenAI(base_url=fake_provider.openai_base_url, api_key="k", max_retries=0), ctx
    )
    client.chat.completions.create(model="gpt-4o", messages=ASK)
    meta = _node(ctx)["metadata"]
    assert "content_input" not in meta and "content_output" not in meta
    assert meta["finish_reasons"] == ["stop"]


@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_facts_reach_the_span(fake_provider: FakeProvider, spans: Spans, stream: bool) -> None:
    fake_provider.default = Reply(
        text="cached", input_tokens=1500, output_tokens=40, cache_read_tokens=1000, cache_write_tokens=200
    )
    ctx = _ctx(capture=True)
    client = chainwarden.instrument(
        anthropic.Anthropic(base_url=fake_provider.anthropic_base_url, api_key="k", max_retries=0), ctx
    )
    message = client.messages.create(model="claude-sonnet-4-6", max_tokens=50, messages=ASK, stream=stream)
    if stream:
        list(message)
    meta = _node(ctx)["metadata"]
    assert meta["finish_reasons"] == ["end_turn"] and meta["response_id"]
    assert (meta["cache_read_tokens"], meta["cache_write_tokens"]) == (1000, 200)
    assert "cached" in meta["content_output"]
    export_snapshot(ctx.get_graph_snapshot_json(), tracer_provider=spans.provider, capture_content=True)
    [span] = [s for s in spans.finished() if s.name.startswith("chat")]
    attrs = span.attributes or {}
    assert span.name == "chat claude-sonnet-4-6"
    assert attrs["gen_ai.provider.name"] == "anthropic"
    assert attrs["gen_ai.response.finish_reasons"] == ("end_turn",)
    assert attrs["gen_ai.usage.cache_creation.input_tokens"] == 200
    assert "[key]" in str(attrs["gen_ai.input.messages"]) and SECRET not in str(
        attrs["gen_ai.input.messages"]
    )


def test_langchain_runs_keep_their_messages_when_captured() -> None:
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel  # noqa: PLC0415
    from langchain_core.messages import AIMessage  # noqa: PLC0415

    from chainwarden.integrations.langchain import ChainwardenCallbackHandler  # noqa: PLC0415

    ctx = _ctx(capture=True)
    reply = AIMessage(content="42", response_metadata={"finish_reason": "stop"})
    model = GenericFakeChatModel(messages=iter([reply]))
    config = {"callbacks": [ChainwardenCallbackHandler(ctx)]}
    model.invoke(f"my key is {SECRET}", config=config)  # type: ignore[arg-type]
    meta = _node(ctx)["metadata"]
    assert meta["provider"] == "genericfakechatmodel" and meta["finish_reasons"] == ["stop"]
    assert "[key]" in meta["content_input"] and SECRET not in meta["content_input"]
    assert meta["content_output"] == '["42"]'

"""``chainwarden.instrument()``: every installed SDK in one line, calls going to the current context or to
the default recorder, and ``uninstrument()`` undoing it exactly. Real openai / anthropic clients against the
local fake provider; real LangChain runs."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.tracers import context as tracer_context
from openai.resources.chat.completions import AsyncCompletions, Completions
from openai.resources.responses import Responses

import chainwarden
from chainwarden.containment import ChainHalted, ExecutionConfig, ExecutionContext
from chainwarden.integrations.langchain import ChainwardenCallbackHandler

from .fake_provider import FakeProvider, Reply

pytestmark = pytest.mark.timeout(30)

HI = [{"role": "user", "content": "hi"}]
ANSWER = Reply(text="42", input_tokens=1200, output_tokens=90, cache_read_tokens=1000)


@pytest.fixture
def everything() -> Iterator[tuple[str, ...]]:
    before = (
        Completions.__dict__["create"],
        AsyncCompletions.__dict__["create"],
        list(tracer_context._configure_hooks),
    )
    names = chainwarden.instrument()
    try:
        yield names
    finally:
        chainwarden.uninstrument()
        after = (
            Completions.__dict__["create"],
            AsyncCompletions.__dict__["create"],
            list(tracer_context._configure_hooks),
        )
        assert after == before  # undone exactly, whatever the test did


def _new_nodes(before: int) -> list[dict[str, Any]]:
    """The default recorder's nodes created since it had ``before`` nodes (it is process-wide)."""
    nodes = list(chainwarden.default_recorder().snapshot()["nodes"].values())
    return [n for n in nodes if int(n["node_id"][1:]) > before]


def _last_id() -> int:
    graph = chainwarden.default_recorder()
    return max(int(n[1:]) for n in graph.snapshot()["nodes"])


def test_every_installed_sdk_is_instrumented_and_outside_calls_go_to_the_default_recorder(
    everything: tuple[str, ...], fake_provider: FakeProvider
) -> None:
    assert everything == ("openai", "anthropic", "langchain")
    assert chainwarden.instrument() == everything  # again: nothing patched twice
    fake_provider.default = ANSWER
    before = _last_id()
    client = openai.OpenAI(base_url=fake_provider.openai_base_url, api_key="k", max_retries=0)
    assert client.chat.completions.create(model="gpt-4o", messages=HI).choices[0].message.content == "42"
    [node] = _new_nodes(before)
    assert (node["kind"], node["name"], node["model"], node["status"]) == (
        "llm",
        "openai.chat.completions",
        "gpt-4o",
        "success",
    )
    assert (node["tokens_in"], node["tokens_out"]) == (1200, 90) and node["cost_usd"] > 0
    assert node["metadata"]["provider"] == "openai" and node["metadata"]["finish_reasons"] == ["stop"]
    assert node["parent_id"] == chainwarden.default_recorder().root_id
    assert "content_input" not in node["metadata"]  # content is opt-in


def test_inside_a_context_calls_are_contained_and_refused_before_the_request(
    everything: tuple[str, ...], fake_provider: FakeProvider
) -> None:
    fake_provider.default = ANSWER
    before = _last_id()
    client = anthropic.Anthropic(base_url=fake_provider.anthropic_base_url, api_key="k", max_retries=0)
    with ExecutionContext(ExecutionConfig(max_cost_usd=1.0, max_steps=1, max_retries_total=1)) as ctx:
        client.messages.create(model="claude-sonnet-4-6", max_tokens=10, messages=HI)
        with pytest.raises(ChainHalted) as refused:
            client.messages.create(model="claude-sonnet-4-6", max_tokens=10, messages=HI)
    assert refused.value.stop_reason == "step_limit_exceeded"
    assert len(fake_provider.requests) == 1
    calls = [n for n in ctx.get_graph_snapshot()["nodes"].values() if n["kind"] == "llm"]
    assert [c["status"] for c in calls] == ["success", "halt"]
    assert calls[0]["metadata"]["provider"] == "anthropic"
    assert _new_nodes(before) == []


def test_a_client_instrumented_for_its_context_is_recorded_once(
    everything: tuple[str, ...], fake_provider: FakeProvider
) -> None:
    fake_provider.default = ANSWER
    before = _last_id()
    mine = ExecutionContext(ExecutionConfig(10.0, 10, 1))  # room for gpt-4o's worst case (no max_tokens)
    client = chainwarden.instrument(
        openai.OpenAI(base_url=fake_provider.openai_base_url, api_key="k", max_retries=0), mine
    )
    other = ExecutionContext(ExecutionConfig(1.0, 10, 1))
    with other:
        client.chat.completions.create(model="gpt-4o", messages=HI)
    assert len([n for n in mine.get_graph_snapshot()["nodes"].values() if n["kind"] == "llm"]) == 1
    assert [n for n in other.get_graph_snapshot()["nodes"].values() if n["kind"] == "llm"] == []
    assert _new_nodes(before) == []
    chainwarden.uninstrument(client)


def test_streams_and_async_clients_outside_any_context(
    everything: tuple[str, ...], fake_provider: FakeProvider
) -> None:
    fake_provider.default = ANSWER
    before = _last_id()
    client = openai.OpenAI(base_url=fake_provider.openai_base_url, api_key="k", max_retries=0)
    stream = client.chat.completions.create(model="gpt-4o", messages=HI, stream=True)
    assert _new_nodes(before)[0]["status"] == "running"  # open while the stream is read
    assert "".join(c.choices[0].delta.content or "" for c in stream) == "42"

    async def ask() -> None:
        aclient = openai.AsyncOpenAI(base_url=fake_provider.openai_base_url, api_key="k", max_retries=0)
        await aclient.responses.create(model="gpt-4o", input="hi")
        await aclient.close()

    asyncio.run(ask())
    streamed, responded = _new_nodes(before)
    assert (streamed["status"], streamed["tokens_out"]) == ("success", 90)
    assert (responded["name"], responded["status"]) == ("openai.responses", "success")


def test_langchain_runs_go_to_the_context_or_the_default_recorder_once(everything: tuple[str, ...]) -> None:
    def model() -> GenericFakeChatModel:
        reply = AIMessage(
            content="ok", usage_metadata={"input_tokens": 5, "output_tokens": 2, "total_tokens": 7}
        )
        return GenericFakeChatModel(messages=iter([reply]))

    before = _last_id()
    model().invoke("outside")
    [outside] = _new_nodes(before)
    assert (outside["name"], outside["tokens_in"]) == ("GenericFakeChatModel", 5)
    ctx = ExecutionContext(ExecutionConfig(1.0, 10, 1))
    with ctx:
        model().invoke("inside")
    explicit = ExecutionContext(ExecutionConfig(1.0, 10, 1))
    model().invoke("explicit", config={"callbacks": [ChainwardenCallbackHandler(explicit)]})
    for chain in (ctx, explicit):
        assert [n["name"] for n in chain.get_graph_snapshot()["nodes"].values() if n["kind"] == "llm"] == [
            "GenericFakeChatModel"
        ]
    assert len(_new_nodes(before)) == 1


def test_uninstrument_undoes_exactly_and_bad_arguments_change_nothing(fake_provider: FakeProvider) -> None:
    original = (
        Completions.__dict__["create"],
        Responses.__dict__["create"],
        list(tracer_context._configure_hooks),
    )
    with pytest.raises(TypeError, match="mask"):
        chainwarden.instrument(mask="redact")  # type: ignore[call-overload]
    with pytest.raises(ValueError, match="max_content_chars"):
        chainwarden.instrument(max_content_chars=-1)
    with pytest.raises(TypeError, match="ctx"):
        chainwarden.instrument(openai.OpenAI(api_key="k"), None)  # type: ignore[call-overload]
    assert (
        Completions.__dict__["create"],
        Responses.__dict__["create"],
        list(tracer_context._configure_hooks),
    ) == original
    assert chainwarden.uninstrument() == ()  # nothing to undo
    chainwarden.instrument(capture_content=True, mask=lambda text: text.upper())
    assert Completions.__dict__["create"] is not original[0]
    assert chainwarden.uninstrument() == ("openai", "anthropic", "langchain")
    assert (
        Completions.__dict__["create"],
        Responses.__dict__["create"],
        list(tracer_context._configure_hooks),
    ) == original
    fake_provider.default = ANSWER
    before = _last_id()
    openai.OpenAI(base_url=fake_provider.openai_base_url, api_key="k").chat.completions.create(
        model="gpt-4o", messages=HI
    )
    assert _new_nodes(before) == []  # not recorded any more


def test_captured_content_outside_a_context_is_masked(fake_provider: FakeProvider) -> None:
    fake_provider.default = ANSWER
    chainwarden.instrument(capture_content=True, mask=lambda text: text.replace("hi", "[masked]"))
    try:
        before = _last_id()
        openai.OpenAI(base_url=fake_provider.openai_base_url, api_key="k").chat.completions.create(
            model="gpt-4o", messages=HI
        )
    finally:
        chainwarden.uninstrument()
    [node] = _new_nodes(before)
    assert "[masked]" in node["metadata"]["content_input"] and '"hi"' not in node["metadata"]["content_input"]
    assert "42" in node["metadata"]["content_output"]

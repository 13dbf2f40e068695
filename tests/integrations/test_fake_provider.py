"""The fake provider answers the REAL openai and anthropic clients like the providers do."""

from __future__ import annotations

import json

import anthropic
import openai
import pytest

from .fake_provider import FakeProvider, Reply, ToolCall

USAGE = Reply(
    text="The answer is 42.", input_tokens=120, output_tokens=9, cache_read_tokens=100, cache_write_tokens=0
)


def openai_client(fake: FakeProvider, max_retries: int = 0) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=fake.openai_base_url, api_key="test-key", max_retries=max_retries, timeout=10.0
    )


def anthropic_client(fake: FakeProvider) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        base_url=fake.anthropic_base_url, api_key="test-key", max_retries=0, timeout=10.0
    )


def test_openai_chat_completion_plain(fake_provider: FakeProvider) -> None:
    fake_provider.default = USAGE
    with openai_client(fake_provider) as client:
        completion = client.chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": "hi"}]
        )
    assert completion.choices[0].message.content == "The answer is 42."
    assert completion.model == "gpt-4o"
    assert completion.usage is not None
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (120, 9)
    assert completion.usage.prompt_tokens_details is not None
    assert completion.usage.prompt_tokens_details.cached_tokens == 100
    [request] = fake_provider.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer test-key"
    assert request.body["messages"] == [{"role": "user", "content": "hi"}]


def test_openai_chat_completion_streamed_with_usage(fake_provider: FakeProvider) -> None:
    fake_provider.default = USAGE
    with openai_client(fake_provider) as client:
        stream = client.chat.completions.create(
            model="gpt-4o-mini",
            messages=[{"role": "user", "content": "hi"}],
            stream=True,
            stream_options={"include_usage": True},
        )
        chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "The answer is 42."
    assert len([c for c in chunks if c.choices and c.choices[0].delta.content]) == 3
    usage = chunks[-1].usage
    assert usage is not None and chunks[-1].choices == []
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (120, 9, 129)
    assert fake_provider.requests[0].streamed


def test_openai_stream_without_include_usage_has_no_usage(fake_provider: FakeProvider) -> None:
    with openai_client(fake_provider) as client:
        chunks = list(
            client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "x"}], stream=True
            )
        )
    assert all(c.usage is None for c in chunks)
    assert chunks[-1].choices[0].finish_reason == "stop"


def test_openai_chat_tool_call_plain_and_streamed(fake_provider: FakeProvider) -> None:
    call = ToolCall("get_weather", {"city": "Paris"}, call_id="call_7")
    fake_provider.script(Reply(tool_call=call), Reply(tool_call=call))
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
    with openai_client(fake_provider) as client:
        plain = client.chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": "weather?"}], tools=tools
        )
        streamed = client.chat.completions.stream(
            model="gpt-4o", messages=[{"role": "user", "content": "weather?"}], tools=tools
        )
        with streamed as events:
            final = events.get_final_completion()
    [tool_call] = plain.choices[0].message.tool_calls or []
    assert plain.choices[0].finish_reason == "tool_calls"
    assert (tool_call.id, tool_call.function.name) == ("call_7", "get_weather")
    assert json.loads(tool_call.function.arguments) == {"city": "Paris"}
    [streamed_call] = final.choices[0].message.tool_calls or []
    assert json.loads(streamed_call.function.arguments) == {"city": "Paris"}


def test_openai_responses_plain_and_streamed(fake_provider: FakeProvider) -> None:
    fake_provider.default = USAGE
    with openai_client(fake_provider) as client:
        plain = client.responses.create(model="gpt-4.1", input="hi")
        with client.responses.stream(model="gpt-4.1", input="hi") as stream:
            deltas = [e.delta for e in stream if e.type == "response.output_text.delta"]
            final = stream.get_final_response()
    assert plain.output_text == "The answer is 42."
    assert plain.usage is not None
    assert (plain.usage.input_tokens, plain.usage.output_tokens) == (120, 9)
    assert plain.usage.input_tokens_details.cached_tokens == 100
    assert "".join(deltas) == "The answer is 42."
    assert final.usage is not None and final.usage.output_tokens == 9
    assert [r.path for r in fake_provider.requests] == ["/v1/responses", "/v1/responses"]


def test_openai_responses_tool_call(fake_provider: FakeProvider) -> None:
    fake_provider.script(Reply(tool_call=ToolCall("lookup", {"q": "x"})))
    with openai_client(fake_provider) as client:
        result = client.responses.create(model="gpt-4.1", input="find x")
    [item] = result.output
    assert item.type == "function_call"
    assert (item.name, json.loads(item.arguments)) == ("lookup", {"q": "x"})


def test_anthropic_messages_plain(fake_provider: FakeProvider) -> None:
    fake_provider.default = Reply(
        text="Bonjour.", input_tokens=1000, output_tokens=20, cache_read_tokens=600, cache_write_tokens=300
    )
    with anthropic_client(fake_provider) as client:
        message = client.messages.create(
            model="claude-fake-1", max_tokens=100, messages=[{"role": "user", "content": "hi"}]
        )
    assert [b.text for b in message.content if b.type == "text"] == ["Bonjour."]
    assert message.stop_reason == "end_turn"
    usage = message.usage
    # Anthropic's input_tokens is the uncached part; the three add up to all input tokens.
    assert (usage.input_tokens, usage.cache_read_input_tokens, usage.cache_creation_input_tokens) == (
        100,
        600,
        300,
    )
    assert usage.output_tokens == 20
    [request] = fake_provider.requests
    assert request.path == "/v1/messages"
    # The key travels as x-api-key or, in newer clients, as a bearer token.
    assert "test-key" in (request.headers.get("x-api-key"), request.headers.get("authorization", "")[7:])


def test_anthropic_messages_streamed_usage_from_start_and_delta(fake_provider: FakeProvider) -> None:
    fake_provider.default = Reply(
        text="Streaming works.", input_tokens=50, output_tokens=6, cache_read_tokens=40
    )
    with anthropic_client(fake_provider) as client:
        raw_events = list(
            client.messages.create(
                model="claude-fake-2",
                max_tokens=64,
                messages=[{"role": "user", "content": "hi"}],
                stream=True,
            )
        )
        with client.messages.stream(
            model="claude-fake-2", max_tokens=64, messages=[{"role": "user", "content": "hi"}]
        ) as stream:
            text = "".join(stream.text_stream)
            final = stream.get_final_message()
    types = [e.type for e in raw_events]
    assert types[0] == "message_start" and types[-2:] == ["message_delta", "message_stop"]
    start = raw_events[0]
    assert start.type == "message_start"
    assert (start.message.usage.input_tokens, start.message.usage.cache_read_input_tokens) == (10, 40)
    delta = raw_events[-2]
    assert delta.type == "message_delta" and delta.usage.output_tokens == 6
    assert text == "Streaming works."
    assert (final.usage.input_tokens, final.usage.output_tokens, final.usage.cache_read_input_tokens) == (
        10,
        6,
        40,
    )


def test_anthropic_tool_use_plain_and_streamed(fake_provider: FakeProvider) -> None:
    call = ToolCall("get_weather", {"city": "Rome"}, call_id="toolu_1")
    fake_provider.script(Reply(tool_call=call), Reply(tool_call=call))
    tools = [{"name": "get_weather", "input_schema": {"type": "object"}}]
    with anthropic_client(fake_provider) as client:
        plain = client.messages.create(
            model="claude-fake-1", max_tokens=64, messages=[{"role": "user", "content": "w"}], tools=tools
        )
        with client.messages.stream(
            model="claude-fake-1", max_tokens=64, messages=[{"role": "user", "content": "w"}], tools=tools
        ) as stream:
            final = stream.get_final_message()
    for message in (plain, final):
        [block] = message.content
        assert block.type == "tool_use"
        assert (block.id, block.name, block.input) == ("toolu_1", "get_weather", {"city": "Rome"})
        assert message.stop_reason == "tool_use"


@pytest.mark.parametrize("status", [429, 500])
def test_errors_reach_the_clients_typed(fake_provider: FakeProvider, status: int) -> None:
    fake_provider.fail_next(status, times=2)
    expected_openai = openai.RateLimitError if status == 429 else openai.InternalServerError
    expected_anthropic = anthropic.RateLimitError if status == 429 else anthropic.InternalServerError
    with openai_client(fake_provider) as client, pytest.raises(expected_openai) as err:
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    assert err.value.status_code == status
    with anthropic_client(fake_provider) as aclient, pytest.raises(expected_anthropic):
        aclient.messages.create(model="m", max_tokens=5, messages=[{"role": "user", "content": "x"}])
    # Once the scripted failures are used up, the next call succeeds.
    with openai_client(fake_provider) as client:
        ok = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    assert ok.choices[0].message.content == fake_provider.default.text


def test_client_retries_a_429_then_succeeds(fake_provider: FakeProvider) -> None:
    fake_provider.fail_next(429, times=1, retry_after_s=0.0)
    with openai_client(fake_provider, max_retries=2) as client:
        completion = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    assert completion.choices[0].message.content == fake_provider.default.text
    assert fake_provider.paths() == ["/v1/chat/completions"] * 2


async def test_async_clients(fake_provider: FakeProvider) -> None:
    fake_provider.default = USAGE
    async with openai.AsyncOpenAI(
        base_url=fake_provider.openai_base_url, api_key="k", max_retries=0
    ) as client:
        stream = await client.chat.completions.create(
            model="gpt-4o",
            messages=[{"role": "user", "content": "x"}],
            stream=True,
            stream_options={"include_usage": True},
        )
        chunks = [c async for c in stream]
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == 9
    async with anthropic.AsyncAnthropic(
        base_url=fake_provider.anthropic_base_url, api_key="k", max_retries=0
    ) as aclient:
        message = await aclient.messages.create(
            model="claude", max_tokens=5, messages=[{"role": "user", "content": "x"}]
        )
    assert message.usage.output_tokens == 9


def test_unknown_path_is_a_404(fake_provider: FakeProvider) -> None:
    with openai_client(fake_provider) as client, pytest.raises(openai.NotFoundError):
        client.embeddings.create(model="e", input="x")

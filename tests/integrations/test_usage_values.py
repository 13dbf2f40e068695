"""Hostile usage values from any integration (huge, negative, float, NaN, text, bool, null) become a
``UsageError`` naming the field that ends the call: nothing is left running or reserved, the caller gets a
clear error, never an ``OverflowError`` from deep inside (docs/design.md §23, §30). The values reach the
integrations through the real SDK objects: the openai / anthropic clients parse them from the fake
provider's JSON, LangChain carries them in ``AIMessage.usage_metadata``."""

from __future__ import annotations

import math
from typing import Any

import anthropic
import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, LLMResult

import chainwarden
from chainwarden.containment import ChainHalted, ExecutionConfig, ExecutionContext
from chainwarden.integrations import UsageError
from chainwarden.integrations._usage import Usage, count
from chainwarden.integrations.langchain import ChainwardenCallbackHandler, usage_of

from .fake_provider import FakeProvider, Reply

pytestmark = pytest.mark.timeout(120)

HI = [{"role": "user", "content": "hi"}]
HOSTILE: list[Any] = [2**64, 2**63, -1, 1.5, 12.0, math.nan, "12", True, [3], {"n": 1}]
# What still reaches the integration once the SDK parsed the provider's JSON: openai and anthropic coerce
# "12", 12.0 and true to ints themselves, and keep these.
SURVIVES_THE_SDKS: list[Any] = [2**64, 2**63, -1, 1.5, math.nan]
FINE: list[Any] = [0, 7, 2**63 - 1, None]


def context() -> ExecutionContext:
    return ExecutionContext(ExecutionConfig(max_cost_usd=100.0, max_steps=1000, max_retries_total=1000))


def settled(ctx: ExecutionContext) -> list[str]:
    """The statuses of the chain's calls, checking nothing is left running or reserved."""
    nodes = [n for n in ctx.get_graph_snapshot()["nodes"].values() if n["kind"] == "llm"]
    assert all(n["status"] != "running" for n in nodes)
    assert ctx.reserved_usd == 0.0
    return [n["status"] for n in nodes]


def json_value(value: Any) -> Any:
    return "NaN" if isinstance(value, float) and math.isnan(value) else value


@pytest.mark.parametrize("value", HOSTILE, ids=repr)
def test_count_refuses_what_is_not_a_token_count(value: Any) -> None:
    with pytest.raises(UsageError, match=r"usage\.prompt_tokens") as caught:
        count(value, "usage.prompt_tokens")
    assert caught.value.field == "usage.prompt_tokens"


@pytest.mark.parametrize("value", FINE, ids=repr)
def test_count_keeps_token_counts(value: Any) -> None:
    assert count(value, "n") == (value or 0)


def test_counts_that_add_up_past_2_63_are_refused() -> None:
    usage = Usage("openai", "gpt-4o", input_tokens=2**63 - 1, cache_read_tokens=1, cache_write_tokens=2**62)
    usage.input_excludes_cache = True
    with pytest.raises(UsageError, match="input_tokens"):
        usage.checked()


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
@pytest.mark.parametrize("value", SURVIVES_THE_SDKS, ids=repr)
def test_openai_usage_values(fake_provider: FakeProvider, value: Any, stream: bool) -> None:
    fake_provider.default = Reply(usage_override={"prompt_tokens": json_value(value)})
    ctx = context()
    client = chainwarden.instrument(
        openai.OpenAI(base_url=fake_provider.openai_base_url, api_key="k", max_retries=0), ctx
    )
    with pytest.raises(UsageError, match="prompt_tokens"):
        reply = client.chat.completions.create(model="gpt-4o", messages=HI, max_tokens=10, stream=stream)
        if stream:
            list(reply)
    assert settled(ctx) == ["fail"]
    assert ctx.get_snapshot().nodes[0].error_message is not None


@pytest.mark.parametrize("value", SURVIVES_THE_SDKS, ids=repr)
async def test_anthropic_usage_values(fake_provider: FakeProvider, value: Any) -> None:
    # Streamed: message_start carries the hostile count; message_delta never comes.
    fake_provider.default = Reply(usage_override={"cache_read_input_tokens": json_value(value)})
    ctx = context()
    client = chainwarden.instrument(
        anthropic.AsyncAnthropic(base_url=fake_provider.anthropic_base_url, api_key="k", max_retries=0), ctx
    )
    with pytest.raises(UsageError, match="cache_read_input_tokens"):
        await client.messages.create(model="claude-sonnet-4-6", max_tokens=10, messages=HI)
    stream = await client.messages.create(model="claude-sonnet-4-6", max_tokens=10, messages=HI, stream=True)
    with pytest.raises(UsageError, match="cache_read_input_tokens"):
        async for _event in stream:
            pass
    await client.close()
    assert settled(ctx) == ["fail", "fail"]


def message(value: Any) -> AIMessage:
    """A real AIMessage; one that LangChain's own validation would refuse is built as an integration
    that skips validation builds it (``model_construct``)."""
    usage = {"input_tokens": value, "output_tokens": 5, "total_tokens": 5}
    try:
        return AIMessage(content="x", usage_metadata=usage)  # type: ignore[arg-type]
    except ValueError:
        return AIMessage.model_construct(content="x", usage_metadata=usage, type="ai", tool_calls=[])


@pytest.mark.parametrize("value", [v for v in HOSTILE if v not in ("12", True) and v != 12.0], ids=repr)
def test_langchain_usage_values(value: Any) -> None:
    # Today a token count of 2**64 lets an OverflowError escape invoke() and leaves the call running.
    ctx = context()
    handler = ChainwardenCallbackHandler(ctx, cost_estimate_hint=0.5)
    model = GenericFakeChatModel(messages=iter([message(value)]))
    with pytest.raises(UsageError, match="input_tokens"):
        model.invoke("hi", config={"callbacks": [handler]})
    assert settled(ctx) == ["fail"]
    # Charged its estimate: it ran, what it cost is unknown (a failed call's reported cost counts).
    assert ctx.get_snapshot().nodes[0].error_message is not None


def test_a_hostile_count_stops_the_chain_once_retries_are_spent() -> None:
    ctx = ExecutionContext(ExecutionConfig(max_cost_usd=100.0, max_steps=100, max_retries_total=1))
    handler = ChainwardenCallbackHandler(ctx)
    model = GenericFakeChatModel(messages=iter([message(2**64)] * 3))
    outcomes: list[BaseException] = []
    for _ in range(3):
        try:
            model.invoke("hi", config={"callbacks": [handler]})
        except (UsageError, ChainHalted) as error:
            outcomes.append(error)
            if isinstance(error, ChainHalted):
                break
    halted = outcomes[-1]
    assert isinstance(halted, ChainHalted) and halted.stop_reason == "provider_error"
    assert isinstance(halted.__cause__, UsageError)  # the chain says why it stopped
    assert set(settled(ctx)) <= {"fail", "halt"}  # nothing running, nothing reserved


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.dictionaries(
        st.sampled_from(["input_tokens", "output_tokens", "total_tokens", "input_token_details"]),
        st.one_of(
            st.integers(min_value=-(2**70), max_value=2**70),
            st.floats(allow_nan=True, allow_infinity=True),
            st.text(max_size=5),
            st.booleans(),
            st.none(),
            st.dictionaries(st.sampled_from(["cache_read", "cache_creation"]), st.integers(-5, 2**64)),
        ),
    )
)
def test_langchain_usage_reader_fuzzed(meta: dict[str, Any]) -> None:
    """Any usage_metadata LangChain may carry: read as counts, or refused with UsageError, nothing else."""
    reply = AIMessage.model_construct(content="x", usage_metadata=meta, type="ai", tool_calls=[])
    response = LLMResult(generations=[[ChatGeneration(message=reply)]])
    usage = Usage("p", "m")
    try:
        usage_of(response, usage)
    except UsageError:
        return
    total = usage.total_input()
    assert 0 <= total < 2**63 and 0 <= usage.output_tokens < 2**63

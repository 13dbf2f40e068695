"""``WrapOptions(response_hint=...)`` and ``reconciliation_callback`` (docs/containment.md "Streamed calls,
response usage and reconciliation"): a call that reported no cost is charged its response's usage, priced
as the instrumented clients price theirs (``chainwarden.pricing``, genai-prices); the callback hears the
estimate against what was charged."""

from __future__ import annotations

import logging
from decimal import Decimal
from typing import Any

import pytest
from anthropic.types import Message
from openai.types.chat import ChatCompletion

from chainwarden.containment import ExecutionConfig, ExecutionContext, WrapOptions, report_cost
from chainwarden.pricing import price_usage
from chainwarden.shield import Decision


def chat_completion(model: str, prompt: int, completion: int, cached: int = 0) -> ChatCompletion:
    return ChatCompletion.model_validate(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1,
            "model": model,
            "choices": [
                {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "hi"}}
            ],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
                "prompt_tokens_details": {"cached_tokens": cached},
            },
        }
    )


def anthropic_message(model: str, fresh: int, output: int, cache_read: int) -> Message:
    return Message.model_validate(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [{"type": "text", "text": "hi"}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": fresh,
                "output_tokens": output,
                "cache_read_input_tokens": cache_read,
                "cache_creation_input_tokens": 0,
            },
        }
    )


class Reconciler:
    def __init__(self) -> None:
        self.seen: list[tuple[float, float]] = []

    def on_reconcile(self, estimated_usd: float, actual_usd: float) -> None:
        self.seen.append((estimated_usd, actual_usd))


def ctx_with(**kwargs: Any) -> ExecutionContext:
    return ExecutionContext(ExecutionConfig(max_cost_usd=10.0, max_steps=100, max_retries_total=3), **kwargs)


def test_an_openai_response_is_priced_by_its_usage_and_reconciled() -> None:
    response = chat_completion("gpt-4o-2024-08-06", prompt=1_000, completion=200, cached=400)
    expected = price_usage(
        provider="openai",
        model="gpt-4o-2024-08-06",
        input_tokens=1_000,
        output_tokens=200,
        cache_read_tokens=400,
    )
    assert expected is not None and expected > 0
    ctx = ctx_with()
    reconciler = Reconciler()
    opts = WrapOptions(
        "chat", cost_estimate_hint=0.01, response_hint=response, reconciliation_callback=reconciler
    )
    assert ctx.wrap_llm_call(lambda: response, opts) is Decision.ALLOW
    record = ctx.get_snapshot().nodes[0]
    assert record.cost_usd == float(expected)
    assert reconciler.seen == [(0.01, float(expected))]
    node = ctx.get_graph_snapshot()["nodes"][record.node_id]
    assert (node["tokens_in"], node["tokens_out"], node["cost_usd"]) == (1_000, 200, float(expected))


def test_an_anthropic_message_counts_its_cache_tokens_as_input() -> None:
    message = anthropic_message("claude-3-5-sonnet-20241022", fresh=100, output=50, cache_read=1_000)
    expected = price_usage(
        provider="anthropic",
        model="claude-3-5-sonnet-20241022",
        input_tokens=1_100,
        output_tokens=50,
        cache_read_tokens=1_000,
    )
    ctx = ctx_with()
    ctx.wrap_llm_call(lambda: None, WrapOptions(response_hint=message))
    assert ctx.get_snapshot().nodes[0].cost_usd == float(expected or Decimal(-1))


@pytest.mark.parametrize(
    "hint",
    [
        {"usage": {"prompt_tokens": 10, "completion_tokens": 5}},  # OpenAI JSON, the call's model
        {"model": "gpt-4o", "usage": {"input_tokens": 10, "output_tokens": 5}},  # provider found by model
    ],
)
def test_response_json_as_a_dict(hint: dict[str, Any]) -> None:
    ctx = ctx_with()
    ctx.wrap_llm_call(lambda: None, WrapOptions(model="gpt-4o", response_hint=hint))
    expected = price_usage(provider="openai", model="gpt-4o", input_tokens=10, output_tokens=5)
    assert ctx.get_snapshot().nodes[0].cost_usd == float(expected or Decimal(-1))


def test_a_reported_cost_wins_over_the_response_hint() -> None:
    ctx = ctx_with()
    reconciler = Reconciler()
    response = chat_completion("gpt-4o", 1_000, 1_000)

    def call() -> None:
        report_cost(0.5, tokens_in=1, tokens_out=2)

    ctx.wrap_llm_call(call, WrapOptions(response_hint=response, reconciliation_callback=reconciler))
    assert ctx.get_snapshot().nodes[0].cost_usd == 0.5
    assert reconciler.seen == [(0.0, 0.5)]


def test_an_unknown_model_is_charged_the_estimate_with_its_tokens(caplog: pytest.LogCaptureFixture) -> None:
    ctx = ctx_with()
    hint = {"model": "in-house-model-7", "usage": {"input_tokens": 30, "output_tokens": 7}}
    with caplog.at_level(logging.WARNING):
        ctx.wrap_llm_call(lambda: None, WrapOptions("x", 0.25, response_hint=hint))
    record = ctx.get_snapshot().nodes[0]
    node = ctx.get_graph_snapshot()["nodes"][record.node_id]
    assert (record.cost_usd, node["tokens_in"], node["tokens_out"]) == (0.25, 30, 7)
    assert "in-house-model-7" in caplog.text


@pytest.mark.parametrize("hint", [object(), {"text": "no usage"}, {"usage": "?"}, 42])
def test_a_hint_without_usage_leaves_the_estimate(hint: object) -> None:
    ctx = ctx_with()
    assert ctx.wrap_llm_call(lambda: None, WrapOptions("x", 0.2, response_hint=hint)) is Decision.ALLOW
    assert ctx.get_snapshot().nodes[0].cost_usd == 0.2


def test_tool_calls_are_never_priced_by_a_hint() -> None:
    ctx = ctx_with()
    ctx.wrap_tool_call(lambda: None, WrapOptions(response_hint=chat_completion("gpt-4o", 10**6, 10**6)))
    assert ctx.get_snapshot().nodes[0].cost_usd == 0.0


def test_the_hint_counts_against_the_ceiling() -> None:
    response = chat_completion("gpt-4o", prompt=1_000_000, completion=0)  # $2.50
    ctx = ExecutionContext(ExecutionConfig(max_cost_usd=1.0, max_steps=10, max_retries_total=1))
    assert ctx.wrap_llm_call(lambda: None, WrapOptions(response_hint=response)) is Decision.ALLOW
    assert ctx.wrap_llm_call(lambda: None) is Decision.HALT
    assert ctx.last_stop_reason == "budget_exceeded"


def test_metrics_hear_the_tokens_and_a_failing_callback_is_only_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Metrics:
        def __init__(self) -> None:
            self.tokens: list[tuple[str, int, int]] = []

        def record_cost(self, agent_id: str, cost_usd: float) -> None: ...
        def record_decision(self, agent_id: str, decision: str) -> None: ...
        def record_tokens(self, agent_id: str, tokens_in: int, tokens_out: int) -> None:
            self.tokens.append((agent_id, tokens_in, tokens_out))

    class Broken:
        def on_reconcile(self, estimated_usd: float, actual_usd: float) -> None:
            raise RuntimeError("ledger offline")

    metrics = Metrics()
    ctx = ctx_with(metrics=metrics)
    opts = WrapOptions(response_hint=chat_completion("gpt-4o", 10, 5), reconciliation_callback=Broken())
    with caplog.at_level(logging.WARNING, logger="chainwarden.containment"):
        assert ctx.wrap_llm_call(lambda: None, opts) is Decision.ALLOW
    assert metrics.tokens == [(ctx.metadata.chain_id, 10, 5)]
    assert "on_reconcile raised" in caplog.text and "ledger offline" in caplog.text


def test_reconciliation_hears_only_successes() -> None:
    ctx = ctx_with()
    reconciler = Reconciler()

    def fail() -> None:
        raise TimeoutError("provider")

    ctx.wrap_llm_call(fail, WrapOptions(cost_estimate_hint=0.1, reconciliation_callback=reconciler))
    assert reconciler.seen == []
    with pytest.raises(TypeError, match="reconciliation_callback must provide a callable on_reconcile"):
        WrapOptions(reconciliation_callback=print)


def test_async_wraps_price_hints_too() -> None:
    import asyncio  # noqa: PLC0415

    async def main() -> float:
        ctx = ctx_with()

        async def call() -> None:
            await asyncio.sleep(0)

        await ctx.wrap_llm_call_async(call, WrapOptions(response_hint=chat_completion("gpt-4o", 100, 0)))
        return ctx.get_snapshot().nodes[0].cost_usd

    expected = price_usage(provider="openai", model="gpt-4o", input_tokens=100, output_tokens=0)
    assert asyncio.run(main()) == float(expected or Decimal(-1))

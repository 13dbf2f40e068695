"""`chainwarden.runtime.testing.check_executor` against every executor the package ships — the in-process
one, the Anthropic tool loop and the LangGraph executor over their real libraries and the local fake
provider, the Claude Agent SDK executor on a recorded stream and with its real CLI — and against broken
executors, whose every broken rule it names."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import anthropic
import pytest
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage
from langgraph.graph import START, MessagesState, StateGraph

from chainwarden.billing import UsageFact
from chainwarden.runtime import (
    AiEvent,
    AnthropicExecutor,
    ClaudeAgentExecutor,
    Done,
    GraphFinal,
    GraphRunRequest,
    GraphRunResult,
    InProcGraphExecutor,
    LangGraphExecutor,
    LlmResult,
    Once,
    RunContext,
    TextDelta,
    Usage,
    UsageReport,
)
from chainwarden.runtime.testing import ContractViolation, check_executor

from .fake_provider import FakeProvider, Reply
from .test_claude_agent_executor import PRICES as CLAUDE_PRICES
from .test_claude_agent_executor import Replaying, delta, offline, result, started, stopped

MODEL = "claude-test-1"


def req(graph_id: str, run_id: str = "run-contract", model: str = MODEL) -> GraphRunRequest:
    return GraphRunRequest(
        graph_id=graph_id,
        messages=[{"role": "user", "content": "Hi"}],
        model=model,
        billing_account_id="acct-1",
        virtual_key_id="vk-1",
        run_id=run_id,
        attempt=2,
    )


async def two_calls(ctx: RunContext) -> str:
    for unit in ("c-1", "c-2"):

        async def call(unit: str = unit) -> LlmResult:
            await asyncio.sleep(0.01)
            return LlmResult(content=unit, usage_unit_id=unit, input_tokens=3, cost_usd=Decimal("0.0001"))

        ctx.emit(TextDelta(unit))
        await ctx.call_llm(call)
    return "done"


async def broken_graph(ctx: RunContext) -> str:
    raise RuntimeError("graph bug")


async def test_the_in_process_executor_keeps_the_contract() -> None:
    executor = InProcGraphExecutor({"ok": two_calls, "broken": broken_graph})
    check = await check_executor(executor, req("inproc:ok"), replay=True)
    assert check.keys == ["run-contract/2/c-1", "run-contract/2/c-2"] and check.final is not None
    failed = await check_executor(executor, req("inproc:broken"))
    assert failed.final is not None and failed.final.error == "internal"
    executor.close()


async def test_the_anthropic_executor_keeps_the_contract(fake_provider: FakeProvider) -> None:
    fake_provider.script(*(Reply(text="Hello!", response_id=f"msg_{i}") for i in range(3)))
    async with anthropic.AsyncAnthropic(
        base_url=fake_provider.anthropic_base_url, api_key="t", max_retries=0
    ) as c:
        executor = AnthropicExecutor(
            c, price_overrides={("anthropic", MODEL): {"input_mtok": 3, "output_mtok": 15}}
        )
        check = await check_executor(executor, req("anthropic:chat"))
        executor.close()
    assert [f.source for f in check.facts] == ["anthropic_sdk"]


async def test_the_langgraph_executor_keeps_the_contract() -> None:
    class Model(FakeMessagesListChatModel):
        def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> Any:
            return {
                **super()._get_ls_params(stop=stop, **kwargs),
                "ls_provider": "acme",
                "ls_model_name": "m1",
            }

    usage = {"input_tokens": 10, "output_tokens": 2, "total_tokens": 12}
    model = Model(responses=[AIMessage("Hi!", response_metadata={"id": "resp-1"}, usage_metadata=usage)] * 4)

    async def chat(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("chat", chat)
    graph.add_edge(START, "chat")
    executor = LangGraphExecutor(
        {"chat": graph.compile()}, price_overrides={("acme", "m1"): {"input_mtok": 1, "output_mtok": 2}}
    )
    check = await check_executor(executor, req("langgraph:chat", model="m1"), replay=True)
    assert check.keys == ["run-contract/2/resp-1"]
    executor.close()


async def test_the_claude_agent_executor_keeps_the_contract_on_a_recorded_stream() -> None:
    messages = [started("msg_1", 10), *delta(2, "Hi"), stopped(), result("Hi")]
    executor = Replaying(messages, price_overrides=CLAUDE_PRICES)
    check = await check_executor(executor, req("claude:chat"), replay=True)
    assert check.keys == ["run-contract/2/msg_1"] and check.facts[0].source == "anthropic_sdk"


@pytest.mark.slow
async def test_the_claude_agent_executor_keeps_the_contract_with_its_cli(
    fake_provider: FakeProvider, tmp_path: Path
) -> None:
    fake_provider.script(*(Reply(text="Hello there.", response_id=f"msg_{i}") for i in range(3)))
    executor = ClaudeAgentExecutor(
        options=offline(fake_provider, tmp_path / "home"), price_overrides=CLAUDE_PRICES
    )
    check = await check_executor(executor, req("claude:chat"), timeout_s=60)
    assert check.keys == ["run-contract/2/msg_0"] and check.final is not None and check.final.ok
    executor.close()


class Broken:
    """Breaks several rules at once: two Done events, facts of another run, a final naming another run."""

    def run_graph(self, request: GraphRunRequest) -> GraphRunResult:
        final: Once[GraphFinal] = Once()

        async def stream() -> AsyncIterator[AiEvent]:
            fact = UsageFact(
                run_id="other",
                attempt=0,
                source="x",
                billing_account_id="acct-1",
                virtual_key_id="vk-1",
                usage_unit_id="u",
            )
            yield UsageReport(fact)
            yield UsageReport(fact)
            yield Done()
            final.set(GraphFinal(ok=True, run_id="elsewhere", request_id="r", usage=Usage()))
            yield Done()

        return GraphRunResult(stream=stream(), final=final)


class Hangs:
    """Never ends its stream and never resolves its final."""

    def run_graph(self, request: GraphRunRequest) -> GraphRunResult:
        async def stream() -> AsyncIterator[AiEvent]:
            yield TextDelta("...")
            await asyncio.sleep(3600)
            yield Done()

        return GraphRunResult(stream=stream(), final=Once())


async def test_a_broken_executor_is_told_every_rule_it_breaks() -> None:
    with pytest.raises(ContractViolation) as caught:
        await check_executor(Broken(), req("broken:x"), timeout_s=1.0)
    problems = "\n".join(caught.value.problems)
    assert "2 Done events" in problems
    assert "final names run 'elsewhere'" in problems
    assert "run_id is 'other'" in problems and "attempt is 0" in problems
    assert "share a key" in problems
    assert "after a cancel, final did not resolve within 1 s" in problems
    with pytest.raises(ContractViolation, match=r"did not end within 0\.2 s"):
        await check_executor(Hangs(), req("hangs:x"), timeout_s=0.2)
    with pytest.raises(TypeError, match="run_graph"):
        await check_executor(object(), req("x:y"))  # type: ignore[arg-type]

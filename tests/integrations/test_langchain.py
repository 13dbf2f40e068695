"""ChainwardenCallbackHandler and contained_node with the real langchain-core fake chat models and a real
langgraph StateGraph: every LLM and tool call is a contained, priced call; a refusal stops the run."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel, GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph

from chainwarden.containment import CallRefused, ChainHalted, ExecutionConfig, ExecutionContext
from chainwarden.integrations.langchain import ChainwardenCallbackHandler
from chainwarden.integrations.langgraph import contained_node
from chainwarden.shield import Decision

pytestmark = pytest.mark.timeout(30)

RATES = {("genericfakechatmodel", "house-7b"): {"input_mtok": "2", "output_mtok": "10"}}
META = {"ls_model_name": "house-7b"}


def context(max_cost_usd: float = 10.0, max_steps: int = 50, retries: int = 3) -> ExecutionContext:
    return ExecutionContext(
        ExecutionConfig(max_cost_usd=max_cost_usd, max_steps=max_steps, max_retries_total=retries)
    )


def answer(text: str, tokens_in: int = 1000, tokens_out: int = 100, cached: int = 0) -> AIMessage:
    usage: dict[str, Any] = {
        "input_tokens": tokens_in,
        "output_tokens": tokens_out,
        "total_tokens": tokens_in + tokens_out,
    }
    if cached:
        usage["input_token_details"] = {"cache_read": cached}
    return AIMessage(content=text, usage_metadata=usage)  # type: ignore[arg-type]


def nodes(ctx: ExecutionContext) -> list[dict[str, Any]]:
    return [n for n in ctx.get_graph_snapshot()["nodes"].values() if n["kind"] != "system"]


@tool
def word_count(text: str) -> int:
    """Counts the words of a text."""
    return len(text.split())


def test_chat_model_usage_is_priced_and_settled() -> None:
    ctx = context()
    handler = ChainwardenCallbackHandler(ctx, price_overrides=RATES)
    assert handler.raise_error is True
    model = GenericFakeChatModel(messages=iter([answer("hello", 1000, 100, cached=400)]))
    reply = model.invoke("hi", config={"callbacks": [handler], "metadata": META})
    assert reply.content == "hello"
    [node] = nodes(ctx)
    assert (node["kind"], node["name"], node["model"]) == ("llm", "GenericFakeChatModel", "house-7b")
    assert (node["tokens_in"], node["tokens_out"]) == (1000, 100)
    # 1,000 input tokens (400 of them cached, no cache price: the input price) at $2/M + 100 at $10/M.
    assert node["cost_usd"] == pytest.approx(0.002 + 0.001)
    assert ctx.get_snapshot().cost_usd_accumulated == pytest.approx(0.003)


def test_unpriced_model_records_tokens_and_charges_the_estimate() -> None:
    ctx = context()
    handler = ChainwardenCallbackHandler(ctx, cost_estimate_hint=0.05)
    model = GenericFakeChatModel(messages=iter([answer("x", 30, 4)]))
    model.invoke("hi", config={"callbacks": [handler]})
    [node] = nodes(ctx)
    assert (node["model"], node["tokens_in"], node["tokens_out"], node["cost_usd"]) == (None, 30, 4, 0.05)


def test_tool_calls_are_contained_tool_calls() -> None:
    ctx = context()
    handler = ChainwardenCallbackHandler(ctx)
    assert word_count.invoke({"text": "one two three"}, config={"callbacks": [handler]}) == 3
    [node] = nodes(ctx)
    assert (node["kind"], node["name"], node["status"]) == ("tool", "word_count", "success")


def test_refusal_stops_the_chain_before_the_model_runs() -> None:
    ctx = context(max_steps=2)
    handler = ChainwardenCallbackHandler(ctx)
    model = FakeListChatModel(responses=["a", "b", "c", "d"])
    chain = model | (lambda message: message.content)
    assert chain.invoke("1", config={"callbacks": [handler]}) == "a"
    assert chain.invoke("2", config={"callbacks": [handler]}) == "b"
    with pytest.raises(ChainHalted) as caught:
        chain.invoke("3", config={"callbacks": [handler]})
    assert caught.value.stop_reason == "step_limit_exceeded"
    assert caught.value.decision is Decision.HALT
    assert isinstance(caught.value, CallRefused)
    assert model.i == 2  # the third response was never produced
    assert [n["status"] for n in nodes(ctx)] == ["success", "success", "halt"]


async def test_async_runs_and_a_budget_halt() -> None:
    ctx = context(max_cost_usd=0.004)
    # No reservation: the ceiling is reached by what the calls really cost.
    handler = ChainwardenCallbackHandler(ctx, price_overrides=RATES, cost_estimate_hint=0.0)
    model = GenericFakeChatModel(messages=iter([answer("a"), answer("b"), answer("c")]))
    config: Any = {"callbacks": [handler], "metadata": META}
    assert (await model.ainvoke("1", config=config)).content == "a"  # $0.003
    with pytest.raises(ChainHalted) as caught:
        await model.ainvoke("2", config=config)
        await model.ainvoke("3", config=config)
    assert caught.value.stop_reason == "budget_exceeded"


def test_model_errors_count_against_the_retry_budget() -> None:
    ctx = context(retries=1)
    handler = ChainwardenCallbackHandler(ctx)
    model = GenericFakeChatModel(messages=iter([]))  # exhausted: raises on every call
    with pytest.raises(StopIteration):
        model.invoke("1", config={"callbacks": [handler]})
    with pytest.raises(ChainHalted) as caught:
        model.invoke("2", config={"callbacks": [handler]})
    assert caught.value.stop_reason == "provider_error"
    assert [n["status"] for n in nodes(ctx)] == ["fail", "halt"]


def test_bad_arguments() -> None:
    with pytest.raises(TypeError, match="ctx"):
        ChainwardenCallbackHandler("ctx")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="cost_estimate_hint"):
        ChainwardenCallbackHandler(context(), cost_estimate_hint=float("nan"))
    with pytest.raises(TypeError, match="price_overrides"):
        ChainwardenCallbackHandler(context(), price_overrides={"gpt": {}})  # type: ignore[dict-item]
    with pytest.raises(TypeError, match="ctx"):
        contained_node(None)  # type: ignore[arg-type]


# -- LangGraph ------------------------------------------------------------------------------------------


class State(TypedDict):
    question: str
    notes: Annotated[list[str], operator.add]


def build(ctx: ExecutionContext, model: Any, handler: ChainwardenCallbackHandler) -> Any:
    @contained_node(ctx)
    def plan(state: State) -> dict[str, Any]:
        reply = model.invoke(state["question"], config={"callbacks": [handler], "metadata": META})
        return {"notes": [str(reply.content)]}

    @contained_node(ctx, name="count")
    def count_words(state: State) -> dict[str, Any]:
        return {
            "notes": [str(word_count.invoke({"text": state["notes"][-1]}, config={"callbacks": [handler]}))]
        }

    graph = StateGraph(State)
    graph.add_node("plan", plan)
    graph.add_node("count", count_words)
    graph.add_edge(START, "plan")
    graph.add_edge("plan", "count")
    graph.add_edge("count", END)
    return graph.compile()


def test_state_graph_nodes_contain_their_calls() -> None:
    ctx = context()
    handler = ChainwardenCallbackHandler(ctx, price_overrides=RATES)
    model = GenericFakeChatModel(messages=iter([answer("three little words")]))
    result = build(ctx, model, handler).invoke({"question": "q", "notes": []})
    assert result["notes"] == ["three little words", "3"]
    by_name = {n["name"]: n for n in nodes(ctx)}
    assert set(by_name) == {"plan", "count", "GenericFakeChatModel", "word_count"}
    assert by_name["GenericFakeChatModel"]["parent_id"] == by_name["plan"]["node_id"]
    assert by_name["word_count"]["parent_id"] == by_name["count"]["node_id"]
    assert by_name["GenericFakeChatModel"]["cost_usd"] == pytest.approx(0.003)
    assert all(n["status"] == "success" for n in by_name.values())


def test_state_graph_halts_with_the_stop_reason() -> None:
    ctx = context(max_steps=3)  # plan, its model call, count — and the tool is refused
    handler = ChainwardenCallbackHandler(ctx)
    model = GenericFakeChatModel(messages=iter([answer("a b")]))
    with pytest.raises(ChainHalted) as caught:
        build(ctx, model, handler).invoke({"question": "q", "notes": []})
    assert caught.value.stop_reason == "step_limit_exceeded"


async def test_async_node() -> None:
    ctx = context()

    @contained_node(ctx, name="shout")
    async def shout(state: State) -> dict[str, Any]:
        return {"notes": [state["question"].upper()]}

    graph = StateGraph(State)
    graph.add_node("shout", shout)
    graph.add_edge(START, "shout")
    result = await graph.compile().ainvoke({"question": "hey", "notes": []})
    assert result["notes"] == ["HEY"]
    assert [(n["kind"], n["name"]) for n in nodes(ctx)] == [("tool", "shout")]

"""docs/design.md §29: a run id never contains '/'. Every executor refuses one with a ValueError naming
``run_id`` before anything runs, however the request was built (a request type that checks it, or one
whose check was bypassed), and so does ``AiRuntime``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anthropic
import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langgraph.graph import START, MessagesState, StateGraph

from chainwarden.billing import SqliteLedger
from chainwarden.runtime import (
    AiRuntime,
    AnthropicExecutor,
    GraphRunRequest,
    InProcGraphExecutor,
    LangGraphExecutor,
    RunContext,
)

from .fake_provider import FakeProvider


def request(run_id: str, graph_id: str) -> GraphRunRequest:
    """A request whose run id skipped any check of the request type itself."""
    req = GraphRunRequest(
        graph_id=graph_id,
        messages=[{"role": "user", "content": "hi"}],
        model="m",
        billing_account_id="acct-1",
        virtual_key_id="vk-1",
        run_id="placeholder",
    )
    object.__setattr__(req, "run_id", run_id)
    return req


async def graph_fn(ctx: RunContext) -> str:
    raise AssertionError("a refused run must not start")


def langgraph_executor() -> LangGraphExecutor:
    model = FakeListChatModel(responses=["never"])

    async def chat(state: MessagesState) -> dict[str, Any]:
        raise AssertionError(f"a refused run must not start ({model})")

    graph = StateGraph(MessagesState)
    graph.add_node("chat", chat)
    graph.add_edge(START, "chat")
    return LangGraphExecutor(graph.compile())


EXECUTORS: dict[str, tuple[str, Callable[[FakeProvider], Any]]] = {
    "inproc": ("inproc:agent", lambda fake: InProcGraphExecutor(graph_fn)),
    "langgraph": ("langgraph:chat", lambda fake: langgraph_executor()),
    "anthropic": (
        "anthropic:chat",
        lambda fake: AnthropicExecutor(
            anthropic.AsyncAnthropic(base_url=fake.anthropic_base_url, api_key="k")
        ),
    ),
}


@pytest.mark.parametrize("name", sorted(EXECUTORS))
@pytest.mark.parametrize("run_id", ["r/1", "/", "run/", "a/b/c"])
async def test_every_executor_refuses_a_run_id_with_a_slash(
    fake_provider: FakeProvider, name: str, run_id: str
) -> None:
    graph_id, make = EXECUTORS[name]
    executor = make(fake_provider)
    with pytest.raises(ValueError, match="run_id") as caught:
        executor.run_graph(request(run_id, graph_id))
    assert repr(run_id) in str(caught.value)
    assert fake_provider.requests == []
    ok = executor.run_graph(request("run-1", graph_id))  # the same executor still serves good ids
    await ok.stream.aclose()  # type: ignore[attr-defined]


async def test_ai_runtime_refuses_it_before_the_run_starts(tmp_path: Path) -> None:
    with SqliteLedger(tmp_path / "ledger.sqlite3") as ledger:
        runtime = AiRuntime({"inproc": InProcGraphExecutor(graph_fn)}, ledger)
        with pytest.raises(ValueError, match="run_id"):
            runtime.run_graph(request("r/1", "inproc:agent"))
        assert ledger.runs() == []

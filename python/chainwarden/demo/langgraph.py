"""Demo section: a real LangGraph tool loop (langchain-core's fake chat model, no network) run through
AiRuntime by `LangGraphExecutor`, contained and billed once per model call (`chainwarden[langgraph]`)."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any, TextIO

from chainwarden.billing import Pricing, SqliteLedger
from chainwarden.runtime import AiRuntime, GraphRunRequest

PROVIDER, MODEL = "demo-provider", "demo-model"
# Per-million-token prices of the scripted model (a real model is priced by genai-prices).
PRICES = {(PROVIDER, MODEL): {"input_mtok": "2.5", "output_mtok": "10"}}


def _graph() -> Any:
    from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel  # noqa: PLC0415
    from langchain_core.messages import AIMessage  # noqa: PLC0415
    from langchain_core.tools import tool  # noqa: PLC0415
    from langgraph.graph import START, MessagesState, StateGraph  # noqa: PLC0415
    from langgraph.prebuilt import ToolNode, tools_condition  # noqa: PLC0415

    class ScriptedModel(FakeMessagesListChatModel):
        def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> Any:
            params = super()._get_ls_params(stop=stop, **kwargs)
            params["ls_provider"], params["ls_model_name"] = PROVIDER, MODEL
            return params

    def said(text: str, call_id: str, tokens: tuple[int, int], **extra: Any) -> AIMessage:
        usage = {"input_tokens": tokens[0], "output_tokens": tokens[1], "total_tokens": sum(tokens)}
        return AIMessage(text, usage_metadata=usage, response_metadata={"id": call_id}, **extra)

    @tool
    def population(city: str) -> int:
        """How many people live in a city."""
        return 2_102_650 if city == "Paris" else 0

    lookup = [{"name": "population", "args": {"city": "Paris"}, "id": "call-1"}]
    model = ScriptedModel(
        responses=[
            said("", "chatcmpl-101", (640, 18), tool_calls=lookup),
            said("About 2.1 million people live in Paris.", "chatcmpl-102", (702, 11)),
        ]
    )

    async def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_node("tools", ToolNode([population]))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph.compile()


async def _run(ledger: SqliteLedger, out: TextIO) -> None:
    from chainwarden.runtime import LangGraphExecutor  # noqa: PLC0415

    executor = LangGraphExecutor({"researcher": _graph()}, price_overrides=PRICES)
    req = GraphRunRequest(
        graph_id="langgraph:researcher",
        messages=[{"role": "user", "content": "How many people live in Paris?"}],
        model=MODEL,
        billing_account_id="acct-demo",
        virtual_key_id="vk-demo",
        run_id="run-langgraph-1",
    )
    # Closed when done: the runtime owns its outbox's connection and drainer thread.
    with AiRuntime({"langgraph": executor}, ledger, Pricing(markup=2.0)) as runtime:
        async with runtime.run(req) as run:
            async for event in run.ui_events():
                fields = {k: v for k, v in vars(event).items() if k != "type"}
                out.write(f"  ui: {event.type} {fields}\n" if fields else f"  ui: {event.type}\n")
            final = await run.final
            await run.billing_settled()
    out.write(f"final: ok={final.ok} tokens={final.usage.prompt_tokens}+{final.usage.completion_tokens}\n")
    for r in ledger.receipts(run_id=req.run_id):
        out.write(f"  billed {r.source_reference}: {r.charged_credits} credits\n")
    [record] = ledger.runs(run_id=req.run_id)
    out.write(
        f"run record: {record.status}, {record.receipt_count} receipts, {record.charged_credits} credits\n"
    )


def run(out: TextIO) -> None:
    out.write("== a LangGraph graph through the runtime ==\n")
    try:
        import langgraph  # noqa: F401, PLC0415
    except ImportError:
        out.write("  (needs LangGraph: pip install 'chainwarden[langgraph]')\n")
        return
    with (
        tempfile.TemporaryDirectory(prefix="chainwarden-demo-") as tmp,
        SqliteLedger(Path(tmp) / "ledger.sqlite3") as ledger,
    ):
        asyncio.run(_run(ledger, out))

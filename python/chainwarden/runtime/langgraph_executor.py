"""`LangGraphExecutor`: a compiled LangGraph graph behind the executor port (extra `chainwarden[langgraph]`).

Each run executes the graph in this process with two LangChain callback handlers: the containment one
(`chainwarden.integrations.langchain.ChainwardenCallbackHandler` on the run's ExecutionContext, so every
LLM and tool call is admitted, recorded and settled at its priced cost, docs/design.md §20) and the run's
own, which turns the graph's calls into the run's events: `ToolCallStart` / `ToolCallResult` per tool call
and one `UsageReport` per LLM call. Text reaches the UI as `TextDelta`s from LangGraph's ``messages`` stream
mode (token by token for a streaming model). docs/runtime.md, "A LangGraph graph".
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from decimal import Decimal
from typing import TYPE_CHECKING, Any
from uuid import UUID

from chainwarden._extras import require
from chainwarden.errors import InvalidArgument, InvalidArgumentType
from chainwarden.runtime.containment_port import Containment, RunLimits
from chainwarden.runtime.events import TextDelta, ToolCallResult, ToolCallStart
from chainwarden.runtime.inproc import InProcGraphExecutor
from chainwarden.runtime.port import GraphRunRequest, GraphRunResult
from chainwarden.runtime.run_context import LlmCallRefused, LlmResult, RunContext

if TYPE_CHECKING:
    from langchain_core.callbacks import BaseCallbackHandler
else:
    BaseCallbackHandler = require("langchain_core.callbacks", "langgraph").BaseCallbackHandler

from chainwarden.integrations.langchain import ChainwardenCallbackHandler
from chainwarden.integrations.providers import Usage

__all__ = ["SOURCE_LANGGRAPH", "LangGraphExecutor"]

SOURCE_LANGGRAPH = "langgraph"

logger = logging.getLogger("chainwarden.runtime")

InputOf = Callable[[GraphRunRequest], Any]
OutputOf = Callable[[Any], str | None]


def messages_input(req: GraphRunRequest) -> dict[str, Any]:
    """The default graph input: a ``MessagesState`` holding the request's messages."""
    return {"messages": [dict(m) for m in req.messages]}


def last_message_output(state: Any) -> str | None:
    """The default run content: the text of the state's last message."""
    messages = state.get("messages") if isinstance(state, Mapping) else None
    if not messages:
        return None
    return _text(getattr(messages[-1], "content", None))


def _text(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content blocks: the text ones, in order
        parts = [b.get("text") for b in content if isinstance(b, Mapping) and b.get("type") == "text"]
        return "".join(p for p in parts if isinstance(p, str))
    return None


class LangGraphExecutor:
    """Runs compiled LangGraph graphs registered by name: graph id ``"langgraph:<name>"``.

    ``graphs`` is one compiled graph (served under any name) or a mapping of names to them. The graph gets
    ``input_of(req)`` (default: ``{"messages": req.messages}``) and the run's content is
    ``output_of(final_state)`` (default: the last message's text). ``limits`` are each run's containment
    limits; ``price_overrides`` and ``cost_estimate_hint`` go to the containment handler, which prices
    every LLM call from its reported usage with ``chainwarden.pricing.price_usage``.
    """

    def __init__(
        self,
        graphs: Any,
        *,
        limits: RunLimits | None = None,
        containment: Containment | None = None,
        input_of: InputOf = messages_input,
        output_of: OutputOf = last_message_output,
        price_overrides: Mapping[tuple[str, str], Mapping[str, Any]] | None = None,
        cost_estimate_hint: float | None = None,
        recursion_limit: int = 25,
    ) -> None:
        require("langgraph", "langgraph")
        if isinstance(graphs, Mapping):
            self._graphs: dict[str, Any] | None = dict(graphs)
            self._single = None
            candidates = list(self._graphs.values())
        else:
            self._graphs, self._single = None, graphs
            candidates = [graphs]
        for graph in candidates:
            if not callable(getattr(graph, "astream", None)):
                raise InvalidArgumentType(
                    f"graphs must be compiled LangGraph graphs, got {type(graph).__name__}", argument="graphs"
                )
        for name, fn in (("input_of", input_of), ("output_of", output_of)):
            if not callable(fn):
                raise InvalidArgumentType(f"{name} must be callable, got {type(fn).__name__}", argument=name)
        if isinstance(recursion_limit, bool) or not isinstance(recursion_limit, int) or recursion_limit < 1:
            raise InvalidArgument(
                f"recursion_limit must be a positive int, got {recursion_limit!r}", argument="recursion_limit"
            )
        self._input_of = input_of
        self._output_of = output_of
        self._price_overrides = price_overrides
        self._estimate = cost_estimate_hint
        self._recursion_limit = recursion_limit
        # The in-process executor finds the graph (an unknown name ends the run with Error("not_found")),
        # makes the run's ExecutionContext and ends the run; each graph becomes one of its graph functions.
        functions: Any = (
            {name: self._function(graph) for name, graph in self._graphs.items()}
            if self._graphs is not None
            else self._function(self._single)
        )
        self._inproc = InProcGraphExecutor(
            functions, limits=limits, containment=containment, source=SOURCE_LANGGRAPH
        )

    def run_graph(self, req: GraphRunRequest) -> GraphRunResult:
        return self._inproc.run_graph(req)

    def close(self) -> None:
        self._inproc.close()

    def _function(self, graph: Any) -> Callable[[RunContext], Awaitable[str | None]]:
        async def run(ctx: RunContext) -> str | None:
            return await self._run(ctx, graph)

        return run

    async def _run(self, ctx: RunContext, graph: Any) -> str | None:
        containment = _BilledCalls(
            ctx, cost_estimate_hint=self._estimate, price_overrides=self._price_overrides
        )
        events = _RunEvents(ctx)
        config = {"callbacks": [containment, events], "recursion_limit": self._recursion_limit}
        state: Any = None
        halted = require("chainwarden.containment", "langgraph").ChainHalted
        try:
            async for mode, item in graph.astream(
                self._input_of(ctx.request), config=config, stream_mode=["messages", "values"]
            ):
                if mode == "values":
                    state = item
                elif mode == "messages":
                    events.text(item[0])
        except halted as stop:
            # Containment refused a call: the run ends as any refused call does (Error + Done).
            raise LlmCallRefused(
                str(stop.decision.value), stop, stop_reason=getattr(stop, "stop_reason", None)
            ) from stop
        return self._output_of(state)


class _BilledCalls(ChainwardenCallbackHandler):
    """The run's containment handler (every LLM and tool call admitted, recorded and settled at its
    priced cost, docs/design.md §20) that also bills each LLM call's usage once, as charged: one
    ``UsageReport`` per call that used tokens, a cut stream's included (§30)."""

    def __init__(
        self,
        ctx: RunContext,
        *,
        cost_estimate_hint: float | None,
        price_overrides: Mapping[tuple[str, str], Mapping[str, Any]] | None,
    ) -> None:
        guard: Any = ctx.guard
        super().__init__(guard, cost_estimate_hint=cost_estimate_hint, price_overrides=price_overrides)
        self._ctx = ctx

    def usage_reported(self, run_id: UUID, usage: Usage, price: Decimal | None, response: Any) -> None:
        try:
            self._ctx.report_usage(
                LlmResult(
                    content="",
                    model=usage.model or None,
                    provider=usage.provider or None,
                    usage_unit_id=_response_id(response),
                    input_tokens=usage.total_input() if usage.seen else None,
                    output_tokens=usage.output_tokens if usage.seen else None,
                    cache_read_tokens=usage.cache_read_tokens if usage.seen else None,
                    cache_write_tokens=usage.cache_write_tokens if usage.seen else None,
                    cost_usd=price,
                ),
                usage_missing_noted=True,  # the handler logged and counted it
            )
        except (TypeError, ValueError):
            # The usage happened: bill it without the values the ledger refuses (docs/design.md §26).
            logger.exception("run %s: usage of LLM call %s not reportable as is", self._ctx.run_id, run_id)
            self._ctx.report_usage(LlmResult(content=""), usage_missing_noted=True)


class _RunEvents(BaseCallbackHandler):
    """The run's view of the graph's callbacks: tool events (usage is billed by ``_BilledCalls``)."""

    raise_error = False  # an event that cannot be emitted must not stop the graph (it is logged)
    run_inline = True

    def __init__(self, ctx: RunContext) -> None:
        super().__init__()
        self._ctx = ctx
        self._tools: dict[UUID, str] = {}

    def text(self, message: Any) -> None:
        """A chunk (or whole message) of the ``messages`` stream: AI text becomes a ``TextDelta``."""
        if getattr(message, "type", None) not in ("ai", "AIMessageChunk"):
            return
        text = _text(getattr(message, "content", None))
        if text:
            self._ctx.emit(TextDelta(text))

    def on_tool_start(
        self, serialized: dict[str, Any], input_str: str, *, run_id: UUID, **kwargs: Any
    ) -> None:
        call_id = kwargs.get("tool_call_id") or str(run_id)
        self._tools[run_id] = call_id
        name = kwargs.get("name") or (serialized or {}).get("name") or "tool"
        inputs = kwargs.get("inputs")
        self._ctx.emit(
            ToolCallStart(call_id, name, dict(inputs) if isinstance(inputs, Mapping) else input_str)
        )

    def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:
        call_id = self._tools.pop(run_id, None)
        if call_id is not None:
            content = getattr(output, "content", output)
            self._ctx.emit(ToolCallResult(call_id, content if isinstance(content, str) else repr(content)))

    def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        call_id = self._tools.pop(run_id, None)
        if call_id is not None:
            self._ctx.emit(ToolCallResult(call_id, {"error": f"{type(error).__name__}: {error}"}))


def _response_id(response: Any) -> str | None:
    """The provider's id of the response (OpenAI's ``chatcmpl-…``, Anthropic's ``msg_…``), if it gave one:
    LangChain's own message ids are per process and would bill a replay twice."""
    for generations in getattr(response, "generations", None) or ():
        for generation in generations:
            meta = getattr(getattr(generation, "message", None), "response_metadata", None)
            if isinstance(meta, Mapping) and isinstance(meta.get("id"), str) and meta["id"]:
                return str(meta["id"])
    output = getattr(response, "llm_output", None)
    if isinstance(output, Mapping) and isinstance(output.get("id"), str) and output["id"]:
        return str(output["id"])
    return None

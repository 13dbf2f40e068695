"""`AnthropicExecutor`: a Claude tool-use loop behind the executor port (extra `chainwarden[anthropic]`).

An external-style adapter: it talks to the Messages API with the caller's real ``anthropic`` async client
and reports one usage fact per API message itself, ``usage_unit_id`` = the message id (docs/runtime.md).
It runs on the in-process machinery, so every message and every tool call is contained by the run's
ExecutionContext (limits from ``RunLimits``; a refusal ends the run with ``Error`` and ``final.ok`` False),
streams ``TextDelta`` / ``ToolCallStart`` / ``ToolCallResult`` events; cancelling the run cancels the loop.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from chainwarden._extras import require
from chainwarden.containment.types import WrapOptions
from chainwarden.errors import InvalidArgument, InvalidArgumentType
from chainwarden.integrations.providers import (
    MESSAGES,
    Usage,
    UsageError,
    estimate,
    price_of,
    prompt_tokens,
)
from chainwarden.runtime.containment_port import Containment, RunLimits
from chainwarden.runtime.events import TextDelta, ToolCallResult, ToolCallStart
from chainwarden.runtime.inproc import InProcGraphExecutor
from chainwarden.runtime.port import GraphRunRequest, GraphRunResult
from chainwarden.runtime.run_context import LlmCallFailed, LlmCallRefused, LlmResult, RunContext

__all__ = ["SOURCE_ANTHROPIC", "SOURCE_ANTHROPIC_SDK", "AnthropicExecutor", "AnthropicTool"]

#: The provider its calls are priced as.
SOURCE_ANTHROPIC = "anthropic"
#: The source system of its usage facts: seed 004's `anthropic_sdk`, the Anthropic SDK talking to the
#: Messages API itself, as `ClaudeAgentExecutor` does (docs/design.md §38).
SOURCE_ANTHROPIC_SDK = "anthropic_sdk"

logger = logging.getLogger("chainwarden.runtime")

ToolFn = Callable[[dict[str, Any]], Any] | Callable[[dict[str, Any]], Awaitable[Any]]


@dataclass(frozen=True)
class AnthropicTool:
    """A tool Claude may call: its Messages API definition and the function that runs it.

    ``fn`` (sync or async) gets the tool input dict and returns a ``str`` or anything JSON-serialisable;
    an exception is sent back to the model as an ``is_error`` tool result, and the run goes on."""

    name: str
    description: str
    fn: ToolFn
    input_schema: Mapping[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise InvalidArgument(f"name must be a non-empty str, got {self.name!r}", argument="name")
        if not isinstance(self.description, str):
            raise InvalidArgumentType(
                f"description must be a str, got {type(self.description).__name__}", argument="description"
            )
        if not callable(self.fn):
            raise InvalidArgumentType(f"fn must be callable, got {type(self.fn).__name__}", argument="fn")
        if not isinstance(self.input_schema, Mapping):
            raise InvalidArgumentType(
                f"input_schema must be a mapping, got {type(self.input_schema).__name__}",
                argument="input_schema",
            )

    def definition(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "input_schema": dict(self.input_schema)}


def used_by(
    message_id: str | None,
    model: str,
    usage: Usage | None,
    overrides: Mapping[tuple[str, str], Mapping[str, Any]] | None,
    raw: Mapping[str, Any] | None = None,
) -> LlmResult:
    """What a Messages API message used, billed under its id and priced as every integration prices: its
    usage when it reported some, else nothing (usage missing, docs/design.md §30)."""
    if usage is None or not usage.seen:
        return LlmResult(content="", model=model, provider=SOURCE_ANTHROPIC, usage_unit_id=message_id)
    return LlmResult(
        content="",
        model=model,
        provider=SOURCE_ANTHROPIC,
        usage_unit_id=message_id,
        input_tokens=usage.total_input(),
        output_tokens=usage.output_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        cache_write_tokens=usage.cache_write_tokens,
        cost_usd=price_of(usage, overrides),
        usage_raw=None if raw is None else dict(raw),
    )


def tools_by_name(tools: Iterable[AnthropicTool]) -> dict[str, AnthropicTool]:
    """The tools by name; `TypeError` for an object that is not an `AnthropicTool`, `ValueError` for a name
    given twice."""
    tool_list = list(tools)
    for tool in tool_list:
        if not isinstance(tool, AnthropicTool):
            raise InvalidArgumentType(
                f"tools must hold AnthropicTool objects, got {type(tool).__name__}", argument="tools"
            )
    named = {tool.name: tool for tool in tool_list}
    if len(named) != len(tool_list):
        raise InvalidArgument("tools: two tools have the same name", argument="tools")
    return named


class AnthropicExecutor:
    """Runs ``req.messages`` as a Claude conversation with ``tools`` until the model stops asking for them.

    ``client`` is an ``anthropic.AsyncAnthropic``. Register it with the runtime under a provider name, e.g.
    ``AiRuntime(executors={"anthropic": AnthropicExecutor(client, tools=[...])})`` and graph ids
    ``"anthropic:<name>"``; ``req.model`` is the Claude model. Each message's cost is priced from its usage
    with ``chainwarden.pricing.price_usage`` (``price_overrides`` as there) and settled as the call's actual
    cost (docs/design.md §20); an unknown model is billed without a cost, never a guessed one.
    """

    def __init__(
        self,
        client: Any,
        *,
        tools: Iterable[AnthropicTool] = (),
        system: str | None = None,
        max_tokens: int = 1024,
        stream: bool = True,
        limits: RunLimits | None = None,
        containment: Containment | None = None,
        price_overrides: Mapping[tuple[str, str], Mapping[str, Any]] | None = None,
        cost_estimate_usd: float | None = None,
    ) -> None:
        anthropic = require("anthropic", "anthropic")
        if not isinstance(client, anthropic.AsyncAnthropic):
            raise InvalidArgumentType(
                f"client must be an anthropic.AsyncAnthropic, got {type(client).__name__}", argument="client"
            )
        self._tools = tools_by_name(tools)
        if system is not None and not isinstance(system, str):
            raise InvalidArgumentType(
                f"system must be a str or None, got {type(system).__name__}", argument="system"
            )
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise InvalidArgument(
                f"max_tokens must be a positive int, got {max_tokens!r}", argument="max_tokens"
            )
        if not isinstance(stream, bool):
            raise InvalidArgumentType(
                f"stream must be a bool, got {type(stream).__name__}", argument="stream"
            )
        self._client = client
        self._system = system
        self._max_tokens = max_tokens
        self._stream = stream
        self._price_overrides = price_overrides
        if cost_estimate_usd is not None:
            cost_estimate_usd = WrapOptions(cost_estimate_hint=cost_estimate_usd).cost_estimate_hint
        self._cost_estimate = cost_estimate_usd
        self._inproc = InProcGraphExecutor(
            self._converse, limits=limits, containment=containment, source=SOURCE_ANTHROPIC_SDK
        )

    def run_graph(self, req: GraphRunRequest) -> GraphRunResult:
        return self._inproc.run_graph(req)

    def close(self) -> None:
        self._inproc.close()

    # -- the tool-use loop -------------------------------------------------------------------------------

    async def _converse(self, ctx: RunContext) -> str | None:
        system, messages = _split_system(ctx.request.messages, self._system)
        while True:
            reply: list[Any] = []
            await ctx.call_llm(
                functools.partial(self._message, ctx, system, messages, reply),
                operation_name=f"chat {ctx.request.model}",
                cost_estimate_hint=self._estimate(ctx, system, messages),
            )
            message = reply[0]
            content = [block.model_dump(exclude_none=True) for block in message.content]
            messages.append({"role": "assistant", "content": content})
            uses = [block for block in message.content if block.type == "tool_use"]
            if message.stop_reason != "tool_use" or not uses:
                return "".join(block.text for block in message.content if block.type == "text")
            results = [await self._run_tool(ctx, use) for use in uses]
            messages.append({"role": "user", "content": results})

    def _estimate(self, ctx: RunContext, system: str | None, messages: list[dict[str, Any]]) -> float:
        """What the next message can cost at most (docs/design.md §35), unless the executor was given
        ``cost_estimate_usd``."""
        if self._cost_estimate is not None:
            return self._cost_estimate
        tools = [tool.definition() for tool in self._tools.values()]
        return estimate(
            ctx.guard,
            hint=None,
            provider=SOURCE_ANTHROPIC,
            model=ctx.request.model,
            prompt=prompt_tokens(system, messages, tools),
            output=self._max_tokens,
            overrides=self._price_overrides,
        ).reserve

    async def _message(
        self, ctx: RunContext, system: str | None, messages: list[dict[str, Any]], reply: list[Any]
    ) -> LlmResult:
        """One Messages API call (one contained LLM call of the run); the message lands in ``reply``."""
        params: dict[str, Any] = {
            "model": ctx.request.model,
            "max_tokens": self._max_tokens,
            "messages": messages,
        }
        if system is not None:
            params["system"] = system
        if self._tools:
            params["tools"] = [tool.definition() for tool in self._tools.values()]
        if self._stream:
            message = await self._streamed(ctx, params)
        else:
            message = await self._client.messages.create(**params)
            for block in message.content:
                if block.type == "text" and block.text:
                    ctx.emit(TextDelta(block.text))
        try:
            result = self._result(message)
        except UsageError as invalid:
            # The message was sent and answered; its usage cannot be counted: billed under its id without
            # tokens or cost (usage missing), charged the call's estimate, and the call fails.
            raise LlmCallFailed(self._used(message.id, message.model), invalid) from invalid
        reply.append(message)
        return result

    async def _streamed(self, ctx: RunContext, params: dict[str, Any]) -> Any:
        """One streamed message. A stream cut after ``message_start`` has already cost its prompt: the
        call fails with that usage (``LlmCallFailed``), billed once and charged before any retry
        (docs/design.md §30)."""
        usage = Usage(SOURCE_ANTHROPIC, str(params["model"]))
        started: dict[str, str] = {}
        try:
            async with self._client.messages.stream(**params) as stream:
                async for event in stream:
                    if event.type == "message_start":
                        started["id"] = event.message.id
                    MESSAGES.watch(event, usage)
                    if event.type == "text" and event.text:
                        ctx.emit(TextDelta(event.text))
                return await stream.get_final_message()
        except UsageError as invalid:
            raise LlmCallFailed(self._used(started.get("id"), usage.model), invalid) from invalid
        except Exception as cut:
            if not started and not usage.seen:
                raise  # nothing reached us: the request failed before the provider answered
            raise LlmCallFailed(self._used(started.get("id"), usage.model, usage), cut) from cut
        except BaseException:
            if usage.seen:  # the run was cancelled mid-message: what the message used is billed
                ctx.report_usage(self._used(started.get("id"), usage.model, usage))
            raise

    def _used(self, message_id: str | None, model: str, usage: Usage | None = None) -> LlmResult:
        """What a failed message used: its usage when it is known, else nothing (usage missing)."""
        return used_by(message_id, model, usage, self._price_overrides)

    def _result(self, message: Any) -> LlmResult:
        # Counted and priced as every integration does (chainwarden.integrations): input_tokens counts the
        # cached tokens too, which Anthropic reports beside it.
        usage = Usage(SOURCE_ANTHROPIC, message.model)
        MESSAGES.usage_of(message, usage)
        usage.checked()
        return LlmResult(
            content="".join(block.text for block in message.content if block.type == "text"),
            model=message.model,
            provider=SOURCE_ANTHROPIC,
            usage_unit_id=message.id,
            input_tokens=usage.total_input(),
            output_tokens=usage.output_tokens,
            cache_read_tokens=usage.cache_read_tokens,
            cache_write_tokens=usage.cache_write_tokens,
            cost_usd=price_of(usage, self._price_overrides),
            usage_raw=message.usage.model_dump(exclude_none=True),
        )

    async def _run_tool(self, ctx: RunContext, use: Any) -> dict[str, Any]:
        """One contained tool call; its result (or its failure) becomes a ``tool_result`` block."""
        arguments = dict(use.input) if isinstance(use.input, Mapping) else {}
        ctx.emit(ToolCallStart(use.id, use.name, arguments))
        tool = self._tools.get(use.name)
        error = False
        try:
            if tool is None:
                raise LookupError(f"no tool named {use.name!r} is registered")
            output = await ctx.call_tool(use.name, lambda: tool.fn(arguments))
            text = output if isinstance(output, str) else json.dumps(output)
        except LlmCallRefused:
            raise  # containment said no: the run ends (Error + Done), the model is not asked again
        except Exception as failure:
            # The model hears about a failed tool and may recover from it.
            logger.info("tool %r failed: %s", use.name, failure)
            text, error = f"{type(failure).__name__}: {failure}", True
        ctx.emit(ToolCallResult(use.id, {"content": text, "is_error": error}))
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": use.id, "content": text}
        if error:
            block["is_error"] = True
        return block


def _split_system(
    messages: list[dict[str, Any]], default: str | None
) -> tuple[str | None, list[dict[str, Any]]]:
    """The Messages API takes the system prompt beside the messages, not among them."""
    system = [m.get("content") for m in messages if m.get("role") == "system"]
    rest = [dict(m) for m in messages if m.get("role") != "system"]
    texts = [text for text in system if isinstance(text, str)]
    if len(texts) != len(system):
        raise InvalidArgumentType("a system message's content must be a str", argument="messages")
    if default is not None:
        texts.insert(0, default)
    return ("\n\n".join(texts) if texts else None), rest

"""`ClaudeAgentExecutor`: an agent of the Claude Agent SDK behind the executor port (seed 004 P2; extra
`chainwarden[claude-agent]`, docs/runtime.md "The Claude Agent SDK").

The SDK drives the `claude` CLI, which talks to the Messages API itself. The executor reads the SDK's messages
— with the API's stream events (`include_partial_messages`), the only place each message's final usage is
told — and turns them into the port's events: `TextDelta` as text streams, `ToolCallStart` /
`ToolCallResult` per tool call, `AssistantFinal` and `Done`, and **one `UsageReport` per API message**, its
`usage_unit_id` the message id and its source system `anthropic_sdk` (docs/design.md §38), priced as every
integration prices (`chainwarden.pricing`). What the SDK's result says was used beyond the messages it
streamed (calls the CLI makes on its own) is billed too, once per model, so a run is never billed less than
its result reports.

Containment: the CLI sends its requests itself, so a message is admitted when it starts streaming, as a
contained call of the run's `ExecutionContext` (its estimate held against the run's ceiling and, with a
credit policy, against the account). A refused message has already been sent: it is billed, and the agent is
stopped before its next one. The CLI also gets the run's ceiling as its own `max_budget_usd` and the step
limit as its `max_turns`. Tools registered here run in this process (an SDK MCP server), each contained as a
tool call; the CLI's built-in tools are off unless the options given turn them on.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
from collections.abc import Iterable, Mapping
from typing import Any

from chainwarden._extras import require
from chainwarden.containment.types import WrapOptions
from chainwarden.errors import ChainwardenError, InvalidArgument, InvalidArgumentType
from chainwarden.integrations.providers import Usage, UsageError, count, estimate
from chainwarden.runtime.anthropic_executor import (
    SOURCE_ANTHROPIC,
    SOURCE_ANTHROPIC_SDK,
    AnthropicTool,
    tools_by_name,
    used_by,
)
from chainwarden.runtime.containment_port import Containment, RunLimits
from chainwarden.runtime.events import TextDelta, ToolCallResult, ToolCallStart
from chainwarden.runtime.inproc import InProcGraphExecutor
from chainwarden.runtime.port import GraphRunRequest, GraphRunResult
from chainwarden.runtime.run_context import LlmCallRefused, LlmResult, RunContext

__all__ = ["ClaudeAgentExecutor"]

logger = logging.getLogger("chainwarden.runtime")

#: The MCP server name the executor's tools are served under (`mcp__chainwarden__<tool>`).
SERVER = "chainwarden"
#: What a message may write at most when the options do not say (the CLI's default for current models).
DEFAULT_MAX_OUTPUT_TOKENS = 32_000


# The SDK result's subtypes that are the CLI's own limits, as the containment stop reasons they mirror.
class AgentQueryFailed(ChainwardenError, RuntimeError):
    """The Claude Agent SDK's query ended without a result, or with an error result."""


_LIMIT_STOPS = {"error_max_budget_usd": "budget_exceeded", "error_max_turns": "step_limit_exceeded"}


class ClaudeAgentExecutor:
    """Runs `req.messages` as a Claude Agent SDK query with `tools` (see the module).

    `options` (a `claude_agent_sdk.ClaudeAgentOptions`) is the base of every run's options: the executor sets
    the model (`req.model`), the streaming of partial messages, its tools' MCP server and permissions, and —
    unless given — `max_budget_usd` and `max_turns` from `limits`, and no built-in tools."""

    def __init__(
        self,
        *,
        tools: Iterable[AnthropicTool] = (),
        options: Any = None,
        limits: RunLimits | None = None,
        containment: Containment | None = None,
        price_overrides: Mapping[tuple[str, str], Mapping[str, Any]] | None = None,
        cost_estimate_usd: float | None = None,
        max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS,
    ) -> None:
        self._sdk = require("claude_agent_sdk", "claude-agent")
        if options is None:
            options = self._sdk.ClaudeAgentOptions()
        if not isinstance(options, self._sdk.ClaudeAgentOptions):
            raise InvalidArgumentType(
                f"options must be a claude_agent_sdk.ClaudeAgentOptions, got {type(options).__name__}",
                argument="options",
            )
        self._tools = tools_by_name(tools)
        if (
            isinstance(max_output_tokens, bool)
            or not isinstance(max_output_tokens, int)
            or max_output_tokens < 1
        ):
            raise InvalidArgument(
                f"max_output_tokens must be a positive int, got {max_output_tokens!r}",
                argument="max_output_tokens",
            )
        if cost_estimate_usd is not None:
            cost_estimate_usd = WrapOptions(cost_estimate_hint=cost_estimate_usd).cost_estimate_hint
        self._options = options
        self._limits = limits or RunLimits()
        self._price_overrides = price_overrides
        self._cost_estimate = cost_estimate_usd
        self._max_output = max_output_tokens
        self._inproc = InProcGraphExecutor(
            self._agent, limits=self._limits, containment=containment, source=SOURCE_ANTHROPIC_SDK
        )

    def run_graph(self, req: GraphRunRequest) -> GraphRunResult:
        return self._inproc.run_graph(req)

    def close(self) -> None:
        self._inproc.close()

    # -- one run ---------------------------------------------------------------------------------------------

    def _options_for(self, ctx: RunContext, system: str | None) -> Any:
        base = self._options
        changes: dict[str, Any] = {"model": ctx.request.model, "include_partial_messages": True}
        if base.max_budget_usd is None:
            changes["max_budget_usd"] = self._limits.max_cost_usd
        if base.max_turns is None:
            changes["max_turns"] = self._limits.max_steps
        if base.tools is None:
            changes["tools"] = []  # no built-in tool (shell, files, web) unless asked for
        if system is not None:
            prompt = base.system_prompt
            changes["system_prompt"] = system if not isinstance(prompt, str) else f"{prompt}\n\n{system}"
        if self._tools:
            server = self._sdk.create_sdk_mcp_server(
                SERVER, tools=[self._sdk_tool(ctx, tool) for tool in self._tools.values()]
            )
            changes["mcp_servers"] = {
                **(base.mcp_servers if isinstance(base.mcp_servers, dict) else {}),
                SERVER: server,
            }
            changes["allowed_tools"] = [
                *base.allowed_tools,
                *(f"mcp__{SERVER}__{name}" for name in self._tools),
            ]
        return dataclasses.replace(base, **changes)

    def _sdk_tool(self, ctx: RunContext, tool: AnthropicTool) -> Any:
        async def handler(arguments: dict[str, Any]) -> dict[str, Any]:
            # Contained as a tool call of the run; a failure goes back to the model, which may recover.
            try:
                output = await ctx.call_tool(tool.name, lambda: tool.fn(arguments))
                text, error = (output if isinstance(output, str) else json.dumps(output)), False
            except LlmCallRefused:
                raise
            except Exception as failure:
                logger.info("tool %r failed: %s", tool.name, failure)
                text, error = f"{type(failure).__name__}: {failure}", True
            result: dict[str, Any] = {"content": [{"type": "text", "text": text}]}
            if error:
                result["is_error"] = True
            return result

        return self._sdk.SdkMcpTool(
            name=tool.name,
            description=tool.description,
            input_schema=dict(tool.input_schema),
            handler=handler,
        )

    def _client(self, options: Any) -> Any:
        """The SDK client of one run (a seam: tests replay recorded message streams through it)."""
        return self._sdk.ClaudeSDKClient(options)

    async def _agent(self, ctx: RunContext) -> str | None:
        system, prompt = _prompt(ctx.request.messages)
        messages = _Messages(self, ctx)
        try:
            async with self._client(self._options_for(ctx, system)) as client:
                await client.query(prompt)
                async for message in client.receive_response():
                    messages.take(message)
                    if messages.refusal is not None:
                        raise messages.refusal
        finally:
            await messages.finish()
        return messages.result()

    # -- pricing ---------------------------------------------------------------------------------------------

    def _estimate(self, ctx: RunContext, usage: Usage) -> float:
        """What a message that just started can cost at most: its prompt as reported, and its output limit."""
        return estimate(
            ctx.guard,
            hint=self._cost_estimate,
            provider=SOURCE_ANTHROPIC,
            model=usage.model,
            prompt=usage.total_input(),
            output=self._max_output,
            overrides=self._price_overrides,
        ).reserve

    def _result(
        self, message_id: str | None, usage: Usage, raw: Mapping[str, Any] | None = None
    ) -> LlmResult:
        return used_by(message_id, usage.model, usage, self._price_overrides, raw)


class _Open:
    """One API message being streamed: its usage so far and the contained call that admitted it."""

    def __init__(self, message_id: str, usage: Usage) -> None:
        self.id = message_id
        self.usage = usage
        self.raw: dict[str, Any] = {}
        self.done: asyncio.Future[LlmResult] = asyncio.get_running_loop().create_future()
        self.call: asyncio.Task[LlmResult] | None = None


class _Messages:
    """The SDK messages of one run, turned into the port's events and usage reports."""

    def __init__(self, executor: ClaudeAgentExecutor, ctx: RunContext) -> None:
        self._executor = executor
        self._ctx = ctx
        self._open: dict[str | None, _Open] = {}  # by parent tool use (None: the main agent)
        self._started: dict[str, _Open] = {}  # every message that started, by id
        self._calls: list[asyncio.Task[LlmResult]] = []
        self._billed: dict[str, Usage] = {}  # message id -> its usage, once reported
        self._final: Any = None
        self.refusal: LlmCallRefused | None = None

    def take(self, message: Any) -> None:
        sdk = self._executor._sdk
        if isinstance(message, sdk.StreamEvent):
            self._stream_event(message.event, message.parent_tool_use_id)
        elif isinstance(message, sdk.AssistantMessage):
            if message.parent_tool_use_id is None:
                for block in message.content:
                    if isinstance(block, sdk.ToolUseBlock):
                        self._ctx.emit(ToolCallStart(block.id, block.name, dict(block.input)))
        elif isinstance(message, sdk.UserMessage):
            if message.parent_tool_use_id is None and isinstance(message.content, list):
                for block in message.content:
                    if isinstance(block, sdk.ToolResultBlock):
                        self._ctx.emit(
                            ToolCallResult(
                                block.tool_use_id,
                                {"content": _text_of(block.content), "is_error": bool(block.is_error)},
                            )
                        )
        elif isinstance(message, sdk.ResultMessage):
            self._final = message
        self._check_calls()

    def _stream_event(self, event: Mapping[str, Any], parent: str | None) -> None:
        kind = event.get("type")
        if kind == "message_start":
            message = event.get("message") or {}
            usage = Usage(SOURCE_ANTHROPIC, str(message.get("model") or self._ctx.request.model))
            usage.input_excludes_cache = True
            opened = _Open(str(message.get("id") or ""), usage)
            _apply_usage(opened, message.get("usage"))
            self._end(self._open.pop(parent, None))  # one that never stopped was cut short
            self._open[parent] = opened
            self._started[opened.id] = opened
            self._admit(opened)
        elif kind == "message_delta":
            current = self._open.get(parent)
            if current is not None:
                _apply_usage(current, event.get("usage"))
        elif kind == "message_stop":
            self._end(self._open.pop(parent, None))
        elif kind == "content_block_delta" and parent is None:
            delta = event.get("delta") or {}
            if delta.get("type") == "text_delta" and delta.get("text"):
                self._ctx.emit(TextDelta(str(delta["text"])))

    def _end(self, opened: _Open | None) -> None:
        """The message stopped (or will stream no more): its call settles at what it reported."""
        if opened is not None and not opened.done.done():
            opened.done.set_result(self._executor._result(opened.id or None, opened.usage, opened.raw))

    def _admit(self, opened: _Open) -> None:
        """The message as one contained call of the run: admitted now, settled at its priced usage when it
        stops (its UsageReport then comes from `call_llm`, under the message id)."""
        try:
            hint = self._executor._estimate(self._ctx, opened.usage)
        except UsageError:
            hint = 0.0

        async def wait() -> LlmResult:
            result = await opened.done
            self._billed[opened.id] = opened.usage
            return result

        opened.call = asyncio.get_running_loop().create_task(
            self._ctx.call_llm(wait, operation_name=f"chat {opened.usage.model}", cost_estimate_hint=hint)
        )
        self._calls.append(opened.call)

    def _check_calls(self) -> None:
        for task in self._calls:
            if task.done() and not task.cancelled() and isinstance(task.exception(), LlmCallRefused):
                refusal = task.exception()
                assert isinstance(refusal, LlmCallRefused)
                self.refusal = refusal
                return

    async def finish(self) -> None:
        """The query ended (or stopped): every message still open is billed with what it reported, each
        admitted one once its call settled; then what the result reports beyond them."""
        for opened in self._started.values():
            self._end(opened)
        self._open.clear()
        if self._calls:
            await asyncio.gather(*self._calls, return_exceptions=True)
        # A message whose call was refused (or cancelled) was sent all the same: billed here, once.
        for message_id, opened in self._started.items():
            if message_id not in self._billed:
                self._billed[message_id] = opened.usage
                self._ctx.report_usage(self._executor._result(message_id or None, opened.usage, opened.raw))
        self._bill_unstreamed()

    def _bill_unstreamed(self) -> None:
        """The result's usage per model beyond the messages billed: calls the CLI made without streaming them
        to us. Billed once per model, under `<session id>:unstreamed:<model>`."""
        final = self._final
        per_model = getattr(final, "model_usage", None) if final is not None else None
        if not isinstance(per_model, Mapping):
            return
        for model, totals in per_model.items():
            if not isinstance(totals, Mapping):
                continue
            billed = [u for u in self._billed.values() if u.model == model]
            extra = Usage(SOURCE_ANTHROPIC, str(model))
            extra.input_excludes_cache = True
            try:
                extra.input_tokens = max(
                    0,
                    count(totals.get("inputTokens", 0), "inputTokens") - sum(u.input_tokens for u in billed),
                )
                extra.output_tokens = max(
                    0,
                    count(totals.get("outputTokens", 0), "outputTokens")
                    - sum(u.output_tokens for u in billed),
                )
                extra.cache_read_tokens = max(
                    0,
                    count(totals.get("cacheReadInputTokens", 0), "cacheReadInputTokens")
                    - sum(u.cache_read_tokens for u in billed),
                )
                extra.cache_write_tokens = max(
                    0,
                    count(totals.get("cacheCreationInputTokens", 0), "cacheCreationInputTokens")
                    - sum(u.cache_write_tokens for u in billed),
                )
            except UsageError:
                logger.warning("run %s: the SDK result's usage of %s cannot be read", self._ctx.run_id, model)
                continue
            if (
                extra.input_tokens
                or extra.output_tokens
                or extra.cache_read_tokens
                or extra.cache_write_tokens
            ):
                extra.seen = True
                unit = f"{getattr(final, 'session_id', 'session')}:unstreamed:{model}"
                logger.warning(
                    "run %s: %s used tokens the SDK did not stream; billed as %s",
                    self._ctx.run_id,
                    model,
                    unit,
                )
                self._ctx.report_usage(self._executor._result(unit, extra))

    def result(self) -> str | None:
        final = self._final
        if final is None:
            raise AgentQueryFailed("the Claude Agent SDK query ended without a result")
        stop = _LIMIT_STOPS.get(getattr(final, "subtype", ""))
        if stop is not None:
            raise LlmCallRefused("HALT", stop_reason=stop)
        if getattr(final, "is_error", False):
            raise AgentQueryFailed(f"the Claude Agent SDK query failed: {getattr(final, 'subtype', '?')}")
        text = getattr(final, "result", None)
        return text if isinstance(text, str) else None


def _apply_usage(opened: _Open, usage: Any) -> None:
    """Anthropic's usage counts, cumulative per message (`message_delta` repeats `message_start`'s)."""
    if not isinstance(usage, Mapping):
        return
    target = opened.usage
    for field, name in (
        ("input_tokens", "input_tokens"),
        ("output_tokens", "output_tokens"),
        ("cache_read_input_tokens", "cache_read_tokens"),
        ("cache_creation_input_tokens", "cache_write_tokens"),
    ):
        value = usage.get(field)
        if value is not None:
            setattr(target, name, count(value, field))
            target.seen = True
    opened.raw.update(
        {k: v for k, v in usage.items() if isinstance(v, int | str | float | bool) or v is None}
    )


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(b.get("text", "")) for b in content if isinstance(b, Mapping))
    return "" if content is None else json.dumps(content, default=str)


def _prompt(messages: list[dict[str, Any]]) -> tuple[str | None, str]:
    """The query's system prompt (the system messages) and its prompt: the last user message, after a
    transcript of the turns before it when there are some."""
    system = [_text_of(m.get("content")) for m in messages if m.get("role") == "system"]
    turns = [m for m in messages if m.get("role") != "system"]
    if not turns:
        raise InvalidArgument("messages hold no user message to send", argument="messages")
    last = _text_of(turns[-1].get("content"))
    earlier = [f"{m.get('role', 'user')}: {_text_of(m.get('content'))}" for m in turns[:-1]]
    prompt = last if not earlier else "Conversation so far:\n" + "\n".join(earlier) + "\n\n" + last
    return ("\n\n".join(system) if system else None), prompt

"""What OpenAI (Chat Completions, Responses) and Anthropic (Messages) send back, plain and as SSE events.

One ``Reply`` describes an answer in provider-neutral terms; each dialect renders it the way that provider
does, usage included. Token semantics are genai-prices' (``chainwarden.pricing``): ``input_tokens`` counts
every input token, cached ones included — OpenAI reports it that way, Anthropic reports the uncached part
beside its cache counts, and the renderers below do exactly that.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    call_id: str = "call_0001"


@dataclass(frozen=True)
class Reply:
    """One scripted answer. ``status`` other than 200 makes it an error reply of that HTTP status."""

    text: str = "Hello from the fake provider."
    input_tokens: int = 12
    output_tokens: int = 7
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    tool_call: ToolCall | None = None
    status: int = 200
    error_message: str = "scripted failure"
    retry_after_s: float | None = None
    chunks: int = 3  # how many deltas a streamed text is cut into
    response_id: str | None = None  # the provider's id of this answer (a fixed fake id when None)
    # A streamed reply cut after this many SSE events: the server then closes the connection without
    # ending the chunked body, as a dropped connection or a crashed upstream does (None: not cut).
    cut_after: int | None = None
    # Raw usage fields that replace the rendered ones (hostile values: huge, negative, floats, str, null).
    usage_override: dict[str, Any] | None = None

    def pieces(self) -> list[str]:
        size = max(1, -(-len(self.text) // max(1, self.chunks)))
        return [self.text[i : i + size] for i in range(0, len(self.text), size)] or [""]


def sse(data: Any, event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    body = data if isinstance(data, str) else json.dumps(data)
    return f"{head}data: {body}\n\n".encode()


# -- OpenAI Chat Completions -------------------------------------------------------------------------------


def _chat_usage(reply: Reply) -> dict[str, Any]:
    return _override(
        reply,
        {
            "prompt_tokens": reply.input_tokens,
            "completion_tokens": reply.output_tokens,
            "total_tokens": reply.input_tokens + reply.output_tokens,
            "prompt_tokens_details": {"cached_tokens": reply.cache_read_tokens, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
        },
    )


def _override(reply: Reply, usage: dict[str, Any]) -> dict[str, Any]:
    return {**usage, **(reply.usage_override or {})}


def chat_completion(reply: Reply, model: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text, "refusal": None}
    finish = "stop"
    if reply.tool_call is not None:
        call = reply.tool_call
        message["content"] = None
        message["tool_calls"] = [
            {
                "id": call.call_id,
                "type": "function",
                "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
            }
        ]
        finish = "tool_calls"
    return {
        "id": "chatcmpl-fake0001",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
        "usage": _chat_usage(reply),
        "system_fingerprint": None,
    }


def chat_completion_stream(reply: Reply, model: str, include_usage: bool) -> Iterator[bytes]:
    base = {
        "id": "chatcmpl-fake0001",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return sse({**base, "choices": [choice]})

    yield chunk({"role": "assistant", "content": ""})
    if reply.tool_call is not None:
        call = reply.tool_call
        arguments = json.dumps(call.arguments)
        head = {
            "index": 0,
            "id": call.call_id,
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }
        yield chunk({"tool_calls": [head]})
        half = len(arguments) // 2
        for part in (arguments[:half], arguments[half:]):
            yield chunk({"tool_calls": [{"index": 0, "function": {"arguments": part}}]})
        yield chunk({}, "tool_calls")
    else:
        for piece in reply.pieces():
            yield chunk({"content": piece})
        yield chunk({}, "stop")
    if include_usage:  # stream_options.include_usage: one last chunk, no choices, the usage
        yield sse({**base, "choices": [], "usage": _chat_usage(reply)})
    yield sse("[DONE]")


# -- OpenAI Responses ----------------------------------------------------------------------------------------


def _responses_usage(reply: Reply) -> dict[str, Any]:
    return _override(
        reply,
        {
            "input_tokens": reply.input_tokens,
            "input_tokens_details": {"cached_tokens": reply.cache_read_tokens},
            "output_tokens": reply.output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": reply.input_tokens + reply.output_tokens,
        },
    )


def _responses_output(reply: Reply) -> list[dict[str, Any]]:
    if reply.tool_call is not None:
        call = reply.tool_call
        return [
            {
                "type": "function_call",
                "id": "fc_fake0001",
                "call_id": call.call_id,
                "name": call.name,
                "arguments": json.dumps(call.arguments),
                "status": "completed",
            }
        ]
    text = {"type": "output_text", "text": reply.text, "annotations": [], "logprobs": []}
    return [
        {
            "type": "message",
            "id": "msg_fake0001",
            "status": "completed",
            "role": "assistant",
            "content": [text],
        }
    ]


def response(reply: Reply, model: str, *, done: bool = True) -> dict[str, Any]:
    return {
        "id": "resp_fake0001",
        "object": "response",
        "created_at": int(time.time()),
        "status": "completed" if done else "in_progress",
        "model": model,
        "output": _responses_output(reply) if done else [],
        "usage": _responses_usage(reply) if done else None,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "metadata": {},
        "temperature": 1.0,
        "top_p": 1.0,
        "text": {"format": {"type": "text"}},
    }


def response_stream(reply: Reply, model: str) -> Iterator[bytes]:
    seq = iter(range(1_000_000))

    def event(kind: str, **fields: Any) -> bytes:
        return sse({"type": kind, "sequence_number": next(seq), **fields}, event=kind)

    yield event("response.created", response=response(reply, model, done=False))
    yield event("response.in_progress", response=response(reply, model, done=False))
    item = _responses_output(reply)[0]
    if reply.tool_call is not None:
        yield event(
            "response.output_item.added",
            output_index=0,
            item={**item, "arguments": "", "status": "in_progress"},
        )
        yield event(
            "response.function_call_arguments.delta",
            item_id=item["id"],
            output_index=0,
            delta=item["arguments"],
        )
        yield event(
            "response.function_call_arguments.done",
            item_id=item["id"],
            output_index=0,
            arguments=item["arguments"],
        )
    else:
        yield event(
            "response.output_item.added",
            output_index=0,
            item={**item, "content": [], "status": "in_progress"},
        )
        empty = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
        yield event(
            "response.content_part.added", item_id=item["id"], output_index=0, content_index=0, part=empty
        )
        for piece in reply.pieces():
            yield event(
                "response.output_text.delta",
                item_id=item["id"],
                output_index=0,
                content_index=0,
                delta=piece,
                logprobs=[],
            )
        yield event(
            "response.output_text.done",
            item_id=item["id"],
            output_index=0,
            content_index=0,
            text=reply.text,
            logprobs=[],
        )
        yield event(
            "response.content_part.done",
            item_id=item["id"],
            output_index=0,
            content_index=0,
            part=item["content"][0],
        )
    yield event("response.output_item.done", output_index=0, item=item)
    yield event("response.completed", response=response(reply, model))


# -- Anthropic Messages --------------------------------------------------------------------------------------


def _anthropic_usage(reply: Reply, output_tokens: int) -> dict[str, Any]:
    return _override(
        reply,
        {
            # Anthropic's input_tokens is the uncached part; the cache counts come beside it.
            "input_tokens": reply.input_tokens - reply.cache_read_tokens - reply.cache_write_tokens,
            "cache_creation_input_tokens": reply.cache_write_tokens,
            "cache_read_input_tokens": reply.cache_read_tokens,
            "output_tokens": output_tokens,
        },
    )


def _anthropic_content(reply: Reply) -> list[dict[str, Any]]:
    if reply.tool_call is not None:
        call = reply.tool_call
        return [{"type": "tool_use", "id": call.call_id, "name": call.name, "input": call.arguments}]
    return [{"type": "text", "text": reply.text}]


def message(reply: Reply, model: str) -> dict[str, Any]:
    return {
        "id": reply.response_id or "msg_fake0001",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": _anthropic_content(reply),
        "stop_reason": "tool_use" if reply.tool_call is not None else "end_turn",
        "stop_sequence": None,
        "usage": _anthropic_usage(reply, reply.output_tokens),
    }


def message_stream(reply: Reply, model: str) -> Iterator[bytes]:
    start = {**message(reply, model), "content": [], "stop_reason": None, "usage": _anthropic_usage(reply, 1)}
    yield sse({"type": "message_start", "message": start}, event="message_start")
    if reply.tool_call is not None:
        call = reply.tool_call
        block = {"type": "tool_use", "id": call.call_id, "name": call.name, "input": {}}
        deltas = [{"type": "input_json_delta", "partial_json": json.dumps(call.arguments)}]
    else:
        block = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": piece} for piece in reply.pieces()]
    yield sse(
        {"type": "content_block_start", "index": 0, "content_block": block}, event="content_block_start"
    )
    yield sse({"type": "ping"}, event="ping")
    for delta in deltas:
        yield sse({"type": "content_block_delta", "index": 0, "delta": delta}, event="content_block_delta")
    yield sse({"type": "content_block_stop", "index": 0}, event="content_block_stop")
    stop = "tool_use" if reply.tool_call is not None else "end_turn"
    # The final usage: Anthropic repeats the input counts here and gives the real output count.
    usage = _anthropic_usage(reply, reply.output_tokens)
    yield sse(
        {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": usage},
        event="message_delta",
    )
    yield sse({"type": "message_stop"}, event="message_stop")


# -- errors --------------------------------------------------------------------------------------------------

_OPENAI_ERROR_TYPES = {429: "rate_limit_exceeded", 500: "server_error", 400: "invalid_request_error"}
_ANTHROPIC_ERROR_TYPES = {
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
    400: "invalid_request_error",
}


def openai_error(reply: Reply) -> dict[str, Any]:
    kind = _OPENAI_ERROR_TYPES.get(reply.status, "api_error")
    return {"error": {"message": reply.error_message, "type": kind, "param": None, "code": kind}}


def anthropic_error(reply: Reply) -> dict[str, Any]:
    kind = _ANTHROPIC_ERROR_TYPES.get(reply.status, "api_error")
    return {"type": "error", "error": {"type": kind, "message": reply.error_message}}

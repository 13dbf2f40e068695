"""The OpenAI client's usage: Chat Completions and Responses, plain and streamed."""

from __future__ import annotations

from typing import Any

from chainwarden.integrations._calls import Dialect
from chainwarden.integrations._facts import dumped
from chainwarden.integrations._streams import Watch
from chainwarden.integrations._usage import Usage, count

__all__ = ["CHAT", "RESPONSES"]


def _chat_usage(raw: Any, usage: Usage) -> None:
    if raw is None:
        return
    usage.seen = True
    usage.input_tokens = count(getattr(raw, "prompt_tokens", None), "usage.prompt_tokens")
    usage.output_tokens = count(getattr(raw, "completion_tokens", None), "usage.completion_tokens")
    details = getattr(raw, "prompt_tokens_details", None)
    usage.cache_read_tokens = count(
        getattr(details, "cached_tokens", None), "usage.prompt_tokens_details.cached_tokens"
    )


def _model_of(obj: Any, usage: Usage) -> None:
    model = getattr(obj, "model", None)
    if isinstance(model, str) and model:
        usage.model = model  # the model that answered (a dated snapshot of an alias), priced exactly


def _response_id(obj: Any, usage: Usage) -> None:
    found = getattr(obj, "id", None)
    if isinstance(found, str) and found:
        usage.response_id = found


def _chat_response(response: Any, usage: Usage) -> None:
    _model_of(response, usage)
    _response_id(response, usage)
    reasons = [getattr(c, "finish_reason", None) for c in getattr(response, "choices", None) or ()]
    usage.finish_reasons = [r for r in reasons if isinstance(r, str)]
    _chat_usage(getattr(response, "usage", None), usage)


def _chat_chunk(chunk: Any, usage: Usage) -> bool:
    if usage.response_id is None:
        _response_id(chunk, usage)
    for choice in getattr(chunk, "choices", None) or ():
        reason = getattr(choice, "finish_reason", None)
        if isinstance(reason, str):
            usage.finish_reasons.append(reason)
        if usage.keep_text:
            text = getattr(getattr(choice, "delta", None), "content", None)
            if isinstance(text, str):
                usage.text.append(text)
    raw = getattr(chunk, "usage", None)
    if raw is not None:
        _model_of(chunk, usage)
        _chat_usage(raw, usage)
    return True


def _hide_usage_chunk(chunk: Any, usage: Usage) -> bool:
    # The caller did not ask for usage: the final usage-only chunk we asked for is not theirs to see.
    _chat_chunk(chunk, usage)
    return not (getattr(chunk, "usage", None) is not None and not getattr(chunk, "choices", None))


def _ask_for_usage(kwargs: dict[str, Any]) -> Watch | None:
    """OpenAI streams usage only when asked (``stream_options.include_usage``): ask, unless the caller
    decided either way, and hide the extra chunk so the caller sees the stream it asked for."""
    options = kwargs.get("stream_options")
    given = dict(options) if isinstance(options, dict) else {}
    if "include_usage" in given:
        return None
    kwargs["stream_options"] = {**given, "include_usage": True}
    return _hide_usage_chunk


def _responses_usage(response: Any, usage: Usage) -> None:
    _model_of(response, usage)
    _response_id(response, usage)
    status = getattr(response, "status", None)
    if isinstance(status, str) and status:
        usage.finish_reasons = [status]
    raw = getattr(response, "usage", None)
    if raw is None:
        return
    usage.seen = True
    usage.input_tokens = count(getattr(raw, "input_tokens", None), "usage.input_tokens")
    usage.output_tokens = count(getattr(raw, "output_tokens", None), "usage.output_tokens")
    details = getattr(raw, "input_tokens_details", None)
    usage.cache_read_tokens = count(
        getattr(details, "cached_tokens", None), "usage.input_tokens_details.cached_tokens"
    )


_FINAL_EVENTS = frozenset({"response.completed", "response.incomplete", "response.failed"})


def _responses_event(event: Any, usage: Usage) -> bool:
    kind = getattr(event, "type", None)
    if kind == "response.output_text.delta" and usage.keep_text:
        text = getattr(event, "delta", None)
        if isinstance(text, str):
            usage.text.append(text)
    if kind in _FINAL_EVENTS:
        response = getattr(event, "response", None)
        if response is not None:
            _responses_usage(response, usage)
    return True


def _chat_input(kwargs: dict[str, Any]) -> Any:
    return kwargs.get("messages")


def _chat_output(response: Any) -> Any:
    return [dumped(getattr(c, "message", None)) for c in getattr(response, "choices", None) or ()]


def _responses_input(kwargs: dict[str, Any]) -> Any:
    return {k: kwargs[k] for k in ("instructions", "input") if kwargs.get(k) is not None}


def _responses_output(response: Any) -> Any:
    return dumped(getattr(response, "output", None))


CHAT = Dialect(
    "openai.chat.completions",
    _chat_response,
    _chat_chunk,
    _ask_for_usage,
    input_of=_chat_input,
    output_of=_chat_output,
    output_fields=("max_completion_tokens", "max_tokens"),
)
RESPONSES = Dialect(
    "openai.responses",
    _responses_usage,
    _responses_event,
    input_of=_responses_input,
    output_of=_responses_output,
    output_fields=("max_output_tokens",),
)

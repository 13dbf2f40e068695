"""The OpenAI client's usage: Chat Completions and Responses, plain and streamed."""

from __future__ import annotations

from typing import Any

from chainwarden.integrations._calls import Dialect
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


def _chat_response(response: Any, usage: Usage) -> None:
    _model_of(response, usage)
    _chat_usage(getattr(response, "usage", None), usage)


def _chat_chunk(chunk: Any, usage: Usage) -> bool:
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
    if getattr(event, "type", None) in _FINAL_EVENTS:
        response = getattr(event, "response", None)
        if response is not None:
            _responses_usage(response, usage)
    return True


CHAT = Dialect(
    "openai.chat.completions",
    _chat_response,
    _chat_chunk,
    _ask_for_usage,
    output_fields=("max_completion_tokens", "max_tokens"),
)
RESPONSES = Dialect(
    "openai.responses", _responses_usage, _responses_event, output_fields=("max_output_tokens",)
)

"""The Anthropic client's usage: Messages, plain and streamed.

Anthropic counts ``input_tokens`` without the prompt-cache tokens it reports beside them; the Usage
(genai-prices' semantics, docs/integrations.md) adds them in.
"""

from __future__ import annotations

from typing import Any

from chainwarden.integrations._calls import Dialect
from chainwarden.integrations._usage import Usage, count

__all__ = ["MESSAGES"]


# Our field -> Anthropic's name, for errors that say which count was bad.
_WIRE = {
    "input_tokens": "input_tokens",
    "cache_read_tokens": "cache_read_input_tokens",
    "cache_write_tokens": "cache_creation_input_tokens",
    "output_tokens": "output_tokens",
}


def _read(raw: Any, usage: Usage, *, partial: bool) -> None:
    if raw is None:
        return
    usage.seen = True
    fields = {
        "input_tokens": getattr(raw, "input_tokens", None),
        "cache_read_tokens": getattr(raw, "cache_read_input_tokens", None),
        "cache_write_tokens": getattr(raw, "cache_creation_input_tokens", None),
        "output_tokens": getattr(raw, "output_tokens", None),
    }
    for name, value in fields.items():
        # A message_delta repeats only what changed (output tokens, cumulative); absent fields keep theirs.
        if value is not None or not partial:
            setattr(usage, name, count(value, f"usage.{_WIRE[name]}"))
    usage.input_excludes_cache = True


def _message(response: Any, usage: Usage) -> None:
    model = getattr(response, "model", None)
    if isinstance(model, str) and model:
        usage.model = model
    _read(getattr(response, "usage", None), usage, partial=False)


def _event(event: Any, usage: Usage) -> bool:
    kind = getattr(event, "type", None)
    if kind == "message_start":
        _message(getattr(event, "message", None), usage)
    elif kind == "message_delta":
        _read(getattr(event, "usage", None), usage, partial=True)
    return True


MESSAGES = Dialect("anthropic.messages", _message, _event, output_fields=("max_tokens",))

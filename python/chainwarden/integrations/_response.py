"""The usage of a provider response handed to a wrapped call (``WrapOptions(response_hint=...)``), read and
priced the way the instrumented clients read and price their own (docs/containment.md "Streamed calls,
response usage and reconciliation").

The response may be an SDK object or its JSON as a dict: OpenAI Chat Completions (``prompt_tokens``),
OpenAI Responses (``object == "response"``), Anthropic Messages (``type == "message"``, cache tokens
beside ``input_tokens``), or anything else with ``usage.input_tokens`` / ``usage.output_tokens``, whose
provider genai-prices finds from the model name.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from chainwarden._extras import require
from chainwarden.integrations._anthropic import MESSAGES
from chainwarden.integrations._openai import CHAT, RESPONSES
from chainwarden.integrations._usage import Usage, count, price_of

__all__ = ["priced_response"]

_log = logging.getLogger("chainwarden.integrations")


class _Fields:
    """A JSON object read like an SDK object: its keys as attributes, nested objects alike."""

    __slots__ = ("_data",)

    def __init__(self, data: Mapping[str, Any]) -> None:
        self._data = data

    def __getattr__(self, name: str) -> Any:
        value = self._data.get(name)
        return _Fields(value) if isinstance(value, Mapping) else value


def _provider_of(model: str) -> str:
    """The provider genai-prices knows ``model`` from, or "" (the usage is then left unpriced)."""
    if not model:
        return ""
    try:
        snapshot = require("genai_prices", "prices").data_snapshot.get_snapshot()
        provider, _ = snapshot.find_provider_model(model, None, None, None)
    except (ImportError, LookupError):
        return ""  # price_of then logs why the usage is left unpriced
    return str(provider.id)


def _usage_of(response: Any, model: str) -> Usage | None:
    view = _Fields(response) if isinstance(response, Mapping) else response
    raw = getattr(view, "usage", None)
    if raw is None:
        return None
    if getattr(raw, "prompt_tokens", None) is not None:
        usage = Usage("openai", model)
        CHAT.usage_of(view, usage)
    elif (
        getattr(view, "object", None) == "response" or getattr(raw, "input_tokens_details", None) is not None
    ):
        usage = Usage("openai", model)
        RESPONSES.usage_of(view, usage)
    elif getattr(view, "type", None) == "message" or any(
        getattr(raw, name, None) is not None
        for name in ("cache_creation_input_tokens", "cache_read_input_tokens")
    ):
        usage = Usage("anthropic", model)
        MESSAGES.usage_of(view, usage)
    elif getattr(raw, "input_tokens", None) is not None or getattr(raw, "output_tokens", None) is not None:
        answered = getattr(view, "model", None)
        usage = Usage("", answered if isinstance(answered, str) and answered else model, seen=True)
        usage.input_tokens = count(getattr(raw, "input_tokens", None), "usage.input_tokens")
        usage.output_tokens = count(getattr(raw, "output_tokens", None), "usage.output_tokens")
        usage.provider = _provider_of(usage.model)
    else:
        return None
    return usage if usage.seen else None


def priced_response(response: Any, model: str) -> tuple[float | None, int, int] | None:
    """(cost in USD, input tokens, output tokens) of ``response``, the cost None when its model has no
    known price (logged at WARNING on ``chainwarden.pricing`` / ``chainwarden.integrations``); None when
    the response carries no usage. ``model``: the call's model, used when the response names none."""
    usage = _usage_of(response, model)
    if usage is None:
        return None
    if not usage.provider or not usage.model:
        _warn_unpriced(usage.model)
        return None, usage.total_input(), usage.output_tokens
    price = price_of(usage, None)
    return (None if price is None else float(price)), usage.total_input(), usage.output_tokens


# Models whose provider is unknown are logged once each, in a bounded set (a hot loop must not flood the log).
_warned: set[str] = set()
_WARNED_MAX = 1024


def _warn_unpriced(model: str) -> None:
    if model in _warned:
        return
    if len(_warned) < _WARNED_MAX:
        _warned.add(model)
    _log.warning("response usage of model %r has no known provider; the call is charged its estimate", model)

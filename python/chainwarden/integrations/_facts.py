"""What an integration keeps on a provider call's node besides cost and tokens (chainwarden._call_facts):
the provider, the model asked for, the response's id and finish reasons, the cache tokens, and — when the
chain captures content (docs/containment.md "Content capture") — the messages sent and the reply."""

from __future__ import annotations

from typing import Any

from chainwarden import _call_facts as facts
from chainwarden.containment.calls import Capture
from chainwarden.integrations._usage import Usage

__all__ = ["dumped", "request_facts", "response_facts"]


def dumped(value: Any) -> Any:
    """A provider SDK object as plain data (its pydantic ``model_dump``), anything else as it is."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        try:
            return dump(exclude_none=True)
        except Exception:  # a model that cannot dump itself: described by its repr when captured
            return value
    if isinstance(value, list | tuple):
        return [dumped(v) for v in value]
    return value


def request_facts(capture: Capture | None, provider: str, model: str, content: Any) -> dict[str, Any]:
    """Known before the request is sent: the provider, the model asked for, the input when captured."""
    out: dict[str, Any] = {}
    if provider:
        out[facts.PROVIDER] = provider
    if model:
        out[facts.REQUEST_MODEL] = model
    if capture is not None and content is not None:
        out.update(capture.entries(input=content))
    return out


def response_facts(capture: Capture | None, usage: Usage, output: Any = None) -> dict[str, Any]:
    """Known from the reply: its id, finish reasons, cache tokens, and the output when captured (``output``,
    else the text a stream sent)."""
    out: dict[str, Any] = {}
    if usage.response_id:
        out[facts.RESPONSE_ID] = usage.response_id
    if usage.finish_reasons:
        out[facts.FINISH_REASONS] = list(usage.finish_reasons)
    if usage.seen:
        out[facts.CACHE_READ_TOKENS] = usage.cache_read_tokens
        out[facts.CACHE_WRITE_TOKENS] = usage.cache_write_tokens
    if capture is not None:
        reply = output if output is not None else ("".join(usage.text) if usage.text else None)
        if reply is not None:
            out.update(capture.entries(output=reply, has_output=True))
    return out

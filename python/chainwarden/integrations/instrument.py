"""``chainwarden.instrument`` and ``chainwarden.uninstrument``: one client, or every installed SDK.

- ``instrument(client, ctx, ...)`` makes one OpenAI / Anthropic client's calls contained calls of ``ctx``
  (``integrations.clients``, docs/integrations.md "OpenAI and Anthropic clients");
- ``instrument()`` instruments every installed SDK chainwarden knows (OpenAI, Anthropic, LangChain) for the
  whole process (``integrations.auto``, docs/integrations.md "One line: chainwarden.instrument()").

``uninstrument(client)`` / ``uninstrument()`` undo them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, overload

from chainwarden.containment.context import ExecutionContext
from chainwarden.errors import InvalidArgumentType
from chainwarden.integrations import auto, clients
from chainwarden.integrations._usage import PriceOverrides

__all__ = ["instrument", "uninstrument"]

C = TypeVar("C")


@overload
def instrument(
    *,
    cost_estimate_hint: float | None = None,
    price_overrides: PriceOverrides | None = None,
    capture_content: bool = False,
    max_content_chars: int = 4096,
    mask: Callable[[str], str] | None = None,
) -> tuple[str, ...]: ...
@overload
def instrument(
    client: C,
    ctx: ExecutionContext,
    *,
    provider: str | None = None,
    cost_estimate_hint: float | None = None,
    price_overrides: PriceOverrides | None = None,
) -> C: ...
def instrument(
    client: Any = None,
    ctx: ExecutionContext | None = None,
    *,
    provider: str | None = None,
    cost_estimate_hint: float | None = None,
    price_overrides: PriceOverrides | None = None,
    capture_content: bool = False,
    max_content_chars: int = 4096,
    mask: Callable[[str], str] | None = None,
) -> Any:
    """With a client and a context: that client's calls become contained calls of ``ctx`` (returns the
    client). Without arguments: every installed SDK chainwarden knows is instrumented for the process (returns
    their names); a call then goes to ``current_context()``, else to ``default_recorder()``, where
    ``capture_content`` / ``max_content_chars`` / ``mask`` decide what content it keeps (inside a context,
    the context's own settings do)."""
    if client is None:
        if ctx is not None or provider is not None:
            raise InvalidArgumentType(
                "instrument() without a client takes no ctx or provider: calls go to their context",
                argument="ctx",
            )
        return auto.instrument_all(
            cost_estimate_hint=cost_estimate_hint,
            price_overrides=price_overrides,
            capture_content=capture_content,
            max_content_chars=max_content_chars,
            mask=mask,
        )
    if ctx is None:
        raise InvalidArgumentType(
            "instrument(client, ctx): ctx must be an ExecutionContext, got None", argument="ctx"
        )
    if capture_content or mask is not None or max_content_chars != 4096:
        raise InvalidArgumentType(
            "instrument(client, ctx) captures content as ctx's ExecutionConfig says: "
            "capture_content, max_content_chars and mask belong to instrument() without a client",
            argument="capture_content",
        )
    return clients.instrument(
        client, ctx, provider=provider, cost_estimate_hint=cost_estimate_hint, price_overrides=price_overrides
    )


@overload
def uninstrument() -> tuple[str, ...]: ...
@overload
def uninstrument(client: C) -> C: ...
def uninstrument(client: Any = None) -> Any:
    """Undoes ``instrument(client, ctx)`` for ``client`` (returns it), or ``instrument()`` for the process
    (returns the names of the SDKs it uninstrumented)."""
    if client is None:
        return auto.uninstrument_all()
    return clients.uninstrument(client)

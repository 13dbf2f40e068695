"""``chainwarden.instrument(client, ctx)``: the OpenAI and Anthropic clients as contained calls.

The client is changed in place and returned: ``chat.completions.create`` and ``responses.create``
(``openai.OpenAI`` / ``AsyncOpenAI`` and their subclasses) and ``messages.create`` (``anthropic.Anthropic``
/ ``AsyncAnthropic``) become contained ``llm`` calls of ``ctx`` (docs/integrations.md). The methods are
replaced on the client's own resource objects, so other clients are untouched; instrumenting a client
again binds it to the new context (the original method is wrapped, never a wrapper).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Final, TypeVar

from chainwarden._extras import require
from chainwarden.containment.context import ExecutionContext
from chainwarden.errors import InvalidArgumentType
from chainwarden.integrations._anthropic import MESSAGES
from chainwarden.integrations._calls import Dialect, Setup, acall, call
from chainwarden.integrations._openai import CHAT, RESPONSES
from chainwarden.integrations._options import checked_hint, checked_overrides, checked_provider
from chainwarden.integrations._usage import PriceOverrides
from chainwarden.integrations.auto import class_original

__all__ = ["instrument", "uninstrument"]

C = TypeVar("C")

_ORIGINAL: Final = "__chainwarden_original__"


def _family(client: object) -> str | None:
    """Which SDK the client comes from, by module name (so neither SDK is imported to find out)."""
    for cls in type(client).__mro__:
        root = cls.__module__.split(".", 1)[0]
        if root in ("openai", "anthropic"):
            return root
    return None


def _targets(client: object) -> tuple[bool, list[tuple[Any, Dialect]]]:
    """(is async, the resource objects whose ``create`` to wrap), or TypeError naming ``client``."""
    family = _family(client)
    if family == "openai":
        openai = require("openai", "openai")
        if isinstance(client, openai.OpenAI | openai.AsyncOpenAI):
            targets = [(client.chat.completions, CHAT), (client.responses, RESPONSES)]
            return isinstance(client, openai.AsyncOpenAI), targets
    elif family == "anthropic":
        anthropic = require("anthropic", "anthropic")
        if isinstance(client, anthropic.Anthropic | anthropic.AsyncAnthropic):
            return isinstance(client, anthropic.AsyncAnthropic), [(client.messages, MESSAGES)]
    raise InvalidArgumentType(
        "client must be an openai.OpenAI, openai.AsyncOpenAI, anthropic.Anthropic or "
        f"anthropic.AsyncAnthropic, got {type(client).__name__}",
        argument="client",
    )


def _wrapper(
    setup: Setup, dialect: Dialect, original: Callable[..., Any], is_async: bool
) -> Callable[..., Any]:
    if is_async:

        @functools.wraps(original)
        async def create_async(*args: Any, **kwargs: Any) -> Any:
            return await acall(setup, dialect, original, args, kwargs)

        wrapped: Callable[..., Any] = create_async
    else:

        @functools.wraps(original)
        def create(*args: Any, **kwargs: Any) -> Any:
            return call(setup, dialect, original, args, kwargs)

        wrapped = create
    setattr(wrapped, _ORIGINAL, original)
    return wrapped


def instrument(
    client: C,
    ctx: ExecutionContext,
    *,
    provider: str | None = None,
    cost_estimate_hint: float | None = None,
    price_overrides: PriceOverrides | None = None,
) -> C:
    """Makes every ``create`` call of ``client`` a contained, recorded ``llm`` call of ``ctx``; returns
    ``client``.

    ``provider`` names the price list (default ``"openai"`` / ``"anthropic"`` by client; say
    ``"azure"``, ``"groq"``, ... for a compatible endpoint), ``cost_estimate_hint`` is each call's
    estimate reserved before it is sent (docs/design.md §20; None: the most each request can cost,
    §35), ``price_overrides`` is ``price_usage``'s ``overrides`` table. Bad arguments raise
    ``TypeError`` / ``ValueError`` naming the argument, with the client unchanged."""
    if not isinstance(ctx, ExecutionContext):
        raise InvalidArgumentType(
            f"ctx must be an ExecutionContext, got {type(ctx).__name__}", argument="ctx"
        )
    checked_provider(provider)
    hint = checked_hint(cost_estimate_hint)
    table = checked_overrides(price_overrides)
    is_async, targets = _targets(client)
    setup = Setup(ctx, provider or _family(client) or "", hint, table)
    for resource, dialect in targets:
        current = resource.create
        # The client's own method: never a wrapper of ours (this one's, or instrument()'s class patch), so
        # one call is recorded once, in this context.
        original = getattr(current, _ORIGINAL, None) or class_original(resource) or current
        resource.create = _wrapper(setup, dialect, original, is_async)
    return client


def uninstrument(client: C) -> C:
    """Restores the client's own methods (a client never instrumented is returned unchanged)."""
    _, targets = _targets(client)
    for resource, _dialect in targets:
        if hasattr(resource.create, _ORIGINAL):
            del resource.create  # the instance attribute; the class's method shows through again
    return client

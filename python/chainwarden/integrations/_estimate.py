"""What one provider request can cost at most, reserved before it is sent (docs/design.md §20, §35).

An instrumented call without an explicit ``cost_estimate_hint`` reserves the price of its worst case:
its prompt at one token per UTF-8 byte of text (no tokenizer counts fewer tokens than that), each media
block at ``MEDIA_TOKENS``, and its output limit (``max_tokens`` and its spellings, times ``n``), else the
model's context window as genai-prices lists it, else ``DEFAULT_OUTPUT_TOKENS``; priced with
``chainwarden.pricing.price_usage`` at the dearer of the plain and the cache-write input rates. A model
whose price is unknown reserves the chain's whole remaining budget, so such calls run one at a time, and
is charged nothing for its tokens (logged). docs/integrations.md, "What a call reserves".
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from chainwarden._args import MAX_INT64
from chainwarden.containment.calls import spent_usd
from chainwarden.containment.context import ExecutionContext
from chainwarden.integrations._usage import PriceOverrides
from chainwarden.pricing import context_window, first_warning, price_usage

__all__ = ["DEFAULT_OUTPUT_TOKENS", "MEDIA_TOKENS", "Estimate", "estimate", "output_limit", "prompt_tokens"]

_log = logging.getLogger("chainwarden.integrations")

# A request without an output limit, for a model whose context window genai-prices does not list.
DEFAULT_OUTPUT_TOKENS: Final = 128_000
# One image, audio clip or document block: what a large image costs with OpenAI and Anthropic. (A long
# PDF can cost more; its real usage settles the call.)
MEDIA_TOKENS: Final = 2_000
# Per message, list or object: the role and formatting tokens providers add around content.
_OVERHEAD_TOKENS: Final = 4
_MEDIA_TYPES: Final = frozenset(
    {"image", "image_url", "input_image", "document", "file", "input_file", "audio", "input_audio"}
)
# The request fields that are sent to the model as input.
PROMPT_FIELDS: Final = ("system", "instructions", "messages", "input", "prompt", "tools", "functions")
_MAX_TOKENS: Final = MAX_INT64
_WALK_LIMIT: Final = 100_000  # nodes visited; a larger prompt is bounded by its limit reached


@dataclass(frozen=True)
class Estimate:
    """``reserve`` is held against the ceiling while the call runs; ``fallback`` is what the call is
    charged when its usage is missing or has no price."""

    reserve: float
    fallback: float


def prompt_tokens(*parts: object) -> int:
    """An upper bound of the tokens of a prompt given as nested dicts, lists and strings."""
    total = 0
    stack: list[object] = list(parts)
    visited = 0
    while stack:
        item = stack.pop()
        visited += 1
        if visited > _WALK_LIMIT:
            return _MAX_TOKENS
        if isinstance(item, str):
            total += len(item.encode("utf-8", "surrogatepass"))
        elif isinstance(item, bytes | bytearray):
            total += len(item)
        elif isinstance(item, Mapping):
            total += _OVERHEAD_TOKENS
            if item.get("type") in _MEDIA_TYPES:
                total += MEDIA_TOKENS
                continue
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            total += _OVERHEAD_TOKENS
            stack.extend(item)
        elif item is not None:
            content = getattr(item, "content", None)  # a framework's message object
            if content is not None:
                total += _OVERHEAD_TOKENS
                stack.append(content)
                stack.append(getattr(item, "tool_calls", None))
            else:
                total += _OVERHEAD_TOKENS
    return min(total, _MAX_TOKENS)


def output_limit(params: Mapping[str, Any], names: Iterable[str]) -> int | None:
    """The first positive int among ``params[name]``, times ``params["n"]`` (choices), or None."""
    for name in names:
        value = params.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            choices = params.get("n")
            if isinstance(choices, int) and not isinstance(choices, bool) and choices > 1:
                value *= choices
            return min(value, _MAX_TOKENS)
    return None


def estimate(
    ctx: object,
    *,
    hint: float | None,
    provider: str,
    model: str,
    prompt: int,
    output: int | None,
    overrides: PriceOverrides | None,
) -> Estimate:
    """The call's reservation: ``hint`` when given, else the price of its worst case (module doc)."""
    if hint is not None:
        return Estimate(hint, hint)
    price = worst_case_price(provider, model, prompt, output, overrides)
    if price is not None:
        return Estimate(price, price)
    remaining = remaining_budget(ctx)
    _warn_unpriced(provider, model, remaining)
    return Estimate(remaining, 0.0)


def worst_case_price(
    provider: str, model: str, prompt: int, output: int | None, overrides: PriceOverrides | None
) -> float | None:
    if not provider or not model:
        return None
    if output is None:
        in_table = overrides is not None and (provider, model) in overrides
        window = None if in_table else context_window(provider=provider, model=model)
        output = window or DEFAULT_OUTPUT_TOKENS
    try:
        plain = price_usage(
            provider=provider, model=model, input_tokens=prompt, output_tokens=output, overrides=overrides
        )
        if plain is None:
            return None
        written = price_usage(
            provider=provider,
            model=model,
            input_tokens=prompt,
            output_tokens=output,
            cache_write_tokens=prompt,
            overrides=overrides,
        )
    except (TypeError, ValueError) as exc:
        _log.warning("cannot price the worst case of %s/%s: %s", provider, model, exc)
        return None
    worst = max(plain, written if written is not None else plain)
    return float(worst)


def remaining_budget(ctx: object) -> float:
    """What a call of unknown price reserves: all the chain has left, its ceiling minus what it spent and
    what calls in flight hold, so no other call can start beside it; when nothing is left, more than the
    ceiling, so it cannot start either (a reservation of 0 would always be admitted). 0 for a context
    that is not chainwarden's, which counts estimates only."""
    if not isinstance(ctx, ExecutionContext):
        return 0.0
    ceiling = ctx.config.max_cost_usd
    left = ceiling - spent_usd(ctx) - ctx.reserved_usd
    return left if left > 0.0 else ceiling + 1.0


def _warn_unpriced(provider: str, model: str, remaining: float) -> None:
    if not first_warning("reserve", provider, model):
        return
    _log.warning(
        "no price known for provider=%r model=%r: each call reserves the chain's remaining budget "
        "(now $%.6f), so such calls run one at a time, and is charged nothing for its tokens; give "
        "price_overrides or cost_estimate_hint",
        provider,
        model,
        remaining,
        extra={"chainwarden_provider": provider, "chainwarden_model": model},
    )

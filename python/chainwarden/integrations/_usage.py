"""Token usage of one provider call, and what it is charged (docs/design.md §20).

Every integration reduces what its framework reports to a ``Usage`` in genai-prices' token semantics
(``input_tokens`` counts cached tokens too, docs/integrations.md) and charges it the same way: priced by
``chainwarden.pricing.price_usage``; a model without a known price is charged the call's estimate, with
its token counts still recorded.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from chainwarden.pricing import price_usage

__all__ = ["PriceOverrides", "Usage", "charge", "count", "price_of"]

_log = logging.getLogger("chainwarden.integrations")

PriceOverrides = Mapping[tuple[str, str], Mapping[str, Any]]


@dataclass
class Usage:
    """What one call consumed. Mutable: a stream fills it in as its events arrive."""

    provider: str
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    seen: bool = False  # whether the provider reported any usage at all
    input_excludes_cache: bool = False  # Anthropic's input_tokens leaves out its cache tokens
    # What else the reply said, kept on the call's node (chainwarden._call_facts): its id, why it ended,
    # and for a stream the text it sent (captured only when the chain captures content).
    response_id: str | None = None
    finish_reasons: list[str] = field(default_factory=list)
    text: list[str] = field(default_factory=list)
    keep_text: bool = False  # a stream's text is gathered only when the chain captures content

    def total_input(self) -> int:
        """Every input token, cached ones included (genai-prices' ``input_tokens``)."""
        cache = self.cache_read_tokens + self.cache_write_tokens
        if self.input_excludes_cache:
            return self.input_tokens + cache
        return max(self.input_tokens, cache)


def count(value: object) -> int:
    """A token count from a provider object: a non-negative int, anything else (None, missing) is 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def price_of(usage: Usage, overrides: PriceOverrides | None) -> Decimal | None:
    """The call's price, or None when it cannot be computed (unknown model, inconsistent counts; logged):
    the one pricing of every integration, for containment and for billing alike."""
    if not usage.seen or not usage.provider or not usage.model:
        return None
    try:
        return price_usage(
            provider=usage.provider,
            model=usage.model,
            input_tokens=usage.total_input(),
            output_tokens=usage.output_tokens,
            cache_read_tokens=usage.cache_read_tokens,
            cache_write_tokens=usage.cache_write_tokens,
            overrides=overrides,
        )
    except (ImportError, TypeError, ValueError) as exc:
        _log.warning(
            "cannot price usage of %s/%s: %s; charging the estimate", usage.provider, usage.model, exc
        )
        return None


def charge(
    usage: Usage,
    estimate: float,
    overrides: PriceOverrides | None,
    report: Callable[[float, int | None, int | None], None],
) -> None:
    """Reports ``usage`` to the open call through ``report(cost_usd, tokens_in, tokens_out)``.

    Nothing is reported when the provider sent no usage (the call is then charged its estimate). A
    price that cannot be computed (unknown model, inconsistent counts) is logged and the estimate is
    reported with the token counts."""
    if not usage.seen:
        return
    tokens_in = usage.total_input()
    price = price_of(usage, overrides)
    try:
        report(estimate if price is None else float(price), tokens_in, usage.output_tokens)
    except ValueError as exc:  # a total the chain cannot hold (docs/design.md §23): charge the estimate
        _log.warning("usage of %s/%s not recorded: %s", usage.provider, usage.model, exc)

"""Token usage of one provider call, and what it is charged (docs/design.md §20, §30).

Every integration reduces what its framework reports to a ``Usage`` in genai-prices' token semantics
(``input_tokens`` counts cached tokens too, docs/integrations.md) and charges it the same way: priced by
``chainwarden.pricing.price_usage``; a model without a known price is charged the call's explicit
estimate (else nothing), with its token counts still recorded. A call whose provider reported no usage
at all is *usage missing*: flagged on its node, logged at WARNING and counted, and charged its estimate.
A count that is not a token count (negative, ``bool``, float, text, ``2**63`` or more) is a ``UsageError``
that ends the call (docs/integrations.md, "Usage the provider reports").
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Final

from chainwarden._args import MAX_INT64
from chainwarden.billing.metrics import METRICS
from chainwarden.errors import ChainwardenError
from chainwarden.pricing import price_usage

__all__ = [
    "USAGE_MISSING",
    "PriceOverrides",
    "Usage",
    "UsageError",
    "charge",
    "count",
    "note_usage_missing",
    "price_of",
]

_log = logging.getLogger("chainwarden.integrations")

PriceOverrides = Mapping[tuple[str, str], Mapping[str, Any]]

# docs/design.md §26: what a token count may be.
MAX_TOKENS: Final = MAX_INT64
# The node metadata key and metric of a call whose provider reported no usage (docs/design.md §30).
USAGE_MISSING: Final = "usage_missing"


class UsageError(ChainwardenError, ValueError):
    """The usage a provider (or a framework) reported cannot be a token count: the call ends with it.

    ``field`` names the count, ``value`` is what was reported."""

    def __init__(self, field: str, value: object, why: str) -> None:
        super().__init__(f"usage field {field} is {_shown(value)}: {why}")
        self.field = field
        self.value = value


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def count(value: object, field: str) -> int:
    """A token count from a provider object: absent (``None``) is 0; a non-negative ``int`` below
    ``2**63`` is itself; anything else raises ``UsageError`` naming ``field``."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise UsageError(field, value, f"a token count must be an int, not {type(value).__name__}")
    if value < 0:
        raise UsageError(field, value, "a token count cannot be negative")
    if value > MAX_TOKENS:
        raise UsageError(field, value, "a token count must be below 2**63")
    return value


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
    finish_reasons: list[str] = dataclasses.field(default_factory=list)
    text: list[str] = dataclasses.field(default_factory=list)
    keep_text: bool = False  # a stream's text is gathered only when the chain captures content

    def total_input(self) -> int:
        """Every input token, cached ones included (genai-prices' ``input_tokens``)."""
        cache = self.cache_read_tokens + self.cache_write_tokens
        # Anthropic counts the cache tokens beside input_tokens; the others inside it.
        total = self.input_tokens + cache if self.input_excludes_cache else max(self.input_tokens, cache)
        if total > MAX_TOKENS:  # several counts, each fine, may add up past what a count holds
            raise UsageError("input_tokens", total, "the input tokens add up to 2**63 or more")
        return total

    def checked(self) -> Usage:
        """Raises ``UsageError`` when a sum of counts (several generations, cache tokens) overflows."""
        self.total_input()
        for field in ("output_tokens", "cache_read_tokens", "cache_write_tokens"):
            count(getattr(self, field), field)
        return self


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
    except UsageError:
        raise
    except (ImportError, TypeError, ValueError) as exc:
        _log.warning("cannot price usage of %s/%s: %s", usage.provider, usage.model, exc)
        return None


Report = Callable[[float, int | None, int | None], None]


def charge(usage: Usage, fallback: float, overrides: PriceOverrides | None, report: Report) -> Decimal | None:
    """Reports what the open call cost through ``report(cost_usd, tokens_in, tokens_out)``.

    Usage priced: that price. Usage without a price (unknown model, inconsistent counts; logged), or no
    usage at all (the caller flags the call, ``note_usage_missing``): ``fallback``, the call's estimate
    (``Estimate.fallback``), with the token counts when there are some. Raises ``UsageError`` when the
    counts overflow. Returns the price (None: unknown or no usage)."""
    if not usage.seen:
        report(fallback, None, None)
        return None
    usage.checked()
    price = price_of(usage, overrides)
    report(fallback if price is None else float(price), usage.total_input(), usage.output_tokens)
    return price


def note_usage_missing(where: str, name: str, flag: Callable[[], None] | None = None) -> None:
    """docs/design.md §30: a call that ended without any usage is flagged (``metadata["usage_missing"]``
    on its node), logged at WARNING with structured fields and counted (``METRICS["usage_missing"]``)."""
    if flag is not None:
        # The node may be pruned meanwhile (max_nodes): the log and the metric still say it.
        with contextlib.suppress(KeyError, RuntimeError, ValueError):
            flag()
    METRICS.increment(USAGE_MISSING)
    _log.warning(
        "%s: call %r ended without any usage reported; charged its estimate",
        where,
        name,
        extra={"chainwarden_metric": USAGE_MISSING, "chainwarden_call": name, "chainwarden_source": where},
    )

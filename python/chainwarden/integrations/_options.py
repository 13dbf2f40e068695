"""The options every integration takes, checked once: a bad one is a ``TypeError`` / ``ValueError`` naming
the argument, raised before anything is changed."""

from __future__ import annotations

from decimal import Decimal

from chainwarden.containment.types import WrapOptions
from chainwarden.errors import InvalidArgumentType
from chainwarden.pricing import override_table

#: A checked price-override table: (provider, model) to its per-million-token prices.
PriceTable = dict[tuple[str, str], dict[str, Decimal]]


def checked_provider(provider: object) -> str | None:
    if provider is not None and (not isinstance(provider, str) or not provider):
        raise InvalidArgumentType(
            f"provider must be a non-empty str or None, got {provider!r}", argument="provider"
        )
    return provider


def checked_hint(cost_estimate_hint: object) -> float | None:
    """The estimate each call reserves (checked as ``WrapOptions`` checks it); None: its worst case."""
    if cost_estimate_hint is None:
        return None
    return WrapOptions(cost_estimate_hint=cost_estimate_hint).cost_estimate_hint  # type: ignore[arg-type]


def checked_overrides(price_overrides: object) -> PriceTable | None:
    """The whole table checked (a typo fails at once, not at the model it names); None when empty."""
    try:
        table = override_table(price_overrides)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"price_overrides: {exc}") from None
    return table or None

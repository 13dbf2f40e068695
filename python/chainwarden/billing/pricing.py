"""Exact credit arithmetic: USD (Decimal) * markup -> integer credits, rounded up per fact."""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import ROUND_CEILING, Context, Decimal

from chainwarden.billing.facts import check_cost_usd

CREDITS_PER_USD = 10_000_000
DEFAULT_MARKUP = 2.0
# Ledger columns are 64-bit signed; a charge that cannot be stored is bad input, not an overflow later.
MAX_CREDITS = 2**63 - 1


def _exact_product(a: Decimal, b: Decimal) -> Decimal:
    # Enough precision that the multiplication never rounds: the product of an m-digit and an n-digit
    # coefficient has at most m + n digits.
    digits = len(a.as_tuple().digits) + len(b.as_tuple().digits) + 2
    return Context(prec=max(28, digits)).multiply(a, b)


def _ceil_credits(usd: Decimal) -> int:
    # scaleb rounds to its context's precision (28 digits by default), which would drop the last
    # digits of a long exact product before the ceiling sees them: keep every digit.
    exact = Context(prec=max(28, len(usd.as_tuple().digits))).scaleb(usd, Decimal(7))
    credits = int(exact.to_integral_value(rounding=ROUND_CEILING))
    if credits > MAX_CREDITS:
        raise ValueError(f"{usd} USD is more credits than a ledger can hold")
    return credits


def usd_to_credits(usd: float | int | Decimal) -> int:
    """Credits for a USD amount without markup, rounded up."""
    return _ceil_credits(check_cost_usd(usd, "usd"))


def cents_to_credits(cents: int) -> int:
    """Credits for a whole number of cents (top-ups)."""
    if isinstance(cents, bool) or not isinstance(cents, int):
        raise TypeError(f"cents must be an int, got {type(cents).__name__}")
    if cents < 0:
        raise ValueError(f"cents must not be negative, got {cents}")
    return _ceil_credits(Decimal(cents).scaleb(-2))


def _check_markup(markup: object) -> Decimal:
    # Same type and finiteness rules as an amount; below 1.0 the user would pay less than the cost.
    value = check_cost_usd(markup, "markup")
    if value < 1:
        raise ValueError(f"markup must be at least 1.0, got {markup!r}")
    return value


@dataclass(frozen=True)
class Pricing:
    """What the user pays for a provider cost: `ceil(cost_usd * markup * CREDITS_PER_USD)` credits a fact."""

    markup: float | Decimal = DEFAULT_MARKUP
    _markup: Decimal = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_markup", _check_markup(self.markup))

    @property
    def exact_markup(self) -> Decimal:
        """The markup as the exact Decimal the arithmetic uses."""
        return self._markup

    def user_cost_usd(self, cost_usd: float | int | Decimal) -> Decimal:
        """The user's cost after markup, exact (stored as the receipt's response_cost_usd)."""
        return _exact_product(check_cost_usd(cost_usd), self._markup)

    def credits_for(self, cost_usd: float | int | Decimal) -> int:
        return _ceil_credits(self.user_cost_usd(cost_usd))

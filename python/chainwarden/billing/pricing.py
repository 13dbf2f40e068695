"""Exact credit arithmetic: USD (Decimal) * markup -> integer credits, rounded up per fact."""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import MAX_EMAX, MAX_PREC, MIN_EMIN, Context, Decimal
from typing import Final

from chainwarden._args import MAX_INT64
from chainwarden.billing.facts import check_cost_usd
from chainwarden.errors import InvalidArgument, InvalidArgumentType

CREDITS_PER_USD = 10_000_000
DEFAULT_MARKUP = 2.0
# Ledger columns are 64-bit signed; a charge that cannot be stored is bad input, not an overflow later.
MAX_CREDITS: Final = MAX_INT64


# Products are exact: with the largest precision libmpdec has, a multiplication never rounds (its result is
# as long as it needs, never as long as the precision), and the widest exponent range means no product
# underflows to zero. One shared context, never changed; the flags an operation sets are never read.
_EXACT = Context(prec=MAX_PREC, Emin=MIN_EMIN, Emax=MAX_EMAX)


def _exact_product(a: Decimal, b: Decimal) -> Decimal:
    return _EXACT.multiply(a, b)


# Amounts outside these bounds are decided without arithmetic on their exact value, whose integer form could
# have millions of digits (1E-99999999 USD is still one credit, 1E+99999999 USD too many for any ledger).
_TINY_ADJUSTED = -20  # below 10**-20 USD: a positive amount is 1 credit
_HUGE_ADJUSTED = 12  # from 10**13 USD: more than MAX_CREDITS


def _ceil_credits(usd: Decimal) -> int:
    """`ceil(usd * CREDITS_PER_USD)`, exactly: in integers, from the amount's exact ratio (no rounding
    context can drop a digit)."""
    if usd.is_zero():
        return 0
    if usd.adjusted() < _TINY_ADJUSTED:
        return 1 if usd > 0 else 0
    if usd.adjusted() >= _HUGE_ADJUSTED:
        raise InvalidArgument(f"{usd} USD is more credits than a ledger can hold", argument="usd")
    numerator, denominator = usd.as_integer_ratio()
    credits = -(-numerator * CREDITS_PER_USD // denominator)
    if credits > MAX_CREDITS:
        raise InvalidArgument(f"{usd} USD is more credits than a ledger can hold", argument="usd")
    return credits


def usd_to_credits(usd: float | int | Decimal) -> int:
    """Credits for a USD amount without markup, rounded up."""
    return _ceil_credits(check_cost_usd(usd, "usd"))


def cents_to_credits(cents: int) -> int:
    """Credits for a whole number of cents (top-ups)."""
    if isinstance(cents, bool) or not isinstance(cents, int):
        raise InvalidArgumentType(f"cents must be an int, got {type(cents).__name__}", argument="cents")
    if cents < 0:
        raise InvalidArgument(f"cents must not be negative, got {cents}", argument="cents")
    return _ceil_credits(Decimal(cents).scaleb(-2))


def _check_markup(markup: object) -> Decimal:
    # Same type and finiteness rules as an amount; below 1.0 the user would pay less than the cost.
    value = check_cost_usd(markup, "markup")
    if value < 1:
        raise InvalidArgument(f"markup must be at least 1.0, got {markup!r}", argument="markup")
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

    def charge(self, cost_usd: float | int | Decimal) -> tuple[Decimal, int]:
        """`(user_cost_usd(cost_usd), credits_for(cost_usd))`, the product computed once."""
        return self._charge_checked(check_cost_usd(cost_usd))

    def _charge_checked(self, cost: Decimal) -> tuple[Decimal, int]:
        """`charge` of an amount already checked (a `UsageFact.cost_decimal`): no second validation."""
        user_cost = _exact_product(cost, self._markup)
        return user_cost, _ceil_credits(user_cost)

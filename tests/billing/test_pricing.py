from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chainwarden.billing import CREDITS_PER_USD, Pricing, cents_to_credits, usd_to_credits


def test_credit_unit_is_fixed() -> None:
    assert CREDITS_PER_USD == 10_000_000
    assert usd_to_credits(1) == 10_000_000
    assert cents_to_credits(1) == 100_000
    assert Pricing().markup == 2.0


def test_the_float_overcharge_is_gone() -> None:
    # What the reference computes in floats: one credit too many.
    assert math.ceil(0.00001 * 2.0 * CREDITS_PER_USD) == 201
    assert Pricing(markup=2.0).credits_for(0.00001) == 200


@pytest.mark.parametrize(
    ("cost", "markup", "credits"),
    [
        (0.00001, 2.0, 200),
        (Decimal("0.00001"), Decimal("2.0"), 200),
        (0.001, 2.0, 20_000),
        (0, 2.0, 0),
        (Decimal("0.00000001"), 1.0, 1),  # a tenth of a credit rounds up to one
        (Decimal("0.0000001"), 1.0, 1),
        (Decimal("0.00000015"), 1.0, 2),
        (0.0000015, 1.5, 23),  # 22.5 → 23
        (3, 1, 30_000_000),
        (Decimal("1.23456789"), Decimal("1.1"), 13_580_247),  # 13580246.79 → 13580247
    ],
)
def test_credits_for(cost: float | Decimal, markup: float | Decimal, credits: int) -> None:
    assert Pricing(markup=markup).credits_for(cost) == credits


def test_user_cost_is_exact() -> None:
    assert Pricing(markup=2.0).user_cost_usd(0.1) == Decimal("0.2")
    assert Pricing(markup=Decimal("1.25")).user_cost_usd(Decimal("0.0000003")) == Decimal("0.000000375")


@given(
    cost=st.decimals(min_value=0, max_value=10_000, allow_nan=False, allow_infinity=False, places=12),
    markup=st.decimals(min_value=1, max_value=100, allow_nan=False, allow_infinity=False, places=4),
)
def test_credits_are_the_exact_ceiling(cost: Decimal, markup: Decimal) -> None:
    exact = Fraction(cost) * Fraction(markup) * CREDITS_PER_USD
    assert Pricing(markup=markup).credits_for(cost) == math.ceil(exact)


@given(cents=st.integers(min_value=0, max_value=10**12))
def test_cents_are_whole_credits(cents: int) -> None:
    assert cents_to_credits(cents) == cents * 100_000


@pytest.mark.parametrize(
    "markup", [0.99, 0, -1, float("nan"), float("inf"), Decimal("NaN"), Decimal("-Infinity")]
)
def test_bad_markup_is_rejected(markup: float | Decimal) -> None:
    with pytest.raises(ValueError):
        Pricing(markup=markup)


@pytest.mark.parametrize("markup", ["2.0", None, True])
def test_markup_of_the_wrong_type_is_rejected(markup: object) -> None:
    with pytest.raises(TypeError):
        Pricing(markup=markup)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "amount", [-0.01, -1, Decimal("-0.000001"), float("nan"), float("inf"), float("-inf"), Decimal("sNaN")]
)
def test_bad_amounts_are_rejected(amount: float | Decimal) -> None:
    with pytest.raises(ValueError):
        Pricing().credits_for(amount)
    with pytest.raises(ValueError):
        usd_to_credits(amount)


@pytest.mark.parametrize("amount", ["0.1", None, True, [1]])
def test_amounts_of_the_wrong_type_are_rejected(amount: object) -> None:
    with pytest.raises(TypeError):
        Pricing().credits_for(amount)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        usd_to_credits(amount)  # type: ignore[arg-type]


def test_cents_must_be_a_non_negative_int() -> None:
    with pytest.raises(ValueError):
        cents_to_credits(-1)
    for bad in (1.5, True, "1", Decimal(1)):
        with pytest.raises(TypeError):
            cents_to_credits(bad)  # type: ignore[arg-type]


def test_a_charge_too_large_for_the_ledger_is_rejected() -> None:
    with pytest.raises(ValueError, match="more credits"):
        Pricing().credits_for(Decimal("1e20"))


@pytest.mark.parametrize(("usd", "error"), [(-1, ValueError), (math.nan, ValueError), ("1", TypeError)])
def test_usd_to_credits_names_its_argument(usd: object, error: type[Exception]) -> None:
    """A mutmut survivor (docs/testing.md): the error must name the argument, `usd`."""
    with pytest.raises(error, match=r"^usd must "):
        usd_to_credits(usd)  # type: ignore[arg-type]


def test_cents_to_credits_names_its_argument() -> None:
    """mutmut survivors (docs/testing.md): both errors name `cents` and what was wrong."""
    with pytest.raises(TypeError, match=r"^cents must be an int, got str$"):
        cents_to_credits("1")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^cents must not be negative, got -1$"):
        cents_to_credits(-1)


def test_a_product_longer_than_28_digits_is_not_rounded() -> None:
    """mutmut survivors (docs/testing.md): the working precision of the markup product. 10**33 + 1 is
    (10**22 - 10**11 + 1) * (10**11 + 1), a 22-digit by 12-digit product of 34 digits; its last digit alone
    makes the amount exceed one credit, so any precision short of 34 digits rounds it down to 1."""
    cost = Decimal(10**22 - 10**11 + 1).scaleb(-29)
    markup = Decimal(10**11 + 1).scaleb(-11)
    assert Pricing(markup).user_cost_usd(cost) == Decimal(f"{10**33 + 1}E-40")
    assert Pricing(markup).credits_for(cost) == 2


@pytest.mark.parametrize("exponent", [-21, -1_000_000, -99_999_999, -(10**18) + 1])
def test_any_positive_amount_costs_at_least_one_credit(exponent: int) -> None:
    """Extreme exponents are decided without building their exact integers (which would hang), and a
    positive amount never rounds down to nothing: the markup product no longer underflows to zero either."""
    tiny = Decimal(f"1E{exponent}")
    assert usd_to_credits(tiny) == 1
    assert Pricing(markup=2.0).credits_for(tiny) == 1
    assert Pricing(markup=2.0).user_cost_usd(tiny) == Decimal(f"2E{exponent}")


@pytest.mark.parametrize("amount", ["922337203685.4775808", "1E+13", "1E+99999999", "1E+999999999999999999"])
def test_amounts_beyond_the_ledger_are_refused_at_once(amount: str) -> None:
    with pytest.raises(ValueError, match="more credits than a ledger can hold"):
        usd_to_credits(Decimal(amount))


def test_the_largest_amount_a_ledger_holds() -> None:
    assert usd_to_credits(Decimal("922337203685.4775807")) == 2**63 - 1
    assert usd_to_credits(Decimal("0")) == usd_to_credits(Decimal("-0")) == 0
    assert usd_to_credits(Decimal("1E-20")) == usd_to_credits(Decimal("0.00000000000000000001")) == 1


def test_charge_is_user_cost_and_credits_at_once() -> None:
    pricing = Pricing(markup=Decimal("1.5"))
    for cost in (Decimal(0), Decimal("0.0000001"), Decimal("123.456789012345678")):
        assert pricing.charge(cost) == (pricing.user_cost_usd(cost), pricing.credits_for(cost))

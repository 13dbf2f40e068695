"""price_usage against the real genai-prices package: exact Decimals, overrides first, unknown is None."""

from __future__ import annotations

import decimal
import logging
import subprocess
import sys
from decimal import Decimal

import genai_prices
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chainwarden.pricing import PRICE_KEYS, price_usage


def package_rates(provider: str, model: str) -> dict[str, Decimal]:
    """The per-million-token rates genai-prices holds for a model today (flat prices only)."""
    calc = genai_prices.calc_price(
        genai_prices.Usage(input_tokens=1, output_tokens=1), model, provider_id=provider
    )
    rates = {key: getattr(calc.model_price, key) for key in PRICE_KEYS}
    assert all(v is None or isinstance(v, Decimal) for v in rates.values()), rates
    return {k: v for k, v in rates.items() if v is not None}


def test_a_well_known_model_priced_two_ways_agrees_exactly() -> None:
    rates = package_rates("openai", "gpt-4o")
    assert {"input_mtok", "output_mtok", "cache_read_mtok"} <= set(rates)
    tokens = {"input_tokens": 12_345, "output_tokens": 678, "cache_read_tokens": 2_000}
    price = price_usage(provider="openai", model="gpt-4o", **tokens)
    by_hand = (
        Decimal(12_345 - 2_000) * rates["input_mtok"]
        + Decimal(678) * rates["output_mtok"]
        + Decimal(2_000) * rates["cache_read_mtok"]
    ) / Decimal(1_000_000)
    assert isinstance(price, Decimal)
    assert price == by_hand
    direct = genai_prices.calc_price(genai_prices.Usage(**tokens), "gpt-4o", provider_id="openai").total_price
    assert price == direct
    # The same rates given as an override price the same usage identically.
    assert (
        price_usage(provider="openai", model="gpt-4o", overrides={("openai", "gpt-4o"): rates}, **tokens)
        == price
    )


def test_anthropic_cache_writes_and_reads_are_priced_at_their_rates() -> None:
    rates = package_rates("anthropic", "claude-3-5-haiku-latest")
    price = price_usage(
        provider="anthropic",
        model="claude-3-5-haiku-latest",
        input_tokens=10_000,
        output_tokens=1_000,
        cache_read_tokens=4_000,
        cache_write_tokens=3_000,
    )
    expected = (
        Decimal(3_000) * rates["input_mtok"]
        + Decimal(4_000) * rates["cache_read_mtok"]
        + Decimal(3_000) * rates["cache_write_mtok"]
        + Decimal(1_000) * rates["output_mtok"]
    ) / Decimal(1_000_000)
    assert price == expected and rates["cache_read_mtok"] < rates["input_mtok"] < rates["cache_write_mtok"]


def test_overrides_take_precedence_and_are_exact() -> None:
    overrides = {
        ("openai", "gpt-4o"): {"input_mtok": "0.1", "output_mtok": Decimal("0.3"), "cache_read_mtok": 0.05},
        ("acme", "in-house-7b"): {"input_mtok": 1, "output_mtok": 2},
    }
    assert price_usage(
        provider="openai", model="gpt-4o", input_tokens=3, output_tokens=7, overrides=overrides
    ) == Decimal("0.0000024")  # (3 * 0.1 + 7 * 0.3) / 1e6, no binary rounding
    # A model genai-prices does not know, priced by the table; missing cache rates charge the input rate.
    assert price_usage(
        provider="acme",
        model="in-house-7b",
        input_tokens=1_000_000,
        output_tokens=500_000,
        cache_read_tokens=10,
        overrides=overrides,
    ) == Decimal(2)
    # Exact even where Python's default 28-digit context would round: 19-digit counts times 19-digit prices.
    fine = {("acme", "fine"): {"input_mtok": "1.000000000000000001", "output_mtok": "2.000000000000000003"}}
    huge = price_usage(
        provider="acme", model="fine", input_tokens=2**63 - 1, output_tokens=2**63 - 1, overrides=fine
    )
    with decimal.localcontext(decimal.Context(prec=100)):
        n = Decimal(2**63 - 1)
        expected = (n * Decimal("1.000000000000000001") + n * Decimal("2.000000000000000003")) / Decimal(
            10**6
        )
    assert huge == expected and len(expected.as_tuple().digits) > 28


def test_unknown_model_is_none_and_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="chainwarden.pricing"):
        for _ in range(3):
            assert (
                price_usage(provider="openai", model="gpt-unknown-test-1", input_tokens=5, output_tokens=5)
                is None
            )
        assert (
            price_usage(provider="no-such-provider-test", model="x", input_tokens=5, output_tokens=5) is None
        )
    records = [r for r in caplog.records if r.name == "chainwarden.pricing"]
    assert len(records) == 2 and records[0].levelno == logging.WARNING
    assert "gpt-unknown-test-1" in records[0].getMessage()


def test_zero_usage_costs_zero() -> None:
    assert price_usage(provider="openai", model="gpt-4o", input_tokens=0, output_tokens=0) == 0


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"provider": 1}, TypeError, "provider"),
        ({"model": ""}, ValueError, "model"),
        ({"input_tokens": -1}, ValueError, "input_tokens"),
        ({"output_tokens": 1.5}, TypeError, "output_tokens"),
        ({"output_tokens": True}, TypeError, "output_tokens"),
        ({"cache_read_tokens": 2**63}, ValueError, "cache_read_tokens"),
        ({"cache_read_tokens": 8, "cache_write_tokens": 8}, ValueError, "cannot exceed input_tokens"),
        ({"overrides": [("openai", "gpt-4o")]}, TypeError, "overrides"),
        ({"overrides": {"gpt-4o": {"input_mtok": 1, "output_mtok": 1}}}, TypeError, "overrides keys"),
        ({"overrides": {("a", "b"): {"input_mtok": 1}}}, ValueError, "output_mtok"),
        ({"overrides": {("a", "b"): {"input_mtok": 1, "output_mtok": 1, "inptu": 2}}}, ValueError, "unknown"),
        ({"overrides": {("a", "b"): {"input_mtok": -1, "output_mtok": 1}}}, ValueError, "non-negative"),
        ({"overrides": {("a", "b"): {"input_mtok": float("nan"), "output_mtok": 1}}}, ValueError, "finite"),
        ({"overrides": {("a", "b"): {"input_mtok": "cheap", "output_mtok": 1}}}, ValueError, "not a number"),
        ({"overrides": {("a", "b"): {"input_mtok": None, "output_mtok": 1}}}, TypeError, "input_mtok"),
    ],
)
def test_bad_arguments_name_the_argument(
    kwargs: dict[str, object], error: type[Exception], match: str
) -> None:
    call: dict[str, object] = {
        "provider": "openai",
        "model": "gpt-4o",
        "input_tokens": 10,
        "output_tokens": 1,
    }
    with pytest.raises(error, match=match):
        price_usage(**{**call, **kwargs})  # type: ignore[arg-type]


def test_missing_package_names_the_extra() -> None:
    code = """
import sys
sys.modules["genai_prices"] = None
from chainwarden.pricing import price_usage
# Overrides need no package:
print(price_usage(provider="a", model="b", input_tokens=1, output_tokens=1,
                  overrides={("a", "b"): {"input_mtok": 1, "output_mtok": 1}}))
try:
    price_usage(provider="openai", model="gpt-4o", input_tokens=1, output_tokens=1)
except ImportError as exc:
    print(exc)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    first, second = out.stdout.strip().splitlines()
    assert first == "0.000002"
    assert "pip install 'chainwarden[prices]'" in second


# Models whose price lists have a cache-write rate distinct from the input rate.
CACHE_WRITE_MODELS = [
    ("anthropic", "claude-sonnet-4-6"),
    ("anthropic", "claude-3-5-haiku-latest"),
    ("anthropic", "claude-opus-4-1"),
]


@pytest.mark.parametrize(("provider", "model"), CACHE_WRITE_MODELS)
@settings(max_examples=60, deadline=None)
@given(
    counts=st.tuples(
        st.integers(0, 2_000_000),
        st.integers(0, 2_000_000),
        st.integers(0, 2_000_000),
        st.integers(0, 200_000),
    )
)
def test_cache_tokens_cost_what_genai_prices_says_directly(
    provider: str, model: str, counts: tuple[int, int, int, int]
) -> None:
    """Checked against the package itself, not against our own arithmetic: a cache-write token priced twice
    (or at the input rate) anywhere in price_usage, genai-prices path or override path, fails here."""
    uncached, read, write, out = counts
    rates = package_rates(provider, model)
    assert rates["cache_write_mtok"] != rates["input_mtok"]
    usage = {"input_tokens": uncached + read + write, "output_tokens": out}
    caches = {"cache_read_tokens": read, "cache_write_tokens": write}
    direct = genai_prices.calc_price(genai_prices.Usage(**usage, **caches), model, provider_id=provider)
    assert price_usage(provider=provider, model=model, **usage, **caches) == direct.total_price
    overridden = price_usage(
        provider=provider, model=model, overrides={(provider, model): rates}, **usage, **caches
    )
    assert overridden == direct.total_price

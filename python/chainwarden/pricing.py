"""Price token usage by provider and model (``pip install chainwarden[prices]``; docs/integrations.md).

Prices come from ``genai-prices``, kept current by its maintainers; the package holds no price table of its
own. A caller's ``overrides`` (negotiated rates, private deployments, models the data does not know yet)
take precedence. An unknown model is priced ``None`` — never guessed — and logged at WARNING on
``chainwarden.pricing``. Arithmetic is exact ``Decimal`` (billing turns it into credits, docs/billing.md).

Token semantics follow genai-prices and OpenAI: ``input_tokens`` counts every input token, cached ones
included; ``cache_read_tokens`` and ``cache_write_tokens`` say how many of them were read from / written to
the prompt cache. (Anthropic reports its cache tokens beside ``input_tokens``: add them in.)
"""

from __future__ import annotations

import decimal
import logging
import math
import threading
from collections.abc import Mapping
from decimal import Decimal
from typing import Any, Final

from chainwarden._args import MAX_INT64
from chainwarden._extras import require
from chainwarden.errors import InvalidArgument, InvalidArgumentType

__all__ = ["PRICE_KEYS", "context_window", "price_usage"]

_log = logging.getLogger("chainwarden.pricing")

# Per-million-token prices an override may give (genai-prices' own names). Input and output are required;
# a missing cache price charges those tokens at the input price (never less than the provider could bill).
PRICE_KEYS: Final = ("input_mtok", "output_mtok", "cache_read_mtok", "cache_write_mtok")
_REQUIRED: Final = ("input_mtok", "output_mtok")
_PER: Final = Decimal(1_000_000)
_MAX_TOKENS: Final = MAX_INT64  # docs/design.md §26
# Exact for any token count below 2^63 times any price with up to ~40 significant digits.
_CONTEXT: Final = decimal.Context(prec=80, traps=[decimal.InvalidOperation, decimal.Overflow])

# Unknown models are logged once each, in a bounded set, so a hot loop cannot flood the log or grow memory.
_warned: set[tuple[str, ...]] = set()
_warned_lock = threading.Lock()
_WARNED_MAX: Final = 1024


def price_usage(
    *,
    provider: str,
    model: str,
    input_tokens: int,
    output_tokens: int,
    cache_read_tokens: int = 0,
    cache_write_tokens: int = 0,
    overrides: Mapping[tuple[str, str], Mapping[str, Any]] | None = None,
) -> Decimal | None:
    """The USD price of one call's usage, or ``None`` when the model's price is unknown.

    ``overrides`` maps ``(provider, model)`` to per-million-token prices keyed by ``PRICE_KEYS``
    (``Decimal``, ``int``, decimal ``str`` or ``float``, read through its shortest repr). Wrong types raise
    ``TypeError`` and bad values ``ValueError``, both naming the argument."""
    provider = _name(provider, "provider")
    model = _name(model, "model")
    tokens_in = _tokens(input_tokens, "input_tokens")
    tokens_out = _tokens(output_tokens, "output_tokens")
    cache_read = _tokens(cache_read_tokens, "cache_read_tokens")
    cache_write = _tokens(cache_write_tokens, "cache_write_tokens")
    if cache_read + cache_write > tokens_in:
        raise InvalidArgument(
            f"cache_read_tokens + cache_write_tokens ({cache_read} + {cache_write}) cannot exceed "
            f"input_tokens ({tokens_in}): input_tokens counts cached tokens too",
            argument="cache_read_tokens",
        )
    table = override_table(overrides)
    prices = table.get((provider, model))
    if prices is not None:
        return _priced(prices, tokens_in, tokens_out, cache_read, cache_write)
    return _from_genai_prices(provider, model, (tokens_in, tokens_out, cache_read, cache_write))


def _from_genai_prices(provider: str, model: str, counts: tuple[int, int, int, int]) -> Decimal | None:
    tokens_in, tokens_out, cache_read, cache_write = counts
    genai_prices = require("genai_prices", "prices")
    usage = genai_prices.Usage(
        input_tokens=tokens_in,
        output_tokens=tokens_out,
        cache_read_tokens=cache_read,
        cache_write_tokens=cache_write,
    )
    try:
        calculation = genai_prices.calc_price(usage, model, provider_id=provider)
    except LookupError as exc:
        _warn_unknown(provider, model, exc)
        return None
    total = calculation.total_price
    return total if isinstance(total, Decimal) else Decimal(str(total))


def context_window(*, provider: str, model: str) -> int | None:
    """The model's context window in tokens as genai-prices lists it, or None (unknown model, or no
    window listed). It bounds what one request can emit when the request sets no output limit."""
    genai_prices = require("genai_prices", "prices")
    try:
        _provider, info = genai_prices.data_snapshot.get_snapshot().find_provider_model(
            model, None, provider, None
        )
    except LookupError:
        return None
    window = getattr(info, "context_window", None)
    return window if isinstance(window, int) and not isinstance(window, bool) and window > 0 else None


def first_warning(*key: str) -> bool:
    """True the first time ``key`` is seen: what is logged once per model is logged once, in a bounded
    set, so a hot loop can neither flood the log nor grow memory (past the bound, every time)."""
    with _warned_lock:
        if key in _warned:
            return False
        if len(_warned) < _WARNED_MAX:
            _warned.add(key)
    return True


def _warn_unknown(provider: str, model: str, exc: LookupError) -> None:
    if first_warning("price", provider, model):
        _log.warning(
            "no price known for provider=%r model=%r (%s); usage left unpriced", provider, model, exc
        )


def _priced(prices: Mapping[str, Decimal], tokens_in: int, tokens_out: int, read: int, write: int) -> Decimal:
    input_price = prices["input_mtok"]
    uncached = tokens_in - read - write
    total = _CONTEXT.add(
        _CONTEXT.add(
            _CONTEXT.multiply(Decimal(uncached), input_price),
            _CONTEXT.multiply(Decimal(tokens_out), prices["output_mtok"]),
        ),
        _CONTEXT.add(
            _CONTEXT.multiply(Decimal(read), prices.get("cache_read_mtok", input_price)),
            _CONTEXT.multiply(Decimal(write), prices.get("cache_write_mtok", input_price)),
        ),
    )
    return _CONTEXT.divide(total, _PER)


def override_table(overrides: object) -> dict[tuple[str, str], dict[str, Decimal]]:
    """Validates the whole override table (every entry, not only the one asked for: a typo fails at once).
    Not exported: what `price_usage` and the integrations' `price_overrides` check."""
    if overrides is None:
        return {}
    if not isinstance(overrides, Mapping):
        raise InvalidArgumentType(
            f"overrides must be a mapping of (provider, model) to prices, got {type(overrides).__name__}",
            argument="overrides",
        )
    table: dict[tuple[str, str], dict[str, Decimal]] = {}
    for key, prices in overrides.items():
        if (
            not isinstance(key, tuple)
            or len(key) != 2
            or not all(isinstance(part, str) and part for part in key)
        ):
            raise InvalidArgumentType(
                f"overrides keys must be (provider, model) tuples of non-empty str, got {key!r}",
                argument="overrides",
            )
        if not isinstance(prices, Mapping):
            raise InvalidArgumentType(
                f"overrides[{key!r}] must be a mapping of price keys, got {type(prices).__name__}",
                argument="overrides",
            )
        unknown = sorted(str(name) for name in prices if name not in PRICE_KEYS)
        if unknown:
            raise InvalidArgument(
                f"overrides[{key!r}] has unknown price keys {unknown}; allowed: {list(PRICE_KEYS)}",
                argument="overrides",
            )
        missing = [name for name in _REQUIRED if name not in prices]
        if missing:
            raise InvalidArgument(f"overrides[{key!r}] lacks {missing}", argument="overrides")
        table[key] = {name: _price(value, f"overrides[{key!r}][{name!r}]") for name, value in prices.items()}
    return table


def _price(value: object, where: str) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, Decimal | int | float | str):
        raise InvalidArgumentType(
            f"{where} must be a Decimal, int, float or decimal str, got {type(value).__name__}",
            argument=where,
        )
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidArgument(f"{where} must be finite, got {value!r}", argument=where)
        value = repr(value)  # 0.15 means 0.15, not its binary neighbour
    try:
        price = Decimal(value)
    except decimal.InvalidOperation as exc:
        raise InvalidArgument(f"{where} is not a number: {value!r}", argument=where) from exc
    if not price.is_finite() or price < 0:
        raise InvalidArgument(f"{where} must be a finite non-negative price, got {value!r}", argument=where)
    return price


def _name(value: object, name: str) -> str:
    if not isinstance(value, str):
        raise InvalidArgumentType(f"{name} must be a str, got {type(value).__name__}", argument=name)
    if not value.strip():
        raise InvalidArgument(f"{name} must not be empty", argument=name)
    return value


def _tokens(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgumentType(f"{name} must be an int, got {type(value).__name__}", argument=name)
    if value < 0 or value > _MAX_TOKENS:
        raise InvalidArgument(f"{name} must be between 0 and 2**63 - 1, got {value}", argument=name)
    return value

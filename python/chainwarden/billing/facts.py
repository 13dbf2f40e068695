"""The usage fact an executor reports for one billable unit of work, and its idempotency key.

The limits of docs/design.md §26 are checked here, when a fact is built, so every store accepts exactly the
same facts: a fact that could be built can always be committed.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any, Final

from chainwarden._args import MAX_INT64
from chainwarden.billing.metrics import METRICS
from chainwarden.errors import InvalidArgument, InvalidArgumentType

logger = logging.getLogger("chainwarden.billing")

_TOKEN_FIELDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
_REQUIRED_TEXT = ("source", "billing_account_id", "virtual_key_id")  # run_id: check_run_id
_OPTIONAL_TEXT = ("usage_unit_id", "provider", "model")

# docs/design.md §26: the limits both stores share.
MAX_TEXT_CHARS = 512
MAX_ATTEMPT = 2**31 - 1
MAX_TOKENS: Final = MAX_INT64
MAX_COST_USD = Decimal(10) ** 12  # exclusive
MAX_COST_DECIMAL_PLACES = 18
# Deeper documents are almost certainly a bug (or an attack on the JSON encoder's recursion).
MAX_USAGE_RAW_DEPTH = 64


def check_text(name: str, value: object, *, optional: bool = False) -> str | None:
    """A non-empty str of at most 512 characters, without NUL or lone surrogates (§26)."""
    if value is None and optional:
        return None
    if not isinstance(value, str):
        expected = "a str or None" if optional else "a str"
        raise InvalidArgumentType(f"{name} must be {expected}, got {type(value).__name__}", argument=name)
    if not value:
        raise InvalidArgument(f"{name} must not be empty", argument=name)
    if len(value) > MAX_TEXT_CHARS:
        raise InvalidArgument(
            f"{name} is {len(value)} characters long; at most {MAX_TEXT_CHARS} are allowed", argument=name
        )
    _check_chars(name, value)
    return value


def check_run_id(value: object, name: str = "run_id") -> str:
    """A run id: text within the §26 limits, without ``/`` (docs/design.md §29). The idempotency key
    ``{run_id}/{attempt}/{usage_unit_id}`` then parses one way only, so two different facts never
    share a key (a ``usage_unit_id`` may contain ``/``)."""
    text = check_text(name, value)
    assert text is not None  # required text
    if "/" in text:
        raise InvalidArgument(
            f"{name} must not contain '/' (it separates the parts of the idempotency key), got {text!r}",
            argument=name,
        )
    return text


def _check_chars(name: str, value: str) -> None:
    if "\x00" in value:
        raise InvalidArgument(f"{name} must not contain NUL characters", argument=name)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidArgument(
            f"{name} must be valid Unicode text (it contains a lone surrogate)", argument=name
        ) from None


def _check_count(name: str, value: object) -> None:
    if value is None:
        return
    # bool is an int subclass; True tokens is a caller bug, not a count.
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgumentType(f"{name} must be an int or None, got {type(value).__name__}", argument=name)
    if value < 0:
        raise InvalidArgument(f"{name} must not be negative, got {value}", argument=name)
    if value > MAX_TOKENS:
        raise InvalidArgument(f"{name} must be below 2**63, got {value}", argument=name)


def check_cost_usd(value: object, name: str = "cost_usd") -> Decimal:
    """Validates a USD amount and returns it as an exact Decimal.

    Floats go through ``str`` so that 0.00001 means the decimal 0.00001 a human wrote, not the binary
    approximation (docs/design.md §16).
    """
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        raise InvalidArgumentType(
            f"{name} must be a float, int or Decimal, got {type(value).__name__}", argument=name
        )
    if isinstance(value, float) and not math.isfinite(value):
        raise InvalidArgument(f"{name} must be finite, got {value!r}", argument=name)
    amount = Decimal(str(value)) if isinstance(value, float) else Decimal(value)
    if not amount.is_finite():
        raise InvalidArgument(f"{name} must be finite, got {value!r}", argument=name)
    if amount < 0:
        raise InvalidArgument(f"{name} must not be negative, got {value!r}", argument=name)
    return amount


def check_fact_cost(value: object) -> Decimal:
    """A fact's cost: an amount (above) below 10**12 USD with at most 18 decimal places (§26)."""
    amount = check_cost_usd(value)
    if amount >= MAX_COST_USD:
        raise InvalidArgument(f"cost_usd must be below 10**12, got {value!r}", argument="cost_usd")
    exponent = amount.normalize().as_tuple().exponent
    assert isinstance(exponent, int)  # finite, checked above
    if -exponent > MAX_COST_DECIMAL_PLACES:
        raise InvalidArgument(
            f"cost_usd has {-exponent} decimal places; at most {MAX_COST_DECIMAL_PLACES} are allowed",
            argument="cost_usd",
        )
    return amount


def check_usage_fields(
    *,
    usage_unit_id: object = None,
    provider: object = None,
    model: object = None,
    input_tokens: object = None,
    output_tokens: object = None,
    cache_read_tokens: object = None,
    cache_write_tokens: object = None,
    cost_usd: object = None,
) -> Decimal | None:
    """The §26 limits of what a provider reports about one call (docs/design.md §26).

    Shared by ``UsageFact`` and by the runtime's ``LlmResult``, so a client adapter learns of a value the
    ledger would refuse when it builds its result, not after the usage is already being billed. Returns the
    cost as the exact Decimal billing uses (None without one)."""
    check_text("usage_unit_id", usage_unit_id, optional=True)
    check_text("provider", provider, optional=True)
    check_text("model", model, optional=True)
    counts = (input_tokens, output_tokens, cache_read_tokens, cache_write_tokens)
    for name, value in zip(_TOKEN_FIELDS, counts, strict=True):
        _check_count(name, value)
    return None if cost_usd is None else check_fact_cost(cost_usd)


def encode_usage_raw(value: object) -> str | None:
    """`usage_raw` as the strict JSON text stored on the receipt, or None.

    Strict: a mapping with str keys whose values are dicts, lists, str, int, finite float, bool or None, so
    that the receipt gives back exactly what was reported (a tuple or a non-str key would come back changed).
    """
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise InvalidArgumentType(
            f"usage_raw must be a mapping or None, got {type(value).__name__}", argument="usage_raw"
        )
    # Iterative walk: a deeply nested document must give a ValueError, not a RecursionError.
    stack: list[tuple[object, int, str]] = [(value, 1, "usage_raw")]
    while stack:
        item, depth, where = stack.pop()
        if depth > MAX_USAGE_RAW_DEPTH:
            raise InvalidArgument(
                f"usage_raw is nested deeper than {MAX_USAGE_RAW_DEPTH} levels", argument="usage_raw"
            )
        if isinstance(item, Mapping):
            for key, child in item.items():
                if not isinstance(key, str):
                    raise InvalidArgumentType(
                        f"{where} has a {type(key).__name__} key; JSON keys must be str", argument=where
                    )
                _check_json_str(f"{where} key", key)
                stack.append((child, depth + 1, f"{where}[{key!r}]"))
        elif isinstance(item, list):
            stack.extend((child, depth + 1, f"{where}[{i}]") for i, child in enumerate(item))
        elif isinstance(item, str):
            _check_json_str(where, item)
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise InvalidArgument(f"{where} is {item!r}; JSON has no NaN or infinity", argument=where)
        elif item is not None and not isinstance(item, int):  # int covers bool
            raise InvalidArgumentType(
                f"{where} is a {type(item).__name__}, which is not a JSON value", argument=where
            )
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def _check_json_str(where: str, value: str) -> None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidArgument(
            f"{where} must be valid Unicode text (it contains a lone surrogate)", argument=where
        ) from None


def decode_usage_raw(text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    decoded = json.loads(text)
    assert isinstance(decoded, dict)
    return decoded


_MISSING_ID = re.compile(r"MISSING:(.*)/(\d+)", re.DOTALL)


def _is_fallback_unit_id(value: object, run_id: str) -> bool:
    # The fallback id is derived from the (already checked) run_id, so it may exceed the text limit.
    match = _MISSING_ID.fullmatch(value) if isinstance(value, str) else None
    return match is not None and match.group(1) == run_id


@dataclass(frozen=True)
class UsageFact:
    """One billable unit (usually one LLM call) of one run attempt; validated on construction (§26)."""

    run_id: str
    attempt: int
    source: str
    billing_account_id: str
    virtual_key_id: str
    usage_unit_id: str | None = None
    provider: str | None = None
    model: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    cost_usd: float | Decimal | None = None
    usage_raw: Mapping[str, Any] | None = None
    # The JSON text of usage_raw, taken at construction: what is billed cannot change if the caller later
    # mutates the mapping it passed.
    usage_raw_json: str | None = field(default=None, init=False, repr=False, compare=False)
    # cost_usd as checked at construction, the exact Decimal billing uses (checked once, not per commit).
    _cost: Decimal | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        check_run_id(self.run_id)
        for name in _REQUIRED_TEXT:
            check_text(name, getattr(self, name))
        unit_id = None if _is_fallback_unit_id(self.usage_unit_id, self.run_id) else self.usage_unit_id
        cost = check_usage_fields(
            usage_unit_id=unit_id,
            provider=self.provider,
            model=self.model,
            **{name: getattr(self, name) for name in _TOKEN_FIELDS},
            cost_usd=self.cost_usd,
        )
        if isinstance(self.attempt, bool) or not isinstance(self.attempt, int):
            raise InvalidArgumentType(
                f"attempt must be an int, got {type(self.attempt).__name__}", argument="attempt"
            )
        if self.attempt < 0:
            raise InvalidArgument(f"attempt must not be negative, got {self.attempt}", argument="attempt")
        if self.attempt > MAX_ATTEMPT:
            raise InvalidArgument(f"attempt must be below 2**31, got {self.attempt}", argument="attempt")
        object.__setattr__(self, "usage_raw_json", encode_usage_raw(self.usage_raw))
        object.__setattr__(self, "_cost", cost)

    @property
    def cost_decimal(self) -> Decimal | None:
        """The cost as the exact Decimal billing uses, or None when the adapter did not report one."""
        return self._cost


def compute_idempotency_key(fact: UsageFact) -> str:
    """`{run_id}/{attempt}/{usage_unit_id}`: the charge's `source_reference`. Unique per fact: the run
    id has no `/` and the attempt is digits, so the first two `/` split it back (docs/design.md §29).

    The fact must already carry its usage_unit_id; `with_usage_unit_id` assigns the fallback.
    """
    if not isinstance(fact, UsageFact):
        raise InvalidArgumentType(f"expected a UsageFact, got {type(fact).__name__}", argument="fact")
    if fact.usage_unit_id is None:
        raise InvalidArgument(
            "fact has no usage_unit_id; resolve it with with_usage_unit_id(fact, call_index) first",
            argument="fact",
        )
    return f"{fact.run_id}/{fact.attempt}/{fact.usage_unit_id}"


def missing_usage_unit_id(run_id: str, call_index: int) -> str:
    return f"MISSING:{run_id}/{call_index}"


def with_usage_unit_id(fact: UsageFact, call_index: int) -> UsageFact:
    """Returns the fact with a usage_unit_id, assigning `MISSING:{run_id}/{call_index}` when it has none.

    A missing id is an adapter bug: it is logged as an error and counted, but billed deterministically so a
    replay of the same run (same call order) never bills twice (docs/design.md §17).
    """
    if not isinstance(fact, UsageFact):
        raise InvalidArgumentType(f"expected a UsageFact, got {type(fact).__name__}", argument="fact")
    if isinstance(call_index, bool) or not isinstance(call_index, int):
        raise InvalidArgumentType(
            f"call_index must be an int, got {type(call_index).__name__}", argument="call_index"
        )
    if call_index < 0:
        raise InvalidArgument(f"call_index must not be negative, got {call_index}", argument="call_index")
    if call_index > MAX_TOKENS:
        raise InvalidArgument(f"call_index must be below 2**63, got {call_index}", argument="call_index")
    if fact.usage_unit_id is not None:
        return fact
    METRICS.increment("billing.missing_usage_unit_id")
    logger.error(
        "billing.missing_usage_unit_id run_id=%s attempt=%s model=%s call_index=%s",
        fact.run_id,
        fact.attempt,
        fact.model,
        call_index,
        # Structured fields a logging handler can read (docs/billing.md, "Money follows what happened").
        extra={
            "chainwarden_metric": "billing.missing_usage_unit_id",
            "chainwarden_run_id": fact.run_id,
            "chainwarden_attempt": fact.attempt,
            "chainwarden_call_index": call_index,
        },
    )
    return replace(fact, usage_unit_id=missing_usage_unit_id(fact.run_id, call_index))


@dataclass(frozen=True, slots=True)
class Billable:
    """A fact resolved for billing, once: its usage_unit_id assigned (`with_usage_unit_id`), the call index
    it was reported at, and its idempotency key. Made by `Billable.resolve` and carried as it is from the
    write-ahead through the outbox and delivery to the ledger (docs/billing.md "The outbox"), so none of them
    resolves the fact or computes its key again."""

    fact: UsageFact
    call_index: int
    key: str

    @classmethod
    def resolve(cls, fact: UsageFact, call_index: int) -> Billable:
        resolved = with_usage_unit_id(fact, call_index)
        return cls(resolved, call_index, compute_idempotency_key(resolved))

"""Every refusal of a usage fact says which argument and what was wrong, in full (docs/design.md §26).

Written for the mutmut survivors of `billing/facts.py` (docs/testing.md, "Mutation testing"): the messages,
the nesting limit of `usage_raw` at its boundary, the largest call_index and the missing-id log line.
"""

from __future__ import annotations

import logging
from decimal import Decimal
from typing import Any

import pytest
from usage_facts import fact

from chainwarden.billing import compute_idempotency_key, with_usage_unit_id
from chainwarden.billing.facts import MAX_TOKENS, MAX_USAGE_RAW_DEPTH, check_cost_usd, check_text


@pytest.mark.parametrize(
    ("overrides", "error", "message"),
    [
        ({"run_id": 7}, TypeError, "run_id must be a str, got int"),
        ({"usage_unit_id": 7}, TypeError, "usage_unit_id must be a str or None, got int"),
        ({"provider": b"x"}, TypeError, "provider must be a str or None, got bytes"),
        ({"model": 1.5}, TypeError, "model must be a str or None, got float"),
        ({"model": ""}, ValueError, "model must not be empty"),
        ({"input_tokens": "3"}, TypeError, "input_tokens must be an int or None, got str"),
        (
            {"cache_write_tokens": 2**63},
            ValueError,
            "cache_write_tokens must be below 2**63, got 9223372036854775808",
        ),
        ({"cost_usd": "0.1"}, TypeError, "cost_usd must be a float, int or Decimal, got str"),
        (
            {"cost_usd": Decimal("1E-19")},
            ValueError,
            "cost_usd has 19 decimal places; at most 18 are allowed",
        ),
        ({"attempt": 1.0}, TypeError, "attempt must be an int, got float"),
        ({"usage_raw": [1]}, TypeError, "usage_raw must be a mapping or None, got list"),
        ({"usage_raw": {1: "x"}}, TypeError, "usage_raw has a int key; JSON keys must be str"),
        ({"usage_raw": {"a": {2: 0}}}, TypeError, "usage_raw['a'] has a int key; JSON keys must be str"),
        (
            {"usage_raw": {"a": [0, (1,)]}},
            TypeError,
            "usage_raw['a'][1] is a tuple, which is not a JSON value",
        ),
        (
            {"usage_raw": {"a": ["ok", "\ud800"]}},
            ValueError,
            "usage_raw['a'][1] must be valid Unicode text (it contains a lone surrogate)",
        ),
    ],
)
def test_a_bad_field_is_named_with_what_was_wrong(
    overrides: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as info:
        fact(**overrides)
    assert str(info.value) == message


def test_the_checks_used_on_their_own_name_their_argument() -> None:
    with pytest.raises(TypeError, match=r"^cost_usd must be a float, int or Decimal, got NoneType$"):
        check_cost_usd(None)
    with pytest.raises(TypeError, match=r"^x must be a str, got int$"):
        check_text("x", 1)
    with pytest.raises(TypeError, match=r"^x must be a str or None, got int$"):
        check_text("x", 1, optional=True)


def test_keys_and_calls_name_what_they_expected() -> None:
    with pytest.raises(TypeError, match=r"^expected a UsageFact, got dict$"):
        compute_idempotency_key({})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^expected a UsageFact, got str$"):
        with_usage_unit_id("fact", 0)  # type: ignore[arg-type]
    missing = fact(usage_unit_id=None)
    with pytest.raises(ValueError) as info:
        compute_idempotency_key(missing)
    assert str(info.value) == (
        "fact has no usage_unit_id; resolve it with with_usage_unit_id(fact, call_index) first"
    )
    with pytest.raises(TypeError, match=r"^call_index must be an int, got float$"):
        with_usage_unit_id(missing, 1.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^call_index must be below 2\*\*63, got 9223372036854775808$"):
        with_usage_unit_id(missing, 2**63)


def test_the_largest_call_index_is_accepted_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR, logger="chainwarden.billing")
    resolved = with_usage_unit_id(fact(usage_unit_id=None, attempt=3), MAX_TOKENS)
    assert resolved.usage_unit_id == f"MISSING:run-1/{MAX_TOKENS}"
    assert compute_idempotency_key(resolved) == f"run-1/3/MISSING:run-1/{MAX_TOKENS}"
    [record] = [r for r in caplog.records if r.name == "chainwarden.billing"]
    assert record.getMessage() == (
        f"billing.missing_usage_unit_id run_id=run-1 attempt=3 model=gpt-x call_index={MAX_TOKENS}"
    )


def nested(depth: int, kind: str) -> dict[str, Any]:
    """A usage_raw document whose deepest value sits `depth` levels down (the mapping itself is level 1)."""
    inner: Any = 0
    for _ in range(depth - 2):
        inner = {"k": inner} if kind == "dict" else [inner]
    return {"top": inner}


@pytest.mark.parametrize("kind", ["dict", "list"])
def test_usage_raw_may_nest_exactly_to_the_limit(kind: str) -> None:
    assert fact(usage_raw=nested(MAX_USAGE_RAW_DEPTH, kind)).usage_raw == nested(MAX_USAGE_RAW_DEPTH, kind)
    with pytest.raises(ValueError, match=rf"^usage_raw is nested deeper than {MAX_USAGE_RAW_DEPTH} levels$"):
        fact(usage_raw=nested(MAX_USAGE_RAW_DEPTH + 1, kind))


def test_usage_raw_is_stored_as_compact_utf8_json() -> None:
    stored = fact(usage_raw={"model": "é中", "n": [1, 2.5, None, True]})
    assert stored.usage_raw_json == '{"model":"é中","n":[1,2.5,null,true]}'

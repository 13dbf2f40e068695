"""docs/design.md §29: a run id never contains '/', so an idempotency key names one fact only."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chainwarden.billing import UsageFact, compute_idempotency_key, with_usage_unit_id
from chainwarden.runtime import GraphRunRequest

BASE: dict[str, Any] = {"source": "inproc", "billing_account_id": "acct-1", "virtual_key_id": "vk-1"}


def fact(run_id: str, attempt: int, unit: str | None) -> UsageFact:
    return UsageFact(run_id=run_id, attempt=attempt, usage_unit_id=unit, **BASE)


def test_the_reported_collision_is_refused_at_the_run_id() -> None:
    # (run "r/1", attempt 0, unit "x") and (run "r", attempt 1, unit "0/x") both made "r/1/0/x".
    with pytest.raises(ValueError, match=r"run_id must not contain '/'"):
        fact("r/1", 0, "x")
    assert compute_idempotency_key(fact("r", 1, "0/x")) == "r/1/0/x"


@pytest.mark.parametrize("run_id", ["/", "a/", "/a", "run/1", "dag/graph/node"])
def test_every_run_id_entry_refuses_a_slash(run_id: str) -> None:
    with pytest.raises(ValueError, match="run_id"):
        fact(run_id, 0, "u")
    with pytest.raises(ValueError, match="run_id"):
        GraphRunRequest("inproc:agent", [], "m", "acct", "vk", run_id=run_id)


# Text that likes the separator: '/', digits and the fallback's own prefix.
pieces = st.text(alphabet="ab0/9:MISNG", min_size=1, max_size=8)
run_ids = st.text(alphabet="ab0:9MISNG-.", min_size=1, max_size=8)


@settings(max_examples=400, deadline=None)
@given(
    a=st.tuples(run_ids, st.integers(0, 12), pieces | st.none(), st.integers(0, 3)),
    b=st.tuples(run_ids, st.integers(0, 12), pieces | st.none(), st.integers(0, 3)),
)
def test_two_different_facts_never_share_a_key(
    a: tuple[str, int, str | None, int], b: tuple[str, int, str | None, int]
) -> None:
    fa = with_usage_unit_id(fact(*a[:3]), a[3])
    fb = with_usage_unit_id(fact(*b[:3]), b[3])
    same_fact = (fa.run_id, fa.attempt, fa.usage_unit_id) == (fb.run_id, fb.attempt, fb.usage_unit_id)
    assert (compute_idempotency_key(fa) == compute_idempotency_key(fb)) == same_fact


@settings(max_examples=300, deadline=None)
@given(run_id=run_ids, attempt=st.integers(0, 2**31 - 1), unit=pieces)
def test_a_key_parses_back_into_its_fact(run_id: str, attempt: int, unit: str) -> None:
    key = compute_idempotency_key(fact(run_id, attempt, unit))
    parsed_run, parsed_attempt, parsed_unit = key.split("/", 2)
    assert (parsed_run, int(parsed_attempt), parsed_unit) == (run_id, attempt, unit)

"""Run records in the ledger (both stores): written at start and end, read with their receipts' totals."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from chainwarden.billing import Ledger, Pricing, RunRecord, UsageFact

T0 = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


def started(run_id: str = "run-1", attempt: int = 0, at: datetime = T0) -> RunRecord:
    return RunRecord(
        run_id=run_id,
        attempt=attempt,
        graph_id="inproc:agent",
        billing_account_id="acct-1",
        virtual_key_id="vk-1",
        model="sim-1",
        status="running",
        started_at=at,
    )


def fact(run_id: str, unit: str, cost: str, attempt: int = 0) -> UsageFact:
    return UsageFact(
        run_id=run_id,
        attempt=attempt,
        source="inproc",
        billing_account_id="acct-1",
        virtual_key_id="vk-1",
        usage_unit_id=unit,
        model="sim-1",
        input_tokens=10,
        output_tokens=5,
        cost_usd=Decimal(cost),
    )


def test_a_run_is_recorded_at_start_and_completed_at_the_end(ledger: Ledger) -> None:
    ledger.record_run(started())
    [running] = ledger.runs()
    assert running == started()  # nothing charged yet, no end
    pricing = Pricing(markup=1.0)
    ledger.commit_usage_fact(fact("run-1", "a", "0.01"), call_index=0, pricing=pricing)
    ledger.commit_usage_fact(fact("run-1", "b", "0.02"), call_index=1, pricing=pricing)
    ledger.commit_usage_fact(fact("run-1", "c", "0.04", attempt=1), call_index=0, pricing=pricing)
    end = T0 + timedelta(seconds=3)
    ledger.record_run(
        dataclasses.replace(
            started(),
            status="error",
            ended_at=end,
            prompt_tokens=20,
            completion_tokens=10,
            finish_reason="error",
            error="timeout",
        )
    )
    [done] = ledger.runs(run_id="run-1")
    assert (done.status, done.error, done.finish_reason) == ("error", "timeout", "error")
    assert (done.started_at, done.ended_at) == (T0, end)
    assert (done.prompt_tokens, done.completion_tokens) == (20, 10)
    # Only the receipts of attempt 0 count, as the ledger charged them.
    receipts = [r for r in ledger.receipts(run_id="run-1") if r.attempt == 0]
    assert done.receipt_count == 2
    assert done.charged_credits == sum(r.charged_credits for r in receipts) > 0


def test_runs_are_listed_latest_first_and_limited(ledger: Ledger) -> None:
    for i in range(5):
        ledger.record_run(started(f"run-{i}", at=T0 + timedelta(minutes=i)))
    ledger.record_run(started("run-2", attempt=1, at=T0 + timedelta(minutes=10)))
    assert [(r.run_id, r.attempt) for r in ledger.runs(limit=3)] == [
        ("run-2", 1),
        ("run-4", 0),
        ("run-3", 0),
    ]
    assert [(r.run_id, r.attempt) for r in ledger.runs(run_id="run-2")] == [("run-2", 1), ("run-2", 0)]
    assert ledger.runs(run_id="nope") == []


def test_recording_an_attempt_again_starts_it_over(ledger: Ledger) -> None:
    ledger.record_run(dataclasses.replace(started(), status="ok", ended_at=T0, prompt_tokens=3))
    later = T0 + timedelta(hours=1)
    ledger.record_run(started(at=later))
    [again] = ledger.runs()
    assert (again.status, again.started_at, again.ended_at, again.prompt_tokens) == (
        "running",
        later,
        None,
        0,
    )


@pytest.mark.parametrize(
    ("change", "error", "names"),
    [
        ({"status": "done"}, ValueError, "status"),
        ({"run_id": ""}, ValueError, "run_id"),
        ({"graph_id": 7}, TypeError, "graph_id"),
        ({"attempt": -1}, ValueError, "attempt"),
        ({"prompt_tokens": True}, TypeError, "prompt_tokens"),
        ({"completion_tokens": 2**63}, ValueError, "completion_tokens"),
        ({"started_at": "today"}, TypeError, "started_at"),
        ({"ended_at": 5}, TypeError, "ended_at"),
        ({"error": "x" * 100_000}, ValueError, "error"),
    ],
)
def test_a_bad_record_is_refused_by_name_and_writes_nothing(
    ledger: Ledger, change: dict[str, object], error: type[Exception], names: str
) -> None:
    with pytest.raises(error, match=names):
        ledger.record_run(dataclasses.replace(started(), **change))  # type: ignore[arg-type]
    assert ledger.runs() == []


def test_bad_read_arguments_are_typed_errors(ledger: Ledger) -> None:
    with pytest.raises(TypeError, match="record"):
        ledger.record_run("run-1")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="limit"):
        ledger.runs(limit=0)
    with pytest.raises(TypeError, match="run_id"):
        ledger.runs(run_id=1)  # type: ignore[arg-type]


def test_a_runs_context_is_kept_exactly(ledger: Ledger) -> None:
    context = {"user_id": "u-1", "session_id": "s-1", "tags": ["beta", "eu"], "attributes": {"plan": "pro"}}
    ledger.record_run(dataclasses.replace(started(), context=context))
    [run] = ledger.runs()
    assert run.context == context
    ledger.record_run(dataclasses.replace(started(), context={"tags": {"env": "prod"}}))
    assert ledger.runs()[0].context == {"tags": {"env": "prod"}}
    with pytest.raises(ValueError):
        ledger.record_run(dataclasses.replace(started(), context={"x": float("nan")}))
    assert ledger.runs()[0].context == {"tags": {"env": "prod"}}  # nothing changed

import math

import pytest

from chainwarden.containment import (
    ChainMetadata,
    ExecutionConfig,
    ExecutionContext,
    WrapOptions,
)
from chainwarden.shield import Decision

GOOD = {"max_cost_usd": 1.0, "max_steps": 5, "max_retries_total": 2, "timeout_ms": 0}


@pytest.mark.parametrize(
    ("field", "value", "error"),
    [
        ("max_cost_usd", math.nan, ValueError),
        ("max_cost_usd", math.inf, ValueError),
        ("max_cost_usd", -0.01, ValueError),
        ("max_cost_usd", True, TypeError),
        ("max_cost_usd", "1.0", TypeError),
        ("max_steps", True, TypeError),
        ("max_steps", 5.0, TypeError),
        ("max_steps", -1, ValueError),
        ("max_retries_total", False, TypeError),
        ("max_retries_total", 2.5, TypeError),
        ("max_retries_total", -3, ValueError),
        ("timeout_ms", True, TypeError),
        ("timeout_ms", 10.0, TypeError),
        ("timeout_ms", -1, ValueError),
        ("timeout_ms", None, TypeError),
    ],
)
def test_config_rejects(field: str, value: object, error: type[Exception]) -> None:
    with pytest.raises(error, match=field):
        ExecutionConfig(**{**GOOD, field: value})  # type: ignore[arg-type]


def test_config_accepts_ints_for_cost_and_zero_limits() -> None:
    cfg = ExecutionConfig(max_cost_usd=2, max_steps=0, max_retries_total=0)
    assert cfg.max_cost_usd == 2.0
    assert isinstance(cfg.max_cost_usd, float)
    assert cfg.timeout_ms == 0


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"cost_estimate_hint": math.nan}, ValueError),
        ({"cost_estimate_hint": -math.inf}, ValueError),
        ({"cost_estimate_hint": -0.5}, ValueError),
        ({"cost_estimate_hint": True}, TypeError),
        ({"timeout_ms": 1.5}, TypeError),
        ({"timeout_ms": True}, TypeError),
        ({"timeout_ms": -1}, ValueError),
        ({"retry_policy_override": 1.0}, TypeError),
        ({"retry_policy_override": -1}, ValueError),
        ({"operation_name": 3}, TypeError),
        ({"model": 3}, TypeError),
    ],
)
def test_wrap_options_reject(kwargs: dict[str, object], error: type[Exception]) -> None:
    with pytest.raises(error):
        WrapOptions(**kwargs)  # type: ignore[arg-type]


def test_metadata_validates_and_freezes_tags() -> None:
    tags = {"env": "prod"}
    meta = ChainMetadata(request_id="r", chain_id="c", tags=tags)
    tags["env"] = "dev"
    assert meta.tags["env"] == "prod"
    with pytest.raises(TypeError):
        meta.tags["x"] = "y"  # type: ignore[index]
    with pytest.raises(TypeError):
        ChainMetadata(request_id=1, chain_id="c")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        ChainMetadata(request_id="r", chain_id="c", user_id=5)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        ChainMetadata(request_id="r", chain_id="c", tags=[("a", "b")])  # type: ignore[arg-type]


def test_context_rejects_wrong_types() -> None:
    cfg = ExecutionConfig(**GOOD)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        ExecutionContext(config=GOOD)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        ExecutionContext(config=cfg, metadata={"chain_id": "x"})  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        ExecutionContext(config=cfg, parent="ctx")  # type: ignore[arg-type]


def test_bad_abort_reason_leaves_context_running() -> None:
    ctx = ExecutionContext(ExecutionConfig(**GOOD))  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        ctx.abort(None)  # type: ignore[arg-type]
    assert not ctx.get_snapshot().aborted
    assert ctx.wrap_llm_call(lambda: None) is Decision.ALLOW


def test_bad_event_is_rejected_and_log_unchanged() -> None:
    ctx = ExecutionContext(ExecutionConfig(**GOOD))  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        ctx.record_event("not an event")  # type: ignore[arg-type]
    assert ctx.get_snapshot().events == ()


def test_child_with_invalid_limits_is_rejected() -> None:
    ctx = ExecutionContext(ExecutionConfig(**GOOD))  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        ctx.spawn_child(max_cost_usd=math.nan)
    with pytest.raises(TypeError):
        ctx.spawn_child(max_steps=True)
    with pytest.raises(ValueError):
        ctx.create_child("a", ["b"])


async def test_bad_wrap_arguments_raise_and_leave_state_unchanged() -> None:
    ctx = ExecutionContext(ExecutionConfig(**GOOD))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="fn must be callable"):
        ctx.wrap_llm_call(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="options must be a WrapOptions"):
        ctx.wrap_tool_call(lambda: None, {"cost_estimate_hint": 1.0})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="fn must be callable"):
        await ctx.wrap_llm_call_async(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="options must be a WrapOptions"):
        await ctx.wrap_tool_call_async(lambda: None, "fast")  # type: ignore[arg-type]
    snap = ctx.get_snapshot()
    assert (snap.step_count, snap.retries_used, len(snap.nodes)) == (0, 0, 0)
    assert ctx.get_graph_snapshot()["aggregates"]["total_llm_calls"] == 0
    assert snap.graph_summary is not None
    with pytest.raises(TypeError):
        snap.graph_summary["total_llm_calls"] = 5  # type: ignore[index]

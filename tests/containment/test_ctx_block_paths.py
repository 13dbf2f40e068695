"""The two paths of ``with ctx.llm_call()`` and of decorated calls (docs/containment.md "Decorators"):
native on a plain chain, through the Python gates otherwise, with the same outcomes; the plans a
context remembers; the typed counters."""

from __future__ import annotations

import contextvars
import gc
import threading
import weakref
from typing import Any

import pytest

from chainwarden._core import CallForms, CallKind, CallPlan, Counters
from chainwarden.containment import (
    CallRefused,
    ExecutionConfig,
    ExecutionContext,
    contained,
    report_cost,
)
from chainwarden.containment.calls import current_call
from chainwarden.errors import InvalidArgumentType, InvalidState
from chainwarden.shield import Decision


class Recorder:
    """A pipeline that allows everything and remembers what it saw: the chain is gated."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def before_llm_call(self, ctx: Any) -> Decision:
        self.seen.append(f"llm:{ctx.tool_name}")
        return Decision.ALLOW

    def before_tool_call(self, ctx: Any) -> Decision:
        self.seen.append(f"tool:{ctx.tool_name}")
        return Decision.ALLOW

    def before_charge(self, ctx: Any, cost: float) -> Decision:
        return Decision.ALLOW

    def on_error(self, ctx: Any, err: BaseException) -> Decision:
        return Decision.RETRY

    def get_events(self) -> list[Any]:
        return []

    def clear_events(self) -> None:
        pass


def make(gated: bool, **limits: Any) -> ExecutionContext:
    cfg = ExecutionConfig(**{"max_cost_usd": 1.0, "max_steps": 10, "max_retries_total": 3, **limits})
    return ExecutionContext(cfg, pipeline=Recorder() if gated else None)


@pytest.mark.parametrize("gated", [False, True])
def test_block_outcomes_are_the_same_on_both_paths(gated: bool) -> None:
    ctx = make(gated, max_steps=2)
    with pytest.raises(ValueError, match="boom"), ctx.llm_call("fails"):
        raise ValueError("boom")
    block = ctx.llm_call("plan", 0.25)
    assert block._plan.native is not gated
    with block:
        report_cost(0.1, tokens_in=3)
        assert ctx.wrap_tool_call(lambda: None) is Decision.ALLOW
    with pytest.raises(CallRefused) as refused, ctx.llm_call("refused"):
        pytest.fail("a refused block must not run")
    assert refused.value.stop_reason == "step_limit_exceeded"
    snap = ctx.get_snapshot()
    by_name = {n.operation_name: n for n in snap.nodes}
    assert (by_name["plan"].status, by_name["plan"].cost_usd, by_name["plan"].tokens_in) == ("ok", 0.1, 3)
    assert by_name[""].parent_id == by_name["plan"].node_id
    assert (by_name["fails"].status, by_name["fails"].error_class) == ("error", "ValueError")
    assert (snap.step_count, snap.retries_used, snap.cost_usd_accumulated) == (2, 1, 0.1)
    if gated:
        assert ctx._s.pipeline.seen == ["llm:fails", "llm:plan", "tool:None"]


@pytest.mark.parametrize("gated", [False, True])
def test_decorated_calls_have_the_same_outcomes_on_both_paths(gated: bool) -> None:
    ctx = make(gated, max_steps=4, max_retries_total=1)

    @ctx.tool_call("search", 0.1)
    def search(query: str, *, fail: bool = False) -> list[str]:
        if fail:
            raise KeyError(query)
        return [query]

    @contained(name="helper")
    def helper() -> int:
        report_cost(0.25)
        return 7

    assert search("otters") == ["otters"]
    with ctx.llm_call("outer"):  # the context is current inside its own block (``with ctx`` would close it)
        assert helper() == 7
    with pytest.raises(KeyError):
        search("x", fail=True)  # counted, one retry consumed, the function's own error goes on
    with pytest.raises(CallRefused) as halted:
        search("y", fail=True)  # finds the retry budget spent
    assert halted.value.stop_reason == "provider_error"
    assert isinstance(halted.value.__cause__, KeyError)
    snap = ctx.get_snapshot()
    assert [(n.operation_name, n.status, n.cost_usd) for n in snap.nodes][:3] == [
        ("search", "ok", 0.1),
        ("helper", "ok", 0.25),
        ("outer", "ok", 0.0),
    ]
    assert snap.nodes[1].parent_id == snap.nodes[2].node_id
    assert (snap.step_count, snap.retries_used) == (3, 1)


def test_a_remembered_plan_does_not_let_bad_arguments_through() -> None:
    ctx = make(False)
    with ctx.llm_call("step", 0.0):
        pass
    with pytest.raises(TypeError, match="cost_estimate_hint"):
        ctx.llm_call("step", False)  # type: ignore[arg-type]  # False == 0.0, and hashes alike
    with pytest.raises(ValueError, match="cost_estimate_hint"):
        ctx.llm_call("step", float("nan"))
    with pytest.raises(TypeError):
        ctx.llm_call(["step"])  # type: ignore[call-overload]
    assert ctx.get_snapshot().step_count == 1


def test_call_forms_reuse_one_plan_per_form_and_reject_what_they_do_not_know() -> None:
    ctx = make(False)
    assert isinstance(ctx, CallForms)  # ``llm_call`` / ``tool_call`` are the native base's
    first = ctx.llm_call("a", 0.5)._plan
    assert ctx.llm_call("a", 0.5)._plan is first  # the common form: the remembered plan
    assert ctx.llm_call(name="a", cost=0.5)._plan is first  # by keyword (the Python layer): the same
    assert ctx.llm_call("a")._plan is not first and ctx.llm_call()._plan is ctx.llm_call("", 0.0)._plan
    assert ctx.tool_call("a", 0.5)._plan.kind == CallKind.TOOL and first.kind == CallKind.LLM
    assert ctx.llm_call("a", 1)._plan is not first  # not an exact float: planned anew, not remembered
    with pytest.raises(InvalidArgumentType, match="operation_name") as named:
        ctx.llm_call(None)  # type: ignore[call-overload]
    assert named.value.argument == "operation_name"
    with pytest.raises(TypeError, match="positional"):
        ctx.llm_call("a", 0.5, 1)  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="bogus"):
        ctx.tool_call(bogus=1)  # type: ignore[call-overload]
    with ctx.llm_call("a", 0.5), ctx.llm_call("a", 0.5):  # one plan, two blocks, nested
        pass
    nodes = ctx.get_snapshot().nodes
    assert [(n.operation_name, n.status) for n in nodes] == [("a", "ok"), ("a", "ok")]
    assert nodes[0].parent_id == nodes[1].node_id  # completion order: the inner block first


def test_the_fast_entry_takes_only_planned_forms_of_exact_types_and_keeps_the_methods_doc() -> None:
    class Name(str):
        pass

    class Context(ExecutionContext):
        pass

    ctx = Context(ExecutionConfig(max_cost_usd=1.0, max_steps=10, max_retries_total=3))
    first = ctx.llm_call("a", 0.5)._plan
    assert ctx.llm_call("a", 0.5)._plan is first  # a subclass's context reads its calls fast too
    assert ctx.llm_call(Name("a"), 0.5)._plan is not first  # a str subclass: the general entry plans it
    assert ctx.tool_call("a", 0.5)._plan is not first and ctx.tool_call("a", 0.5)._plan.kind == CallKind.TOOL
    assert (CallForms.llm_call.__doc__ or "").startswith("`llm_call(name=")
    with pytest.raises(TypeError):
        CallForms.llm_call(object(), "a")  # type: ignore[arg-type]  # not a context: CPython refuses it


def test_a_form_without_an_estimate_is_remembered_by_its_name_alone() -> None:
    ctx = make(False)
    plain = ctx.llm_call("a")._plan
    # 0.0 however it is written, positionally or by keyword: one plan, found by the name alone.
    again = [
        ctx.llm_call("a", 0.0),
        ctx.llm_call("a", -0.0),
        ctx.llm_call(name="a"),
        ctx.llm_call("a", cost=0.0),
    ]
    assert all(block._plan is plain for block in again)
    priced = ctx.llm_call("a", 0.25)._plan
    assert priced is not plain and ctx.llm_call("a", 0.25)._plan is priced
    assert ctx._llm_plans == {"a": plain, ("a", 0.25): priced}
    assert ctx._tool_plans == {}
    with ctx.llm_call("a"), ctx.llm_call("a", 0.25):
        pass
    assert [(n.operation_name, n.status) for n in ctx.get_snapshot().nodes] == [("a", "ok"), ("a", "ok")]


def test_enter_and_exit_called_by_hand_take_the_general_entry_with_its_errors() -> None:
    ctx = make(False)
    block = ctx.llm_call("x")
    with pytest.raises(TypeError):
        block.__enter__(1)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        block.__exit__(None, None)  # type: ignore[call-arg]
    block.__enter__()
    assert block.__exit__(exc_type=None, exc=None, tb=None) is False  # by keyword: the general entry
    block.__enter__()
    failure = KeyError("k")
    assert block.__exit__(KeyError, failure, None) is False  # not suppressed: the caller re-raises
    nodes = ctx.get_snapshot().nodes
    assert [n.status for n in nodes] == ["ok", "error"]
    assert (type(block).__exit__.__doc__ or "").startswith("Leaves the block")


def test_a_context_that_used_named_blocks_is_freed_without_the_cycle_collector() -> None:
    gc.disable()
    try:
        ctx = make(False)
        with ctx.llm_call("a", 0.1), ctx.tool_call("b"):
            pass
        state = weakref.ref(ctx._s)
        del ctx
        assert state() is None  # no reference cycle through the remembered plans
    finally:
        gc.enable()


def test_a_block_left_without_being_entered_raises() -> None:
    block = make(False).llm_call("x")
    with pytest.raises(RuntimeError, match="without being entered"):
        block.__exit__(None, None, None)


def test_call_plans_are_native_only_for_plain_chains() -> None:
    assert isinstance(make(False).llm_call("x")._plan, CallPlan)
    assert make(False).llm_call("x")._plan.native
    assert not make(True).llm_call("x")._plan.native


def test_counters_are_named() -> None:
    ctx = make(False)
    with ctx.llm_call("a", 0.25):
        pass
    with pytest.raises(KeyError), ctx.llm_call("b"):
        raise KeyError("b")
    c = ctx._s.core.counters()
    assert isinstance(c, Counters)
    assert (c.step_count, c.cost_usd, c.retries_used, c.aborted, c.abort_reason, c.record_count) == (
        1,
        0.25,
        1,
        False,
        None,
        2,
    )
    assert c.elapsed_ms >= 0.0
    ctx.abort("stop")
    c = ctx._s.core.counters()
    assert (c.aborted, c.abort_reason) == (True, "stop")


def test_a_block_is_bound_as_itself_and_code_that_outlives_it_keeps_seeing_its_closed_call() -> None:
    ctx = make(False, max_steps=5)
    block = ctx.llm_call("b", 0.0)
    with ctx.llm_call("b", 0.0):  # planned: the native path from here on
        pass
    with block:
        inside = contextvars.copy_context()  # e.g. a task or a worker thread started in the block
        assert inside.run(current_call) == current_call()
        report_cost(0.25)
    # The block ended: the copied context still sees its call, now closed, and charges nobody.
    with pytest.raises(InvalidState, match="after its wrapped call had ended"):
        inside.run(report_cost, 0.5)
    with block:  # the same block object again: a new call; the old context still sees the old one
        with pytest.raises(InvalidState, match="after its wrapped call had ended"):
            inside.run(report_cost, 0.5)
        report_cost(0.125)
    nodes = [n for n in ctx.get_snapshot().nodes if n.operation_name == "b"]
    assert [(n.status, n.cost_usd) for n in nodes] == [("ok", 0.0), ("ok", 0.25), ("ok", 0.125)]


def test_one_block_object_entered_twice_nested_charges_and_parents_each_call() -> None:
    ctx = make(False)
    with ctx.llm_call("n", 0.0):
        pass
    block = ctx.llm_call("n", 0.0)
    with block:
        report_cost(0.5)
        with block:
            report_cost(0.25)
            assert ctx.wrap_tool_call(lambda: None) is Decision.ALLOW
        report_cost(0.125)
    nodes = ctx.get_snapshot().nodes
    by_cost = {n.cost_usd: n for n in nodes if n.operation_name == "n"}
    outer, inner = by_cost[0.625], by_cost[0.25]
    assert inner.parent_id == outer.node_id
    assert [n.parent_id for n in nodes if n.operation_name == ""] == [inner.node_id]


def test_a_block_is_seen_from_another_thread_running_its_context_and_outlives_its_context() -> None:
    block = make(False).llm_call("t", 0.0)  # the block keeps its context alive
    gc.collect()
    seen: list[Any] = []
    with block:
        inside = contextvars.copy_context()
        worker = threading.Thread(target=lambda: seen.append(inside.run(report_cost, 0.5)))
        worker.start()
        worker.join()
    assert seen == [None]
    snap = block._ctx.get_snapshot()
    assert [(n.operation_name, n.cost_usd) for n in snap.nodes] == [("t", 0.5)]
    assert current_call() is None

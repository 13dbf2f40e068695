"""The core's one per-thread stack of open sync calls: the parent of a nested wrap and the call
``report_cost`` charges both come from it, so it must be exact after exceptions, across threads, with
chains interleaved, and when a call is left open or its core is dropped (docs/design.md §20)."""

from __future__ import annotations

import gc
import threading
from typing import Any

import pytest

from chainwarden import _core
from chainwarden.containment import ExecutionConfig, ExecutionContext, WrapOptions
from chainwarden.containment.calls import current_call, report_cost
from chainwarden.errors import InvalidState
from chainwarden.shield import Decision


def make() -> ExecutionContext:
    return ExecutionContext(ExecutionConfig(max_cost_usd=100.0, max_steps=100, max_retries_total=10))


def by_name(ctx: ExecutionContext) -> dict[str, Any]:
    return {n.operation_name: n for n in ctx.get_snapshot().nodes}


def bare_core() -> _core.ChainCore:
    return _core.ChainCore(100.0, 100, 10, 0, "bare")


def leave_open(core: _core.ChainCore, name: str) -> int:
    """Admits a sync call on ``core`` and never settles it (a caller that died between the two)."""
    return core.begin_sync(lambda: None, None, _core.CallKind.LLM, name, None, 0.0)


def test_an_exception_inside_a_nested_wrap_leaves_the_outer_call_innermost() -> None:
    ctx = make()

    def boom() -> None:
        raise ValueError("inner")

    def outer() -> None:
        assert ctx.wrap_tool_call(boom, WrapOptions("inner")) is not Decision.ALLOW
        report_cost(0.25)  # charges the outer call, the inner one has left the stack
        ctx.wrap_tool_call(lambda: None, WrapOptions("after"))

    assert ctx.wrap_llm_call(outer, WrapOptions("outer", 0.1)) is Decision.ALLOW
    assert current_call() is None
    ctx.wrap_llm_call(lambda: None, WrapOptions("top"))
    nodes = by_name(ctx)
    assert nodes["inner"].parent_id == nodes["outer"].node_id
    assert nodes["after"].parent_id == nodes["outer"].node_id
    assert nodes["top"].parent_id is None
    assert nodes["outer"].cost_usd == pytest.approx(0.25)


def test_an_exception_escaping_the_wrapped_call_pops_it() -> None:
    ctx = make()

    def boom() -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        ctx.wrap_llm_call(boom, WrapOptions("interrupted"))
    assert current_call() is None
    ctx.wrap_llm_call(lambda: None, WrapOptions("next"))
    assert by_name(ctx)["next"].parent_id is None


def test_each_thread_has_its_own_stack() -> None:
    ctx = make()
    seen: dict[str, object] = {}
    ready = threading.Event()
    release = threading.Event()

    def other() -> None:
        seen["outside"] = current_call()
        with pytest.raises(InvalidState):
            report_cost(1.0)
        ctx.wrap_tool_call(lambda: report_cost(0.5), WrapOptions("elsewhere"))
        ready.set()
        release.wait(5)

    def outer() -> None:
        t = threading.Thread(target=other)
        t.start()
        assert ready.wait(5)
        found = current_call()
        seen["inside"] = None if found is None else found.core.node_name(found.node)
        release.set()
        t.join(5)

    ctx.wrap_llm_call(outer, WrapOptions("outer"))
    nodes = by_name(ctx)
    assert seen["outside"] is None
    assert nodes["elsewhere"].parent_id is None  # not nested in the other thread's open call
    assert nodes["elsewhere"].cost_usd == pytest.approx(0.5)
    assert seen["inside"] == nodes["outer"].node_id


def test_two_chains_interleaved_on_one_thread() -> None:
    a, b = make(), make()

    def a_inner() -> None:
        report_cost(0.3)

    def b_middle() -> None:
        a.wrap_tool_call(a_inner, WrapOptions("a_inner"))
        report_cost(0.2)

    def a_outer() -> None:
        b.wrap_llm_call(b_middle, WrapOptions("b_middle"))
        report_cost(0.1)

    a.wrap_llm_call(a_outer, WrapOptions("a_outer"))
    na, nb = by_name(a), by_name(b)
    assert na["a_inner"].parent_id == na["a_outer"].node_id  # b's call in between is not a's parent
    assert nb["b_middle"].parent_id is None
    costs = (na["a_outer"].cost_usd, nb["b_middle"].cost_usd, na["a_inner"].cost_usd)
    assert costs == pytest.approx((0.1, 0.2, 0.3))
    assert current_call() is None


def test_a_call_left_open_inside_a_wrap_is_forgotten_when_the_wrap_ends() -> None:
    ctx = make()
    core = bare_core()

    def outer() -> None:
        leave_open(core, "leaked")
        found = current_call()
        assert found is not None and found.core is core

    ctx.wrap_llm_call(outer, WrapOptions("outer"))
    assert current_call() is None
    leaked_too = leave_open(core, "leaked_at_top")
    ctx.wrap_llm_call(lambda: report_cost(0.4), WrapOptions("next"))
    nodes = by_name(ctx)
    assert nodes["next"].cost_usd == pytest.approx(0.4)  # charged to ctx's call, not the leaked one
    assert core.is_open(leaked_too)
    core.settle(leaked_too, True, 0.0)
    assert current_call() is None


def test_a_core_dropped_with_its_call_open_leaves_no_entry() -> None:
    core = bare_core()
    leave_open(core, "leaked")
    found = current_call()
    assert found is not None and found.core is core
    del found, core
    gc.collect()
    assert current_call() is None
    ctx = make()
    ctx.wrap_llm_call(lambda: report_cost(0.2), WrapOptions("after"))
    assert by_name(ctx)["after"].cost_usd == pytest.approx(0.2)


def test_a_core_dropped_elsewhere_is_skipped_by_the_thread_that_left_its_call_open() -> None:
    core: _core.ChainCore | None = bare_core()
    opened = threading.Event()
    dropped = threading.Event()
    seen: list[object] = []

    def worker() -> None:
        assert core is not None
        leave_open(core, "leaked")
        opened.set()
        assert dropped.wait(5)
        seen.append(current_call())  # the entry's core is gone: not a call to charge
        with pytest.raises(InvalidState):
            report_cost(1.0)

    t = threading.Thread(target=worker)
    t.start()
    assert opened.wait(5)
    core = None
    gc.collect()
    dropped.set()
    t.join(5)
    assert seen == [None]


def test_an_outer_call_under_a_dropped_core_entry_is_still_found() -> None:
    ctx = make()
    seen: list[str] = []

    def outer() -> None:
        core = bare_core()
        leave_open(core, "leaked")
        del core
        gc.collect()
        found = current_call()
        seen.append("none" if found is None else "ctx" if found.core is ctx._s.core else "other")
        report_cost(0.6)

    ctx.wrap_llm_call(outer, WrapOptions("outer"))
    assert seen == ["ctx"]
    assert by_name(ctx)["outer"].cost_usd == pytest.approx(0.6)

"""The built-in workloads: for each, a bare baseline and one batch per implementation (docs/bench.md).

Each implementation is built only when its peer is importable; the imports are local so a missing peer costs
nothing and `chainwarden bench` never needs more than the package itself."""

from __future__ import annotations

import asyncio
import importlib
import json
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from chainwarden import ExecutionGraph
from chainwarden.cli.bench.sampling import Batch, timed_loop
from chainwarden.containment import ExecutionConfig, ExecutionContext

__all__ = ["SNAPSHOT_NODES", "WORKLOADS", "Workload", "async_batch", "cw_context"]

SNAPSHOT_NODES = 10_000
# Ceilings no benchmark reaches: containment checks them on every call but never refuses.
_BIG: dict[str, Any] = {"max_cost_usd": 1e12, "max_steps": 10**12, "max_retries_total": 10}
_ATTRS: dict[str, Any] = {"kind": "llm", "name": "step"}
_DONE: dict[str, Any] = {"cost_usd": 0.001, "tokens_in": 10, "tokens_out": 20}

# impl name -> a factory of its batch (called once, after the peer is known to import)
Impls = dict[str, Callable[[], Batch]]


@dataclass(frozen=True)
class Workload:
    name: str
    description: str
    bare: Callable[[], Batch]
    impls: Impls
    # Fewer rounds for workloads whose single operation takes milliseconds (rounds // this, at least 3).
    round_divisor: int = 1


def _noop() -> None:
    return None


async def _anoop() -> None:
    return None


def _empty_loop() -> Batch:
    def batch(k: int) -> int:
        start = time.perf_counter_ns()
        for _ in range(k):
            pass
        return time.perf_counter_ns() - start

    return batch


def _tracer() -> Any:
    from opentelemetry.sdk.trace import TracerProvider  # noqa: PLC0415 - optional peer

    # No span processor: the cheapest SDK pipeline, so the peer pays for no export.
    return TracerProvider().get_tracer("chainwarden.bench")


def cw_context() -> ExecutionContext:
    return ExecutionContext(ExecutionConfig(**_BIG))


def _reference() -> Any:
    # Imported by name: an optional peer without type information.
    return importlib.import_module("veronica_core.containment")


def _ref_context() -> Any:
    ref = _reference()
    return ref.ExecutionContext(ref.ExecutionConfig(**_BIG))


def _ref_graph() -> Any:
    return _reference().ExecutionGraph()


# -- recorder lifecycle: one node begun running and marked successful ---------------------------------------


def _lifecycle_cw() -> Batch:
    g = ExecutionGraph()
    root = g.create_root("bench")
    begin, success = g.begin_node, g.mark_success

    def batch(k: int) -> int:
        start = time.perf_counter_ns()
        for _ in range(k):
            success(begin(root, "llm", "step", running=True), 0.001, 10, 20)
        return time.perf_counter_ns() - start

    return batch


def _lifecycle_ref() -> Batch:
    g = _ref_graph()
    root = g.create_root("bench")
    begin, running, success = g.begin_node, g.mark_running, g.mark_success

    def batch(k: int) -> int:
        start = time.perf_counter_ns()
        for _ in range(k):
            node = begin(root, "llm", "step")
            running(node)
            success(node, 0.001, 10, 20)
        return time.perf_counter_ns() - start

    return batch


def _lifecycle_otel() -> Batch:
    start_span = _tracer().start_span

    def batch(k: int) -> int:
        start = time.perf_counter_ns()
        for _ in range(k):
            span = start_span("step", attributes=_ATTRS)
            span.set_attributes(_DONE)
            span.end()
        return time.perf_counter_ns() - start

    return batch


# -- wrap_llm_call (sync) -----------------------------------------------------------------------------------


def _wrap_cw() -> Batch:
    wrap = cw_context().wrap_llm_call
    return timed_loop(lambda: wrap(_noop))


def _wrap_ref() -> Batch:
    wrap = _ref_context().wrap_llm_call
    return timed_loop(lambda: wrap(_noop))


def _span_around(fn: Callable[[], object]) -> Callable[[], object]:
    span = _tracer().start_as_current_span

    def call() -> object:
        with span("llm_call", attributes=_ATTRS) as s:
            result = fn()
            s.set_attributes(_DONE)
        return result

    return call


def _wrap_otel() -> Batch:
    return timed_loop(_span_around(_noop))


# -- wrap_llm_call_async ------------------------------------------------------------------------------------


def async_batch(make_step: Callable[[], Callable[[], Any]]) -> Batch:
    loop = asyncio.new_event_loop()
    step = make_step()

    async def run(k: int) -> int:
        start = time.perf_counter_ns()
        for _ in range(k):
            await step()
        return time.perf_counter_ns() - start

    def batch(k: int) -> int:
        return loop.run_until_complete(run(k))

    # The loop lives as long as its batch, and is closed with it (an unclosed loop warns when collected).
    weakref.finalize(batch, loop.close)
    return batch


def _async_bare() -> Batch:
    return async_batch(lambda: _anoop)


def _async_cw() -> Batch:
    def make() -> Callable[[], Any]:
        wrap = cw_context().wrap_llm_call_async
        return lambda: wrap(_anoop)

    return async_batch(make)


def _async_otel() -> Batch:
    def make() -> Callable[[], Any]:
        span = _tracer().start_as_current_span

        async def step() -> None:
            with span("llm_call", attributes=_ATTRS) as s:
                await _anoop()
                s.set_attributes(_DONE)

        return step

    return async_batch(make)


# -- the decorator and `with` forms -------------------------------------------------------------------------


def _decorator_cw() -> Batch:
    return timed_loop(cw_context().llm_call("step", 0.0)(_noop))


def _decorator_otel() -> Batch:
    return timed_loop(_tracer().start_as_current_span("llm_call", attributes=_ATTRS)(_noop))


def _with_cw() -> Batch:
    llm_call = cw_context().llm_call

    def step() -> None:
        with llm_call("step", 0.0):
            _noop()

    return timed_loop(step)


def _with_otel() -> Batch:
    span = _tracer().start_as_current_span

    def step() -> None:
        with span("llm_call", attributes=_ATTRS):
            _noop()

    return timed_loop(step)


# -- snapshot_json at 10k nodes -----------------------------------------------------------------------------


def _fill(g: Any, n: int) -> Any:
    root = g.create_root("bench")
    for _ in range(n):
        node = g.begin_node(root, "llm", "step")
        g.mark_running(node)
        g.mark_success(node, 0.001, 10, 20)
    return g


def _snapshot_cw() -> Batch:
    return timed_loop(_fill(ExecutionGraph(), SNAPSHOT_NODES).snapshot_json)


def _snapshot_ref() -> Batch:
    # The reference has no native encoder: its route to JSON is json.dumps(snapshot()).
    g = _fill(_ref_graph(), SNAPSHOT_NODES)
    return timed_loop(lambda: json.dumps(g.snapshot()))


WORKLOADS: list[Workload] = [
    Workload(
        "recorder_lifecycle",
        "begin_node(running=True) + mark_success, per node",
        _empty_loop,
        {"chainwarden": _lifecycle_cw, "veronica-core": _lifecycle_ref, "otel": _lifecycle_otel},
    ),
    Workload(
        "wrap_llm_call",
        "ctx.wrap_llm_call(fn) over fn()",
        lambda: timed_loop(_noop),
        {"chainwarden": _wrap_cw, "veronica-core": _wrap_ref, "otel": _wrap_otel},
    ),
    Workload(
        "wrap_llm_call_async",
        "await ctx.wrap_llm_call_async(fn) over await fn()",
        _async_bare,
        {"chainwarden": _async_cw, "otel": _async_otel},
    ),
    Workload(
        "decorator",
        "@ctx.llm_call(...) function over the bare function",
        lambda: timed_loop(_noop),
        {"chainwarden": _decorator_cw, "otel": _decorator_otel},
    ),
    Workload(
        "with_block",
        "with ctx.llm_call(...): fn() over fn()",
        lambda: timed_loop(_noop),
        {"chainwarden": _with_cw, "otel": _with_otel},
    ),
    Workload(
        "snapshot_json_10k",
        f"snapshot_json() of a {SNAPSHOT_NODES:,}-node graph",
        _empty_loop,
        {"chainwarden": _snapshot_cw, "veronica-core": _snapshot_ref},
        round_divisor=25,
    ),
]

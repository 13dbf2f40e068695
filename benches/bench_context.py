"""ExecutionContext overhead, side by side with veronica-core 3.10.0 (same run, same machine).

    make bench BENCH_ARGS="-k context"   # or the command in benches/README.md

Groups: ``wrap`` (wrap_llm_call(lambda: None) vs a bare call; overhead = wrap - bare), the forms users
write, each with its own bare twin so that overhead = form - bare in one group: ``with`` (``with
ctx.llm_call("step"):`` around a call, vs the same function without the block), ``decorator``
(``@ctx.llm_call`` and ``@contained`` called inside ``with ctx:``, vs the undecorated function), and
``snapshot-10k`` (get_snapshot() on a chain that has made 10,000 calls). veronica-core 3.10.0 has no
with-block or decorator for an ExecutionContext call (its ``veronica_guard`` builds a new container per
call, a different thing), so its wrap is the peer of every form.
"""

from __future__ import annotations

from typing import Any

import pytest
from veronica_core.containment import ExecutionConfig as RefConfig
from veronica_core.containment import ExecutionContext as RefContext

from chainwarden.containment import ExecutionConfig, ExecutionContext, contained

BIG = {"max_cost_usd": 1e12, "max_steps": 10**12, "max_retries_total": 10}


def noop() -> None:
    return None


def chainwarden_ctx() -> Any:
    return ExecutionContext(ExecutionConfig(**BIG))  # type: ignore[arg-type]


def reference_ctx() -> Any:
    return RefContext(RefConfig(**BIG))  # type: ignore[arg-type]


# Rounds of >= 100 µs: a ~1 µs call timed a few times per round is mostly timer noise.
WRAP = {"group": "wrap", "min_time": 0.0001, "warmup": True}


@pytest.mark.benchmark(**WRAP)
def test_bare_call(benchmark: Any) -> None:
    benchmark(noop)


@pytest.mark.benchmark(**WRAP)
@pytest.mark.parametrize("impl", ["chainwarden", "veronica"])
def test_wrap_llm_call(benchmark: Any, impl: str) -> None:
    ctx = chainwarden_ctx() if impl == "chainwarden" else reference_ctx()
    wrap = ctx.wrap_llm_call
    benchmark(wrap, noop)


WITH = {**WRAP, "group": "with"}
DECORATOR = {**WRAP, "group": "decorator"}


def bare_block() -> None:
    noop()


@pytest.mark.benchmark(**WITH)
def test_with_bare(benchmark: Any) -> None:
    benchmark(bare_block)


@pytest.mark.benchmark(**WITH)
def test_with_block(benchmark: Any) -> None:
    ctx = chainwarden_ctx()
    llm_call = ctx.llm_call

    def block() -> None:
        with llm_call("step"):
            noop()

    benchmark(block)
    assert ctx.get_snapshot().step_count > 0


@pytest.mark.benchmark(**WITH)
def test_with_block_veronica_wrap(benchmark: Any) -> None:
    # The peer: veronica-core's only way to contain a call.
    wrap = reference_ctx().wrap_llm_call

    def block() -> None:
        wrap(noop)

    benchmark(block)


@pytest.mark.benchmark(**DECORATOR)
def test_decorator_bare(benchmark: Any) -> None:
    benchmark(noop)


@pytest.mark.benchmark(**DECORATOR)
@pytest.mark.parametrize("form", ["ctx.llm_call", "contained"])
def test_decorated_call(benchmark: Any, form: str) -> None:
    ctx = chainwarden_ctx()
    decorated = ctx.llm_call(noop) if form == "ctx.llm_call" else contained(noop)
    with ctx:
        benchmark(decorated)
    assert ctx.get_snapshot().step_count > 0


@pytest.mark.benchmark(group="snapshot-10k")
@pytest.mark.parametrize("impl", ["chainwarden", "veronica"])
def test_get_snapshot_after_10k_calls(benchmark: Any, impl: str) -> None:
    ctx = chainwarden_ctx() if impl == "chainwarden" else reference_ctx()
    for _ in range(10_000):
        ctx.wrap_llm_call(noop)
    snap = benchmark(ctx.get_snapshot)
    assert snap.step_count == 10_000


@pytest.mark.benchmark(group="snapshot-10k-all-records")
@pytest.mark.parametrize("impl", ["chainwarden", "veronica"])
def test_snapshot_and_read_every_record_after_10k_calls(benchmark: Any, impl: str) -> None:
    # The lazy view only pays off if nobody reads it: this is the cost when everybody does.
    ctx = chainwarden_ctx() if impl == "chainwarden" else reference_ctx()
    for _ in range(10_000):
        ctx.wrap_llm_call(noop)
    records = benchmark(lambda: list(ctx.get_snapshot().nodes))
    assert len(records) == 10_000

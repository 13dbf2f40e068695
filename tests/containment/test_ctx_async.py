"""Async wraps: the coroutine is awaited in the caller's task, which a timeout or abort cancels mid-flight."""

import asyncio
import gc
import threading
import weakref

from ctx_helpers import graph_node, wait_until_cancelled

from chainwarden.containment import ExecutionConfig, ExecutionContext, WrapOptions
from chainwarden.shield import Decision, ShieldPipeline, ToolCallContext


def config(timeout_ms: int = 0) -> ExecutionConfig:
    return ExecutionConfig(max_cost_usd=1.0, max_steps=50, max_retries_total=3, timeout_ms=timeout_ms)


async def test_async_success_counts_cost_and_nests() -> None:
    ctx = ExecutionContext(config())

    async def inner() -> None:
        await asyncio.sleep(0)

    async def outer() -> None:
        assert await ctx.wrap_tool_call_async(inner, WrapOptions("inner")) is Decision.ALLOW

    assert await ctx.wrap_llm_call_async(outer, WrapOptions("outer", 0.25)) is Decision.ALLOW
    snap = ctx.get_snapshot()
    assert snap.step_count == 2
    assert snap.cost_usd_accumulated == 0.25
    inner_rec, outer_rec = snap.nodes
    assert inner_rec.parent_id == outer_rec.node_id
    assert outer_rec.parent_id is None


async def test_chain_timeout_cancels_the_running_task() -> None:
    # The chain's clock starts with the context, on a timer thread: 200 ms (not 30) so that on a loaded
    # machine the call has started before the timeout cancels it (docs/testing.md).
    ctx = ExecutionContext(config(timeout_ms=200))
    cancelled = asyncio.Event()

    async def slow() -> None:
        try:
            await wait_until_cancelled()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    assert await ctx.wrap_llm_call_async(slow, WrapOptions("slow")) is Decision.HALT
    assert cancelled.is_set()
    snap = ctx.get_snapshot()
    [record] = snap.nodes
    assert record.status == "timeout"
    node = graph_node(ctx, record.node_id)
    assert (node["status"], node["stop_reason"]) == ("halt", "timeout")
    assert [e.event_type for e in snap.events if e.hook == "ExecutionContext"] == ["timeout"]
    assert snap.retries_used == 0


async def test_per_call_timeout_cancels_only_that_call() -> None:
    ctx = ExecutionContext(config())
    cancelled = asyncio.Event()

    async def slow() -> None:
        try:
            await wait_until_cancelled()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    assert await ctx.wrap_llm_call_async(slow, WrapOptions("slow", timeout_ms=10)) is Decision.HALT
    assert cancelled.is_set()
    assert ctx.get_snapshot().nodes[-1].status == "timeout"

    async def quick() -> None:
        return None

    # The chain itself is not stopped.
    assert await ctx.wrap_llm_call_async(quick) is Decision.ALLOW


async def test_abort_from_another_thread_cancels_the_running_task() -> None:
    ctx = ExecutionContext(config())
    running = threading.Event()
    cancelled = asyncio.Event()

    async def slow() -> None:
        running.set()
        try:
            await wait_until_cancelled()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    def aborter() -> None:
        running.wait(30)
        ctx.abort("shutdown")

    thread = threading.Thread(target=aborter)
    thread.start()
    decision = await ctx.wrap_tool_call_async(slow, WrapOptions("slow"))
    thread.join()
    assert decision is Decision.HALT
    assert cancelled.is_set()
    [record] = ctx.get_snapshot().nodes
    assert record.status == "aborted"
    assert graph_node(ctx, record.node_id)["stop_reason"] == "aborted"


async def test_async_failure_is_a_retry() -> None:
    ctx = ExecutionContext(config())

    async def broken() -> None:
        raise ValueError("bad response")

    assert await ctx.wrap_llm_call_async(broken) is Decision.RETRY
    snap = ctx.get_snapshot()
    assert snap.retries_used == 1
    assert snap.nodes[-1].status == "error"


async def test_refused_async_call_never_creates_the_coroutine() -> None:
    ctx = ExecutionContext(config())
    ctx.abort("stop")
    created = []

    def factory() -> asyncio.Future[None]:
        created.append(1)
        return asyncio.get_running_loop().create_future()

    assert await ctx.wrap_llm_call_async(factory) is Decision.HALT
    assert created == []


async def test_caller_cancellation_propagates_and_closes_the_node() -> None:
    ctx = ExecutionContext(config())
    inner_cancelled = asyncio.Event()
    started = asyncio.Event()

    async def slow() -> None:
        started.set()
        try:
            await wait_until_cancelled()
        except asyncio.CancelledError:
            inner_cancelled.set()
            raise

    outer = asyncio.ensure_future(ctx.wrap_llm_call_async(slow))
    await started.wait()
    outer.cancel()
    await asyncio.wait((outer,))
    assert outer.cancelled()
    assert inner_cancelled.is_set()
    snap = ctx.get_snapshot()
    assert snap.nodes[-1].status == "error"
    assert snap.retries_used == 0


async def test_concurrent_tasks_nest_under_their_own_call() -> None:
    ctx = ExecutionContext(config())

    def outer_for(label: str) -> object:
        async def outer() -> None:
            for _ in range(2):
                await asyncio.sleep(0)  # let the other task interleave

                async def inner() -> None:
                    await asyncio.sleep(0)

                await ctx.wrap_tool_call_async(inner, WrapOptions(f"inner-{label}"))
                ctx.wrap_tool_call(lambda: None, WrapOptions(f"sync-{label}"))

        return outer

    await asyncio.gather(
        ctx.wrap_llm_call_async(outer_for("a"), WrapOptions("outer-a")),  # type: ignore[arg-type]
        ctx.wrap_llm_call_async(outer_for("b"), WrapOptions("outer-b")),  # type: ignore[arg-type]
    )
    nodes = list(ctx.get_snapshot().nodes)
    outer_ids = {n.operation_name[-1]: n.node_id for n in nodes if n.kind == "llm"}
    children = [n for n in nodes if n.kind == "tool"]
    assert len(children) == 8
    assert all(n.parent_id == outer_ids[n.operation_name[-1]] for n in children)


# The call is awaited in the caller's own task (docs/design.md §6): our cancellations must be taken
# back before the caller goes on, and anyone else's must reach the caller unchanged.


async def test_per_call_timeout_leaves_the_caller_task_uncancelled() -> None:
    ctx = ExecutionContext(config())

    async def slow() -> None:
        await wait_until_cancelled()

    assert await ctx.wrap_llm_call_async(slow, WrapOptions("slow", timeout_ms=10)) is Decision.HALT
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0
    await asyncio.sleep(0.02)  # would raise CancelledError if a cancellation were still pending

    async def quick() -> None:
        await asyncio.sleep(0)

    assert await ctx.wrap_llm_call_async(quick, WrapOptions(timeout_ms=1000)) is Decision.ALLOW


async def test_abort_after_the_call_ended_does_not_cancel_the_caller() -> None:
    ctx = ExecutionContext(config())

    async def quick() -> str:
        await asyncio.sleep(0)
        return "done"

    assert await ctx.wrap_llm_call_async(quick) is Decision.ALLOW
    thread = threading.Thread(target=ctx.abort, args=("later",))
    thread.start()
    thread.join(timeout=5)
    await asyncio.sleep(0.02)  # the abort must not land in this task's later awaits
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0
    assert ctx.get_snapshot().nodes[-1].status == "ok"


async def test_an_outer_timeout_passes_through_the_wrap() -> None:
    ctx = ExecutionContext(config())

    async def slow() -> None:
        await wait_until_cancelled()

    # The caller's own deadline is not ours to swallow, even with a per-call limit pending.
    try:
        async with asyncio.timeout(0.02):
            await ctx.wrap_llm_call_async(slow, WrapOptions("slow", timeout_ms=60_000))
    except TimeoutError:
        pass
    else:
        raise AssertionError("the outer timeout was swallowed")
    snap = ctx.get_snapshot()
    assert (snap.nodes[-1].status, snap.retries_used, snap.aborted) == ("error", 0, False)
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0


async def test_swallowed_timeout_still_ends_the_call_as_a_timeout() -> None:
    ctx = ExecutionContext(config())

    async def stubborn() -> str:
        try:
            await wait_until_cancelled()
        except asyncio.CancelledError:
            return "ignored the cancellation"
        return "slept"

    assert await ctx.wrap_llm_call_async(stubborn, WrapOptions("s", timeout_ms=10)) is Decision.HALT
    assert ctx.get_snapshot().nodes[-1].status == "timeout"
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0


async def test_a_chain_timeout_far_away_lets_an_async_call_finish() -> None:
    """A mutmut survivor (docs/testing.md): the time left on the chain is its timeout minus the elapsed
    milliseconds, both in seconds; a call well inside it is not cut short."""
    ctx = ExecutionContext(config(timeout_ms=60_000))

    async def brief() -> str:
        await asyncio.sleep(0.01)
        return "done"

    assert await ctx.wrap_llm_call_async(brief, WrapOptions("brief", timeout_ms=60_000)) is Decision.ALLOW
    assert await ctx.wrap_llm_call_async(brief, WrapOptions("brief")) is Decision.ALLOW
    assert [r.status for r in ctx.get_snapshot().nodes] == ["ok", "ok"]


async def test_the_smallest_per_call_timeout_still_cancels() -> None:
    """timeout_ms=1 is a limit (only None and 0 mean none): the call is cancelled, the chain goes on."""
    ctx = ExecutionContext(config())
    cancelled = asyncio.Event()

    async def slow() -> None:
        try:
            await wait_until_cancelled()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    assert await ctx.wrap_llm_call_async(slow, WrapOptions("slow", timeout_ms=1)) is Decision.HALT
    assert cancelled.is_set()
    assert ctx.get_snapshot().nodes[-1].status == "timeout"


async def test_async_calls_record_the_model_of_llm_calls_only() -> None:
    """A mutmut survivor (docs/testing.md): the async path attributes a model as the sync one does."""
    ctx = ExecutionContext(config())

    async def call() -> None:
        return None

    assert await ctx.wrap_llm_call_async(call, WrapOptions("plan", model="m-1")) is Decision.ALLOW
    assert await ctx.wrap_tool_call_async(call, WrapOptions("search", model="m-1")) is Decision.ALLOW
    llm, tool = ctx.get_snapshot().nodes
    assert (graph_node(ctx, llm.node_id)["model"], graph_node(ctx, tool.node_id)["model"]) == ("m-1", None)


async def test_a_pipeline_gate_refuses_an_async_call_before_it_runs() -> None:
    """A mutmut survivor (docs/testing.md): the async path asks the pipeline, forwards its verdict and never
    creates the coroutine."""

    class Refuse:
        def before_llm_call(self, tctx: ToolCallContext) -> Decision:
            return Decision.DEGRADE

    ctx = ExecutionContext(config(), pipeline=ShieldPipeline(pre_dispatch=Refuse()))
    created: list[int] = []

    async def call() -> None:
        created.append(1)

    assert await ctx.wrap_llm_call_async(call, WrapOptions("plan")) is Decision.DEGRADE
    assert created == []
    record = ctx.get_snapshot().nodes[-1]
    assert graph_node(ctx, record.node_id)["stop_reason"] == "pipeline_halt"


async def test_a_per_call_timeout_records_what_happened() -> None:
    """mutmut survivors (docs/testing.md): the halt node, the event and the caller's cancellation record."""
    ctx = ExecutionContext(config())

    async def slow() -> None:
        await wait_until_cancelled()

    assert await ctx.wrap_llm_call_async(slow, WrapOptions("slow", timeout_ms=10)) is Decision.HALT
    snap = ctx.get_snapshot()
    node = graph_node(ctx, snap.nodes[-1].node_id)
    assert (node["name"], node["status"], node["stop_reason"], node["error_class"]) == (
        "slow",
        "halt",
        "timeout",
        None,
    )
    [event] = snap.events
    assert (event.event_type, event.decision, event.reason, event.hook) == (
        "timeout",
        Decision.HALT,
        "call slow exceeded timeout_ms=10",
        "ExecutionContext",
    )
    assert event.metadata == {"stop_reason": "timeout", "node_id": node["node_id"]}

    caller = asyncio.ensure_future(ctx.wrap_llm_call_async(slow))
    await asyncio.sleep(0.05)
    caller.cancel()
    await asyncio.wait((caller,))
    node = graph_node(ctx, ctx.get_snapshot().nodes[-1].node_id)
    assert (node["name"], node["status"], node["error_class"]) == ("unnamed", "fail", "CancelledError")


async def test_an_async_call_result_reaches_cost_of() -> None:
    seen: list[object] = []

    def cost_of(result: object) -> float:
        seen.append(result)
        return 0.25

    ctx = ExecutionContext(config(), cost_of=cost_of)

    async def answer() -> dict[str, int]:
        return {"tokens": 3}

    assert await ctx.wrap_llm_call_async(answer, WrapOptions("plan")) is Decision.ALLOW
    assert seen == [{"tokens": 3}]
    assert ctx.get_snapshot().cost_usd_accumulated == 0.25


async def test_a_per_call_timeout_is_the_last_stop_reason() -> None:
    """mutmut survivors (docs/testing.md): the reason a per-call timeout leaves for ``last_stop_reason``."""
    ctx = ExecutionContext(config())

    async def slow() -> None:
        await wait_until_cancelled()

    assert await ctx.wrap_llm_call_async(slow, WrapOptions("slow", timeout_ms=10)) is Decision.HALT
    assert ctx.last_stop_reason == "timeout"


async def test_an_async_failure_reaches_the_retry_hook() -> None:
    """A mutmut survivor (docs/testing.md): the call's own exception, not None, goes to ``on_error``."""
    seen: list[BaseException] = []

    class Retry:
        def on_error(self, tctx: ToolCallContext, err: BaseException) -> Decision:
            seen.append(err)
            return Decision.RETRY

    ctx = ExecutionContext(config(), pipeline=ShieldPipeline(retry=Retry()))
    boom = ValueError("boom")

    async def fails() -> None:
        raise boom

    assert await ctx.wrap_llm_call_async(fails, WrapOptions("plan")) is Decision.RETRY
    assert seen == [boom]


async def test_a_finished_async_call_lets_go_of_the_caller_task() -> None:
    """A mutmut survivor (docs/testing.md): a finished call is no longer tracked for cancellation, so the
    context holds no reference to the caller's task (otherwise every async call would leak one)."""
    ctx = ExecutionContext(config())

    async def quick() -> int:
        return 1

    async def caller() -> Decision:
        return await ctx.wrap_llm_call_async(quick, WrapOptions("quick"))

    task = asyncio.ensure_future(caller())
    assert await task is Decision.ALLOW
    ref = weakref.ref(task)
    del task
    for _ in range(3):  # let the loop run the wake-up callbacks that still hold the finished task
        await asyncio.sleep(0)
    gc.collect()
    assert ref() is None


async def test_an_async_cost_pre_flight_refusal_says_why() -> None:
    """A mutmut survivor (docs/testing.md): the refusal of an estimate over the ceiling explains itself
    with the call's own estimate."""
    ctx = ExecutionContext(config())
    created: list[int] = []

    async def call() -> None:
        created.append(1)

    assert await ctx.wrap_llm_call_async(call, WrapOptions("big", cost_estimate_hint=2.0)) is Decision.HALT
    assert created == []
    reasons = [event.reason for event in ctx.get_snapshot().events]
    assert any("this call's estimate $2.0000" in reason for reason in reasons), reasons


async def test_an_ungated_async_call_is_running_while_it_runs() -> None:
    """A mutmut survivor (docs/testing.md): without a pipeline the call is marked running at admission."""
    ctx = ExecutionContext(config())
    seen: list[str] = []

    async def call() -> None:
        nodes = ctx.get_graph_snapshot()["nodes"].values()
        seen.extend(node["status"] for node in nodes if node["name"] == "plan")

    assert await ctx.wrap_llm_call_async(call, WrapOptions("plan")) is Decision.ALLOW
    assert seen == ["running"]


async def test_each_chain_nests_under_its_own_innermost_call_across_other_chains() -> None:
    """Calls of chain A inside a call of chain B inside a call of A: the inner A call is A's outer call's
    child, B's call has no parent in B, and every kind of call (async wrap, with-block, sync wrap) agrees."""
    a, b = ExecutionContext(config()), ExecutionContext(config())

    async def innermost() -> None:
        assert await a.wrap_tool_call_async(lambda_async, WrapOptions("a-async")) is Decision.ALLOW
        with a.tool_call("a-block"):
            pass
        assert a.wrap_tool_call(lambda: None, WrapOptions("a-sync")) is Decision.ALLOW

    async def in_b() -> None:
        assert await a.wrap_llm_call_async(innermost, WrapOptions("a-inner")) is Decision.ALLOW

    async def in_a() -> None:
        assert await b.wrap_llm_call_async(in_b, WrapOptions("b-call")) is Decision.ALLOW

    assert await a.wrap_llm_call_async(in_a, WrapOptions("a-outer")) is Decision.ALLOW
    by_name = {r.operation_name: r for r in a.get_snapshot().nodes}
    assert by_name["a-outer"].parent_id is None
    assert by_name["a-inner"].parent_id == by_name["a-outer"].node_id  # B's call in between is skipped
    for name in ("a-async", "a-block", "a-sync"):
        assert by_name[name].parent_id == by_name["a-inner"].node_id, name
    [b_call] = b.get_snapshot().nodes
    assert b_call.parent_id is None


async def lambda_async() -> None:
    await asyncio.sleep(0)


async def test_a_cancelled_caller_keeps_the_calls_name_in_its_record() -> None:
    """A mutmut survivor (docs/testing.md): the caller-cancellation record is named like any other."""
    ctx = ExecutionContext(config())
    for options, expected in ((WrapOptions("named-op"), "named-op"), (None, "")):
        started = asyncio.Event()

        async def slow(started: asyncio.Event = started) -> None:
            started.set()
            await wait_until_cancelled()

        caller = asyncio.ensure_future(ctx.wrap_llm_call_async(slow, options))
        await started.wait()
        caller.cancel()
        await asyncio.wait((caller,))
        record = ctx.get_snapshot().nodes[-1]
        assert (record.operation_name, record.status) == (expected, "error")


async def test_an_async_call_late_in_a_busy_chain_gets_the_time_really_left() -> None:
    """A mutmut survivor (docs/testing.md): the time left of the chain comes from its clock, not from
    another counter. 1,900 quick calls take milliseconds; counted as milliseconds they would leave 0.1 s."""
    ctx = ExecutionContext(
        ExecutionConfig(max_cost_usd=1.0, max_steps=5_000, max_retries_total=3, timeout_ms=2_000)
    )
    for _ in range(1_900):
        ctx.wrap_tool_call(lambda: None)

    async def takes_a_while() -> None:
        await asyncio.sleep(0.3)

    assert await ctx.wrap_llm_call_async(takes_a_while) is Decision.ALLOW

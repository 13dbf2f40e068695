"""Partial-result buffers (docs/containment.md "Streamed calls, response usage and reconciliation"): a
streamed call's chunks survive a failure, an abort or a timeout; the context keeps each call's buffer under
its node id within bounded memory; ``attach_partial_buffer`` / ``get_current_partial_buffer`` find the
running call the way ``report_cost`` does."""

from __future__ import annotations

import asyncio
import threading

import pytest
from ctx_helpers import wait_until_cancelled
from veronica_core.partial import PartialResultBuffer as RefBuffer

from chainwarden.containment import (
    ExecutionConfig,
    ExecutionContext,
    PartialBufferOverflow,
    PartialResultBuffer,
    WrapOptions,
    attach_partial_buffer,
    get_current_partial_buffer,
)
from chainwarden.containment.partial import MAX_KEPT_BUFFERS
from chainwarden.shield import Decision


def ctx_with(max_steps: int = 10_000, timeout_ms: int = 0) -> ExecutionContext:
    return ExecutionContext(ExecutionConfig(1.0, max_steps, 3, timeout_ms=timeout_ms))


def test_a_successful_streamed_call_keeps_its_complete_buffer() -> None:
    ctx = ctx_with()
    buf = PartialResultBuffer()
    seen = []

    def stream() -> None:
        seen.append(get_current_partial_buffer())
        for chunk in ("Par", "is"):
            buf.append(chunk)

    assert ctx.wrap_llm_call(stream, WrapOptions("answer", partial_buffer=buf)) is Decision.ALLOW
    assert seen == [buf]
    record = ctx.get_snapshot().nodes[0]
    assert record.partial_buffer is buf
    assert ctx.get_partial_result(record.node_id) is buf
    assert (buf.get_partial(), buf.is_complete, buf.is_partial) == ("Paris", True, False)
    assert get_current_partial_buffer() is None  # outside the call again


def test_a_failed_call_keeps_what_arrived_incomplete() -> None:
    ctx = ctx_with()
    buf = PartialResultBuffer()

    def stream() -> None:
        buf.append("The capital is")
        raise ConnectionError("stream reset")

    assert ctx.wrap_llm_call(stream, WrapOptions(partial_buffer=buf)) is Decision.RETRY
    record = ctx.get_snapshot().nodes[0]
    assert (record.status, record.partial_buffer) == ("error", buf)
    assert (buf.get_partial(), buf.is_complete, buf.is_partial) == ("The capital is", False, True)


def test_an_abort_mid_stream_keeps_the_partial_answer_in_the_stop_snapshot() -> None:
    ctx = ctx_with()
    buf = PartialResultBuffer()
    started = threading.Event()

    def stream() -> None:
        buf.append("first chunk")
        started.set()
        ctx.cancellation_token.wait(5.0)  # a sync streamer polls the token between chunks
        raise RuntimeError("cancelled by the chain")

    aborter = threading.Thread(target=lambda: (started.wait(5.0), ctx.abort("user pressed stop")))
    aborter.start()
    assert ctx.wrap_llm_call(stream, WrapOptions("answer", partial_buffer=buf)) is Decision.HALT
    aborter.join()
    record = ctx.get_snapshot().nodes[-1]
    assert record.status == "aborted"
    assert record.partial_buffer is buf and buf.is_partial
    assert ctx.get_partial_result(record.node_id).get_partial() == "first chunk"


def test_an_async_call_cut_by_its_timeout_keeps_its_chunks() -> None:
    async def main() -> tuple[Decision, PartialResultBuffer, str]:
        ctx = ctx_with()
        buf = PartialResultBuffer()

        async def stream() -> None:
            assert get_current_partial_buffer() is buf
            buf.append("half an ")
            await wait_until_cancelled()

        decision = await ctx.wrap_llm_call_async(stream, WrapOptions(timeout_ms=20, partial_buffer=buf))
        return decision, buf, ctx.get_snapshot().nodes[-1].status

    decision, buf, status = asyncio.run(main())
    assert (decision, status, buf.get_partial(), buf.is_partial) == (
        Decision.HALT,
        "timeout",
        "half an ",
        True,
    )


def test_attach_inside_a_call_binds_the_buffer_to_that_call() -> None:
    ctx = ctx_with()
    buf = PartialResultBuffer()

    def stream() -> None:
        attach_partial_buffer(buf)
        attach_partial_buffer(buf)  # the same buffer again: nothing changes
        get_current_partial_buffer().append("chunk")
        with pytest.raises(RuntimeError, match="different partial buffer"):
            attach_partial_buffer(PartialResultBuffer())

    ctx.wrap_tool_call(stream)
    node_id = ctx.get_snapshot().nodes[0].node_id
    assert ctx.get_partial_result(node_id) is buf
    assert ctx._partial_buffers == {node_id: buf}  # the reference's private view, read-only here
    assert not buf.is_complete  # an attached buffer is completed by its owner (as in the reference)
    assert get_current_partial_buffer() is None


def test_each_call_sees_its_own_buffer_when_nested() -> None:
    ctx = ctx_with()
    outer, inner = PartialResultBuffer(), PartialResultBuffer()
    seen = []

    def child() -> None:
        seen.append(get_current_partial_buffer())

    def parent() -> None:
        seen.append(get_current_partial_buffer())
        ctx.wrap_tool_call(child, WrapOptions(partial_buffer=inner))
        seen.append(get_current_partial_buffer())

    ctx.wrap_llm_call(parent, WrapOptions(partial_buffer=outer))
    assert seen == [outer, inner, outer]


def test_outside_every_call_attach_sets_the_current_buffer_of_this_context() -> None:
    buf = PartialResultBuffer()

    def in_fresh_context() -> tuple[object, object]:
        attach_partial_buffer(buf)
        with pytest.raises(RuntimeError, match="different buffer"):
            attach_partial_buffer(PartialResultBuffer())
        inside: list[object] = []
        ctx_with().wrap_llm_call(lambda: inside.append(get_current_partial_buffer()))
        return get_current_partial_buffer(), inside[0]

    import contextvars  # noqa: PLC0415

    assert contextvars.copy_context().run(in_fresh_context) == (buf, buf)
    assert get_current_partial_buffer() is None  # not in this test's own context


def test_veronicas_buffer_works_too() -> None:
    ctx = ctx_with()
    buf = RefBuffer()
    ctx.wrap_llm_call(lambda: buf.append("x"), WrapOptions(partial_buffer=buf))
    assert buf.is_complete and ctx.get_snapshot().nodes[0].partial_buffer is buf


def test_options_refuse_what_is_not_a_buffer() -> None:
    with pytest.raises(TypeError, match="partial_buffer must provide a callable append"):
        WrapOptions(partial_buffer="text")
    with pytest.raises(TypeError, match="buf must provide a callable mark_complete"):
        attach_partial_buffer(["a list has append, not mark_complete"])
    with pytest.raises(TypeError, match="node_id must be a str"):
        ctx_with().get_partial_result(1)  # type: ignore[arg-type]
    assert ctx_with().get_partial_result("n999999") is None


def test_the_context_keeps_a_bounded_number_of_finished_buffers() -> None:
    ctx = ctx_with()
    buffers = [PartialResultBuffer() for _ in range(MAX_KEPT_BUFFERS + 5)]
    for buf in buffers:
        ctx.wrap_llm_call(lambda: None, WrapOptions(partial_buffer=buf))
    kept = ctx._partial_buffers
    assert len(kept) == MAX_KEPT_BUFFERS
    nodes = ctx.get_snapshot().nodes
    # The oldest finished ones went first; the records say so with None.
    assert [n.partial_buffer for n in nodes[:5]] == [None] * 5
    assert nodes[5].partial_buffer is buffers[5] and nodes[-1].partial_buffer is buffers[-1]


def test_buffers_of_open_calls_are_never_let_go() -> None:
    ctx = ctx_with()
    outer = PartialResultBuffer()

    def many_children() -> None:
        for _ in range(MAX_KEPT_BUFFERS + 10):
            ctx.wrap_tool_call(lambda: None, WrapOptions(partial_buffer=PartialResultBuffer()))
        assert get_current_partial_buffer() is outer

    ctx.wrap_llm_call(many_children, WrapOptions(partial_buffer=outer))
    assert ctx.get_partial_result(ctx.get_snapshot().nodes[-1].node_id) is outer


def test_close_lets_every_buffer_go() -> None:
    ctx = ctx_with()
    ctx.wrap_llm_call(lambda: None, WrapOptions(partial_buffer=PartialResultBuffer()))
    ctx.close()
    assert ctx._partial_buffers == {}


def test_a_buffer_is_bounded_and_refuses_a_chunk_whole() -> None:
    buf = PartialResultBuffer(max_chunks=2, max_bytes=8)
    buf.append("ab")
    with pytest.raises(PartialBufferOverflow) as info:
        buf.append("é" * 4)  # 8 UTF-8 bytes: 2 + 8 > 8
    assert (info.value.truncation_point, info.value.kept_bytes, info.value.total_bytes) == (
        "byte_size",
        2,
        10,
    )
    buf.append("cd")
    with pytest.raises(ValueError, match="2 chunks") as count_info:
        buf.append("e")
    assert isinstance(count_info.value, PartialBufferOverflow)
    assert count_info.value.truncation_point == "chunk_count"
    assert buf.to_dict() == {
        "partial_text": "abcd",
        "chunk_count": 2,
        "is_complete": False,
        "metadata": {},
        "truncated": True,
    }
    buf.mark_complete()
    with pytest.raises(ValueError, match="marked complete"):
        buf.append("late")
    buf.clear()
    assert (buf.get_partial(), buf.is_complete, "truncated" in buf.to_dict()) == ("", False, False)
    with pytest.raises(TypeError, match="chunk must be a str"):
        buf.append(b"bytes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_chunks must be >= 1"):
        PartialResultBuffer(max_chunks=0)

"""The native admission of a call (``ChainCore.begin_sync`` / ``begin``): a node, or a typed refusal that
carries its cause and the refused node (docs/containment.md "The model"); the events name that node."""

from __future__ import annotations

import json

import pytest

from chainwarden._core import CallKind, CallNotAdmitted, ChainCore, StopCause
from chainwarden.containment import ExecutionConfig, ExecutionContext
from chainwarden.errors import ChainwardenError
from chainwarden.shield import Decision


def core(max_steps: int = 1) -> ChainCore:
    return ChainCore(1.0, max_steps, 3, 0, "chain-1")


def test_an_admitted_call_is_a_node_and_a_refusal_is_typed() -> None:
    c = core(max_steps=1)
    node = c.begin_sync(lambda: None, None, CallKind.LLM, "first", None, 0.0)
    assert isinstance(node, int) and c.is_open(node)
    c.settle(node, True, 0.0)
    with pytest.raises(CallNotAdmitted) as refused:
        c.begin(None, CallKind.TOOL, "second", None, 0.0)
    assert isinstance(refused.value, ChainwardenError)
    assert refused.value.cause == StopCause.STEPS
    halted = refused.value.node
    assert not c.is_open(halted)
    record = c.records(0, len(c))[-1]
    assert (record.node_id, record.status, record.stop_reason) == (
        c.node_name(halted),
        "halted",
        "step_limit_exceeded",
    )


def test_a_coroutine_function_is_refused_before_anything_is_counted() -> None:
    c = core()

    async def coro() -> None:
        return None

    with pytest.raises(TypeError, match="coroutine function"):
        c.begin_sync(coro, None, CallKind.LLM, "x", None, 0.0)
    assert (c.counters().step_count, len(c), c.in_flight) == (0, 0, 0)


def _status(c: ChainCore, node: int) -> str:
    status: str = json.loads(c.graph_snapshot_json())["nodes"][c.node_name(node)]["status"]
    return status


@pytest.mark.parametrize("dispatch", [True, False])
def test_a_core_that_dispatches_later_leaves_the_call_created_until_dispatched(dispatch: bool) -> None:
    c = ChainCore(1.0, 5, 3, 0, "chain-2", dispatch=dispatch)
    node = c.begin(None, CallKind.LLM, "x", None, 0.0)
    assert _status(c, node) == ("running" if dispatch else "created")
    c.dispatch(node)
    assert _status(c, node) == "running"


def test_the_refusal_event_names_the_refused_call() -> None:
    ctx = ExecutionContext(ExecutionConfig(max_cost_usd=1.0, max_steps=1, max_retries_total=3))
    assert ctx.wrap_llm_call(lambda: None) is Decision.ALLOW
    assert ctx.wrap_llm_call(lambda: None) is Decision.HALT
    refused = ctx.get_snapshot().nodes[-1]
    events = ctx.get_snapshot().events
    (event,) = [e for e in events if e.metadata.get("stop_reason") == "step_limit_exceeded"]
    assert refused.status == "halted"
    assert event.metadata["node_id"] == refused.node_id

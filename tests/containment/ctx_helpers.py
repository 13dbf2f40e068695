"""Shared assertions for containment tests."""

from __future__ import annotations

import asyncio
from typing import Any, NoReturn

from chainwarden.containment import ExecutionContext
from chainwarden.shield import Decision

# How long a call that "runs until cancelled" waits before it gives up. Far longer than any timeout or
# abort the tests arm (tens of milliseconds), far shorter than the per-test timeout (docs/testing.md): a
# cancellation that never comes fails the test by its name in seconds instead of hanging the suite.
CANCEL_WAIT_S = 5.0


async def wait_until_cancelled() -> NoReturn:
    """Stands for a provider call that never returns: only a cancellation ends it. Bounded, and loud when
    the cancellation does not come."""
    await asyncio.sleep(CANCEL_WAIT_S)
    raise AssertionError(f"the call was not cancelled within {CANCEL_WAIT_S} s")


def graph_node(ctx: ExecutionContext, node_id: str) -> dict[str, Any]:
    node: dict[str, Any] = ctx.get_graph_snapshot()["nodes"][node_id]
    return node


def stop_events(ctx: ExecutionContext) -> list[str]:
    """The chain's stop events (``hook="ExecutionContext"``), in order."""
    return [e.event_type for e in ctx.get_snapshot().events if e.hook == "ExecutionContext"]


def assert_stop(ctx: ExecutionContext, stop_reason: str) -> None:
    """The chain emitted exactly one ExecutionContext event for ``stop_reason`` and the last
    recorded call is a ``halt`` node carrying it."""
    snap = ctx.get_snapshot()
    mine = [e for e in snap.events if e.hook == "ExecutionContext" and e.event_type == stop_reason]
    assert len(mine) == 1, snap.events
    assert mine[0].decision is Decision.HALT
    assert mine[0].request_id == ctx.metadata.request_id
    last = snap.nodes[-1]
    node = graph_node(ctx, last.node_id)
    assert node["status"] == "halt"
    assert node["stop_reason"] == stop_reason


class Calls:
    """A callable that counts its invocations and optionally raises."""

    def __init__(self, error: BaseException | None = None) -> None:
        self.count = 0
        self.error = error

    def __call__(self) -> None:
        self.count += 1
        if self.error is not None:
            raise self.error

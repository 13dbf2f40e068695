"""What code written against veronica-core 3.10 reads beyond the public API, compared with the reference
itself (installed as the test oracle): ``_root_id``, ``_observers`` / ``_subscribers`` of an
ExecutionGraph, ``_aborted`` / ``_retries_used`` / ``_step_count`` / ``_config`` of an ExecutionContext, the
divergence signature, the validation wording (docs/recorder.md "Differences from veronica-core 3.10",
docs/containment.md "Migrating from veronica-core")."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from veronica_core.containment import ExecutionConfig as RefConfig
from veronica_core.containment import ExecutionContext as RefContext
from veronica_core.containment import WrapOptions as RefOptions
from veronica_core.containment.execution_graph import ExecutionGraph as RefGraph

from chainwarden import ExecutionConfig, ExecutionContext, ExecutionGraph, NodeEvent, WrapOptions


class Observer:
    def on_node_start(self, node_id: str, kind: str, name: str) -> None:
        pass


@pytest.mark.parametrize("graph_type", [ExecutionGraph, RefGraph])
def test_hook_lists_read_like_the_reference(graph_type: Any) -> None:
    first, second = Observer(), Observer()
    graph = graph_type(observers=[first])
    graph.add_observer(second)
    seen: list[NodeEvent] = []
    subscriber = seen.append  # removal is by identity: keep the one bound method
    graph.add_subscriber(subscriber)
    assert graph._observers == [first, second]
    assert graph._subscribers == [subscriber]
    graph.remove_observer(first)
    graph.remove_subscriber(subscriber)
    assert (graph._observers, graph._subscribers) == ([second], [])


def test_hook_lists_are_copies() -> None:
    graph = ExecutionGraph()
    graph._subscribers.append(print)  # a new list each read: the graph is unchanged
    assert graph._subscribers == []


@pytest.mark.parametrize(
    ("config", "context", "options"),
    [
        (ExecutionConfig, ExecutionContext, WrapOptions),
        (RefConfig, RefContext, RefOptions),
    ],
)
def test_context_private_reads_and_divergence_signature(config: Any, context: Any, options: Any) -> None:
    ctx = context(config(max_cost_usd=1.0, max_steps=10, max_retries_total=3))

    def boom() -> None:
        raise ConnectionError("down")

    ctx.wrap_llm_call(boom)
    assert (ctx._aborted, ctx._retries_used, ctx._step_count) == (False, 1, 0)
    assert ctx._config.max_steps == 10
    for _ in range(3):
        ctx.wrap_tool_call(lambda: None, options(operation_name="call_api"))
    assert ctx._step_count == 3
    [event] = [e for e in ctx.get_snapshot().events if e.event_type == "divergence_suspected"]
    assert event.metadata["signature"] == ["tool", "call_api"]
    ctx.close()
    assert ctx._aborted is True


@pytest.mark.parametrize(("config", "options"), [(ExecutionConfig, WrapOptions), (RefConfig, RefOptions)])
def test_negative_numbers_are_refused_in_the_same_words(config: Any, options: Any) -> None:
    with pytest.raises(ValueError, match="non-negative"):
        config(max_cost_usd=-1.0, max_steps=1, max_retries_total=1)
    with pytest.raises(ValueError, match="non-negative"):
        options(cost_estimate_hint=-0.01)


def test_a_breaker_whose_close_raises_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    class Breaker:
        def check(self, ctx: Any) -> Any:
            raise AssertionError("not called")

        def record_success(self) -> None: ...

        def record_failure(self, error: BaseException | None = None) -> None: ...

        def close(self) -> None:
            raise RuntimeError("close exploded")

    ctx = ExecutionContext(ExecutionConfig(1.0, 1, 1), circuit_breaker=Breaker())
    with caplog.at_level(logging.WARNING, logger="chainwarden.containment"):
        ctx.close()  # docs/design.md §22: logged, never raised
    assert ctx._aborted is True
    assert any("close() raised" in r.getMessage() for r in caplog.records)

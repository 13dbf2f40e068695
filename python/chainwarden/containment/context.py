"""ExecutionContext: chain-level containment for one agent run (seed 003, decisions 4-6).

Every wrapped call is admitted by the native ``ChainCore`` (abort, cost ceiling, step limit, retry
budget, timeout, cost-estimate pre-flight, in that order), then by the pipeline and the circuit
breaker, and becomes a node of the chain's ExecutionGraph. The fast path (no pipeline, no breaker)
is two native calls around the callable: ``begin`` (limits + node) and ``succeed``.
"""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
import weakref
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from types import MappingProxyType, TracebackType
from typing import TYPE_CHECKING, Any, Final

from chainwarden._core import ChainCore
from chainwarden.containment._async import wrap_async
from chainwarden.containment._decorators import Contained, contained
from chainwarden.containment._events import EventLog, stop_event
from chainwarden.containment._fast import StopNote, sync_wrap
from chainwarden.containment._outcomes import CAUSE_BUDGET, CAUSE_TIMEOUT
from chainwarden.containment._records import NodeRecordView
from chainwarden.containment._timeouts import timeouts
from chainwarden.containment._validate import check_collaborators
from chainwarden.containment.types import (
    CancellationToken,
    ChainMetadata,
    ContextSnapshot,
    ExecutionConfig,
    WrapOptions,
)
from chainwarden.shield.event import SafetyEvent
from chainwarden.shield.types import Decision

__all__ = ["ExecutionContext"]

_BUDGET_EPSILON: Final = 1e-9


class ExecutionContext:
    """Containment state shared by every LLM and tool call of one chain."""

    # Slots: the fast path reads a handful of these per call, and slot reads are the cheapest.
    __slots__ = (
        "__weakref__",
        "_async_used",
        "_breaker",
        "_closed",
        "_config",
        "_core",
        "_current",
        "_dispatch",
        "_events",
        "_gated",
        "_llm_model",
        "_lock",
        "_metadata",
        "_metrics",
        "_note",
        "_parent",
        "_pipeline",
        "_plain",
        "_stop_snapshot",
        "_tasks",
        "_timer",
        "_token",
    )

    def __init__(  # noqa: PLR0917  (positional order of the reference API)
        self,
        config: ExecutionConfig,
        pipeline: Any = None,
        metadata: ChainMetadata | None = None,
        circuit_breaker: Any = None,
        parent: ExecutionContext | None = None,
        metrics: Any = None,
    ) -> None:
        if not isinstance(config, ExecutionConfig):
            raise TypeError(f"config must be an ExecutionConfig, got {type(config).__name__}")
        if metadata is not None and not isinstance(metadata, ChainMetadata):
            raise TypeError(f"metadata must be a ChainMetadata, got {type(metadata).__name__}")
        if parent is not None and not isinstance(parent, ExecutionContext):
            raise TypeError(f"parent must be an ExecutionContext, got {type(parent).__name__}")
        metrics = check_collaborators(pipeline, circuit_breaker, metrics)
        self._config = config
        self._pipeline = pipeline
        self._breaker = circuit_breaker
        self._metrics = metrics
        self._parent = parent
        self._metadata = metadata or ChainMetadata(request_id=str(uuid.uuid4()), chain_id=str(uuid.uuid4()))
        if circuit_breaker is not None and hasattr(circuit_breaker, "bind_to_context"):
            circuit_breaker.bind_to_context(self._metadata.chain_id)
        self._core = ChainCore(
            config.max_cost_usd,
            config.max_steps,
            config.max_retries_total,
            config.timeout_ms,
            self._metadata.chain_id,
        )
        self._token = CancellationToken()
        self._events = EventLog()
        # The enclosing async call of this chain, inherited by the tasks it creates. Sync nesting
        # is tracked natively per thread. Per instance: a wrap nested in another context's wrap
        # must not adopt that context's node.
        self._current: ContextVar[int | None] = ContextVar(f"chainwarden_node_{id(self):x}", default=None)
        self._llm_model = self._metadata.model
        # Nothing to consult or notify besides the core: the fast path may finish the call inline.
        self._gated = pipeline is not None or circuit_breaker is not None
        self._dispatch = not self._gated
        self._plain = not self._gated and parent is None and metrics is None
        # Until an async wrap runs, no task can carry a parent node: skip the ContextVar read.
        self._async_used = False
        self._note = StopNote()
        self._lock = threading.Lock()
        self._tasks: dict[asyncio.Task[Any], asyncio.AbstractEventLoop] = {}
        self._closed = False
        self._stop_snapshot: ContextSnapshot | None = None
        self._timer: int | None = None
        if config.timeout_ms > 0:
            self._start_timer(config.timeout_ms / 1000.0)

    # -- lifecycle -------------------------------------------------------------------------

    def _start_timer(self, seconds: float) -> None:
        # The pending timeout must not keep an abandoned context alive until it fires.
        ref = weakref.ref(self)

        def fire() -> None:
            ctx = ref()
            if ctx is not None:
                ctx._on_timeout()

        self._timer = timeouts.schedule(seconds, fire)

    def __enter__(self) -> ExecutionContext:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    async def __aenter__(self) -> ExecutionContext:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Ends the chain: later wraps are refused as aborted ("context_closed"). Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._core.abort("context_closed")
        self._token.cancel()
        self._cancel_tasks()
        if self._timer is not None:
            timeouts.cancel(self._timer)
        close = getattr(self._breaker, "close", None)
        if callable(close):
            close()

    def abort(self, reason: str) -> None:
        """Stops the chain from any thread: in-flight async calls are cancelled, sync callables see
        ``cancellation_token``, every later wrap returns HALT. Idempotent; never raises on reuse."""
        if not isinstance(reason, str):
            raise TypeError(f"reason must be a str, got {type(reason).__name__}")
        if self._stop_snapshot is None:
            self._stop_snapshot = self.get_snapshot()
        if self._core.abort(reason):
            self._emit("aborted", reason)
            self._token.cancel()
            self._cancel_tasks()

    def _on_timeout(self) -> None:
        # The core may have noticed the deadline first (and set the cause); report it either way,
        # but not when an abort already stopped the chain.
        self._core.cancel(CAUSE_TIMEOUT)
        if self._core.cancel_cause == CAUSE_TIMEOUT:
            self._forced_stop("timeout", f"timeout_ms={self._config.timeout_ms} elapsed")
        self._token.cancel()
        self._cancel_tasks()

    def _cancel_tasks(self) -> None:
        with self._lock:
            tasks = list(self._tasks.items())
        for task, loop in tasks:
            if not loop.is_closed():
                loop.call_soon_threadsafe(task.cancel)

    # -- introspection ---------------------------------------------------------------------

    @property
    def config(self) -> ExecutionConfig:
        return self._config

    @property
    def metadata(self) -> ChainMetadata:
        return self._metadata

    @property
    def parent(self) -> ExecutionContext | None:
        return self._parent

    @property
    def cancellation_token(self) -> CancellationToken:
        """Signalled on abort, timeout, close or a child pushing the chain over its ceiling."""
        return self._token

    @property
    def stop_snapshot(self) -> ContextSnapshot | None:
        """The snapshot taken just before the first forced stop (partial-result preservation)."""
        return self._stop_snapshot

    def __repr__(self) -> str:
        steps, cost, retries, aborted = self._core.counters()[:4]
        return (
            f"<ExecutionContext chain_id={self._metadata.chain_id!r} steps={steps} "
            f"cost_usd={cost:.4f} retries={retries} aborted={aborted}>"
        )

    def get_snapshot(self) -> ContextSnapshot:
        core = self._core
        steps, cost, retries, aborted, abort_reason, elapsed_ms, records = core.counters()
        nodes = NodeRecordView(core, records)
        self._drain_graph_events()
        return ContextSnapshot(
            chain_id=self._metadata.chain_id,
            request_id=self._metadata.request_id,
            step_count=steps,
            cost_usd_accumulated=cost,
            retries_used=retries,
            aborted=aborted,
            abort_reason=abort_reason,
            elapsed_ms=elapsed_ms,
            nodes=nodes,
            events=self._events.snapshot(),
            graph_summary=MappingProxyType(core.aggregates()),
            parent_chain_id=self._parent._metadata.chain_id if self._parent is not None else None,
        )

    def get_graph_snapshot(self) -> dict[str, Any]:
        """The chain's ExecutionGraph (root ``chain_root``, one node per wrapped call) as a dict,
        in the format of ``ExecutionGraph.snapshot()``."""
        snapshot: dict[str, Any] = json.loads(self._core.graph_snapshot_json())
        return snapshot

    def get_graph_snapshot_json(self) -> bytes:
        """``get_graph_snapshot()`` as JSON bytes, encoded natively (the cheap way to export it)."""
        return self._core.graph_snapshot_json()

    def record_event(self, event: SafetyEvent) -> None:
        """Adds an application-emitted event to the chain log (deduplicated by content)."""
        for name in ("event_type", "decision", "reason", "hook", "request_id"):
            if not hasattr(event, name):
                raise TypeError(f"event must be a SafetyEvent, got {type(event).__name__}")
        self._events.append(event)

    # -- events ----------------------------------------------------------------------------

    def _emit(self, stop_reason: str, detail: str, **metadata: Any) -> None:
        self._events.append(stop_event(stop_reason, detail, self._metadata.request_id, **metadata))

    def _mirror_pipeline(self) -> list[Any]:
        events: list[Any] = list(self._pipeline.get_events()) if self._pipeline is not None else []
        self._events.extend(events)
        return events

    def _drain_graph_events(self) -> None:
        self._mirror_pipeline()
        for div in self._core.drain_divergence():
            event_type = str(div.get("event_type", "divergence_suspected"))
            self._events.append(
                SafetyEvent(
                    event_type=event_type,
                    decision=Decision.ALLOW,
                    reason=event_type,
                    hook="ExecutionGraph",
                    request_id=self._metadata.request_id,
                    metadata=dict(div),
                )
            )

    def _forced_stop(self, stop_reason: str, detail: str, **metadata: Any) -> None:
        if self._stop_snapshot is None:
            self._stop_snapshot = self.get_snapshot()
        self._emit(stop_reason, detail, **metadata)

    # -- wrapping --------------------------------------------------------------------------

    if TYPE_CHECKING:  # the runtime versions are built by sync_wrap (one frame less per call)

        def wrap_llm_call(self, fn: Callable[[], Any], options: WrapOptions | None = None) -> Decision:
            """Runs ``fn`` as one LLM call of the chain; returns ALLOW, RETRY, HALT or a pipeline verdict."""
            ...

        def wrap_tool_call(self, fn: Callable[[], Any], options: WrapOptions | None = None) -> Decision:
            """As ``wrap_llm_call`` for a tool call (tool hooks, no ``before_charge``)."""
            ...

    else:
        wrap_llm_call = sync_wrap(0)
        wrap_tool_call = sync_wrap(1)

    @property
    def last_stop_reason(self) -> str | None:
        """Why the latest refused, stopped or failed call on this thread did not return ALLOW
        (a stop reason, ``pipeline_halt``, ``before_charge_halt`` or ``retry``)."""
        return self._note.reason

    # -- async -----------------------------------------------------------------------------

    async def wrap_llm_call_async(
        self, fn: Callable[[], Awaitable[Any]], options: WrapOptions | None = None
    ) -> Decision:
        """As ``wrap_llm_call`` for a coroutine function. The coroutine runs in a task that is
        cancelled on abort, on the chain timeout or on ``options.timeout_ms``."""
        return await wrap_async(self, fn, 0, options)

    async def wrap_tool_call_async(
        self, fn: Callable[[], Awaitable[Any]], options: WrapOptions | None = None
    ) -> Decision:
        return await wrap_async(self, fn, 1, options)

    def _track(self, task: asyncio.Task[Any], loop: asyncio.AbstractEventLoop) -> None:
        with self._lock:
            self._tasks[task] = loop

    def _untrack(self, task: asyncio.Task[Any]) -> None:
        with self._lock:
            self._tasks.pop(task, None)

    # -- decorators ------------------------------------------------------------------------

    def llm_call(self, name: str = "", cost: float = 0.0, *, timeout_ms: int | None = None) -> Contained:
        """Decorator: each call of the decorated (sync or async) function is one contained LLM call.
        Returns the function's result; a refused call raises ``CallRefused``; a failure re-raises.
        As ``with ctx.llm_call(...):`` it contains the block instead (one object per ``with``)."""
        return contained(self, 0, WrapOptions(name, cost, timeout_ms))

    def tool_call(self, name: str = "", cost: float = 0.0, *, timeout_ms: int | None = None) -> Contained:
        """As ``llm_call`` for tool calls."""
        return contained(self, 1, WrapOptions(name, cost, timeout_ms))

    # -- children --------------------------------------------------------------------------

    def _remaining_budget(self) -> float:
        return max(0.0, self._config.max_cost_usd - self._core.counters()[1])

    def spawn_child(
        self,
        max_cost_usd: float | None = None,
        max_steps: int | None = None,
        max_retries_total: int | None = None,
        timeout_ms: int = 0,
        pipeline: Any = None,
    ) -> ExecutionContext:
        """A child chain whose successful costs also count against this one."""
        cfg = self._config
        child = ExecutionConfig(
            max_cost_usd=self._remaining_budget() if max_cost_usd is None else max_cost_usd,
            max_steps=cfg.max_steps if max_steps is None else max_steps,
            max_retries_total=cfg.max_retries_total if max_retries_total is None else max_retries_total,
            timeout_ms=timeout_ms,
        )
        return ExecutionContext(config=child, pipeline=pipeline, parent=self)

    def create_child(  # noqa: PLR0917  (positional order of the reference API)
        self,
        agent_name: str,
        agent_names: list[str],
        allocator: Any = None,
        current_usage: dict[str, float] | None = None,
        max_steps: int | None = None,
        max_retries_total: int | None = None,
        timeout_ms: int = 0,
        pipeline: Any = None,
    ) -> ExecutionContext:
        """A child for ``agent_name`` whose ceiling is its share of the remaining budget: equal
        shares by default, or ``allocator.allocate(total_budget, agent_names, current_usage)``."""
        if agent_name not in agent_names:
            raise ValueError(f"agent_name {agent_name!r} must be one of {agent_names!r}")
        remaining = self._remaining_budget()
        if allocator is None:
            share = remaining / len(agent_names)
        else:
            result = allocator.allocate(
                total_budget=remaining, agent_names=agent_names, current_usage=current_usage or {}
            )
            share = float(result.allocations.get(agent_name, 0.0))
        return self.spawn_child(share, max_steps, max_retries_total, timeout_ms, pipeline)

    def _propagate_child_cost(self, cost_usd: float) -> None:
        total = self._core.add_cost(cost_usd)
        if total + _BUDGET_EPSILON >= self._config.max_cost_usd and self._core.cancel(CAUSE_BUDGET):
            ceiling = self._config.max_cost_usd
            detail = f"child spending pushed the chain to ${total:.4f} >= ceiling ${ceiling:.4f}"
            self._forced_stop("budget_exceeded", detail, source="child")
            self._token.cancel()
            self._cancel_tasks()
        if self._parent is not None:
            self._parent._propagate_child_cost(cost_usd)

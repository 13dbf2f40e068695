"""ExecutionContext: chain-level containment for one agent run.

See docs/containment.md and docs/design.md §4-6, §20-22, §27.

Every wrapped call is admitted by the native ``ChainCore`` (abort, cost ceiling, step limit, retry
budget, timeout, cost reservation, in that order), then by the pipeline and the circuit breaker,
and becomes a node of the chain's ExecutionGraph. Its estimate is reserved against the ceiling
until the call is settled at its actual cost (``report_cost`` / ``cost_of``, docs/design.md §20).
The fast path (no pipeline, breaker, parent, metrics or ``cost_of``) is two native calls around
the callable: ``begin`` (limits + node) and ``succeed``.
"""

from __future__ import annotations

import json
import logging
import uuid
import weakref
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar, overload

from chainwarden._core import CallForms, CallKind
from chainwarden.containment._async import wrap_async
from chainwarden.containment._current import enter, leave, register
from chainwarden.containment._decorators import Contained
from chainwarden.containment._fast import sync_wrap
from chainwarden.containment._memory_calls import MemoryKind, memory_kind, memory_wrap
from chainwarden.containment._state import ChainState
from chainwarden.containment._timeouts import timeouts
from chainwarden.containment._validate import check_collaborators, check_identity
from chainwarden.containment.budget_allocator import FairShareAllocator
from chainwarden.containment.types import (
    CancellationToken,
    ChainMetadata,
    ContextSnapshot,
    ExecutionConfig,
    WrapOptions,
)
from chainwarden.errors import InvalidArgument, InvalidArgumentType
from chainwarden.shield.event import SafetyEvent
from chainwarden.shield.types import Decision

__all__ = ["ExecutionContext"]

DEFAULT_MAX_NODES = 100_000

_log = logging.getLogger("chainwarden.containment")

P = ParamSpec("P")
R = TypeVar("R")


def _max_nodes(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgumentType(
            f"max_nodes must be an int, got {type(value).__name__}", argument="max_nodes"
        )
    if not 1 <= value <= 2**32:
        raise InvalidArgument(f"max_nodes must be between 1 and 2**32, got {value}", argument="max_nodes")
    return value


class ExecutionContext(CallForms):
    """Containment state shared by every LLM and tool call of one chain."""

    __slots__ = ("__weakref__", "_closed", "_parent", "_s", "_timer")
    _s: ChainState

    def __init__(  # noqa: PLR0917  (positional order of the reference API)
        self,
        config: ExecutionConfig,
        pipeline: Any = None,
        metadata: ChainMetadata | None = None,
        circuit_breaker: Any = None,
        parent: ExecutionContext | None = None,
        metrics: Any = None,
        agent_identity: Any = None,
        memory_governor: Any = None,
        policy_view_holder: Any = None,
        *,
        cost_of: Callable[[Any], Any] | None = None,
        max_nodes: int = DEFAULT_MAX_NODES,
    ) -> None:
        if not isinstance(config, ExecutionConfig):
            raise InvalidArgumentType(
                f"config must be an ExecutionConfig, got {type(config).__name__}", argument="config"
            )
        if metadata is not None and not isinstance(metadata, ChainMetadata):
            raise InvalidArgumentType(
                f"metadata must be a ChainMetadata, got {type(metadata).__name__}", argument="metadata"
            )
        if parent is not None and not isinstance(parent, ExecutionContext):
            raise InvalidArgumentType(
                f"parent must be an ExecutionContext, got {type(parent).__name__}", argument="parent"
            )
        metrics = check_collaborators(pipeline, circuit_breaker, metrics)
        check_identity(agent_identity, memory_governor, policy_view_holder)
        if cost_of is not None and not callable(cost_of):
            raise InvalidArgumentType(
                f"cost_of must be callable or None, got {type(cost_of).__name__}", argument="cost_of"
            )
        cap = _max_nodes(max_nodes)
        metadata = metadata or ChainMetadata(request_id=str(uuid.uuid4()), chain_id=str(uuid.uuid4()))
        if circuit_breaker is not None and hasattr(circuit_breaker, "bind_to_context"):
            circuit_breaker.bind_to_context(metadata.chain_id)
        parent_state = parent._s if parent is not None else None
        self._s = ChainState(
            config,
            metadata,
            pipeline,
            circuit_breaker,
            metrics,
            parent_state,
            cost_of,
            cap,
            governor=memory_governor,
            policy_views=policy_view_holder,
            agent_identity=agent_identity,
        )
        register(self, self._s.core)  # current_context() inside its wrapped calls
        self._closed = False
        self._parent = parent
        self._timer: int | None = None
        if config.timeout_ms > 0:
            self._start_timer(config.timeout_ms / 1000.0)

    # -- lifecycle -------------------------------------------------------------------------

    def _start_timer(self, seconds: float) -> None:
        # The pending timeout must not keep an abandoned context alive until it fires.
        ref = weakref.ref(self._s)

        def fire() -> None:
            state = ref()
            if state is not None:
                state.on_timer()

        self._timer = timeouts.schedule(seconds, fire)

    def __enter__(self) -> ExecutionContext:
        enter(self)  # current_context() inside the block
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        leave(self)
        self._end(exc)

    async def __aenter__(self) -> ExecutionContext:
        enter(self)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        leave(self)
        self._end(exc)

    def close(self) -> None:
        """Ends the chain: later wraps are refused as aborted ("context_closed"), and the chain's root
        node ends (halted with the first stop reason if the chain was stopped, else success).
        Idempotent."""
        self._end(None)

    def _end(self, exc: BaseException | None) -> None:
        s = self._s
        with s.lock:
            if self._closed:
                return
            self._closed = True
        running = s.core.in_flight
        if running:
            # Their results will still be accounted for; later calls are refused.
            _log.warning(
                "ExecutionContext.close(): %d call(s) of chain %s still running (non-terminal)",
                running,
                s.metadata.chain_id,
            )
        cause = s.core.cancel_cause
        stop = s.first_stop or (cause.reason if cause is not None else None)
        s.core.close_root(stop, None if exc is None else type(exc).__name__)
        s.core.abort("context_closed")
        s.cancel_all()
        if self._timer is not None:
            timeouts.cancel(self._timer)
        s.partials.clear()
        if s.owns_budget and s.budget is not None:
            try:
                s.budget.backend.close()  # the backend built from ExecutionConfig.redis_url
            except Exception:
                _log.warning("budget_backend.close() raised; the context is closed", exc_info=True)
        close = getattr(s.breaker, "close", None)
        if callable(close):
            try:
                close()
            except Exception:  # docs/design.md §22: a user callback never stops the caller
                _log.warning("circuit_breaker.close() raised; the context is closed", exc_info=True)

    def abort(self, reason: str) -> None:
        """Stops the chain from any thread: in-flight async calls are cancelled, sync callables see
        ``cancellation_token``, every later wrap returns HALT. Idempotent; never raises on reuse."""
        if not isinstance(reason, str):
            raise InvalidArgumentType(f"reason must be a str, got {type(reason).__name__}", argument="reason")
        s = self._s
        if s.stop_snapshot is None:
            s.first_stop = "aborted"
            s.stop_snapshot = s.snapshot()
        if s.core.abort(reason):
            s.emit("aborted", reason)
            s.cancel_all()

    # -- introspection ---------------------------------------------------------------------

    @property
    def config(self) -> ExecutionConfig:
        return self._s.config

    @property
    def metadata(self) -> ChainMetadata:
        return self._s.metadata

    @property
    def parent(self) -> ExecutionContext | None:
        return self._parent

    @property
    def agent_identity(self) -> Any:
        """The identity of the agent running this chain (in snapshots and on its OpenTelemetry root span)."""
        return self._s.agent_identity

    @property
    def cost_of(self) -> Callable[[Any], Any] | None:
        """The callable that prices a call's result when the call reported no cost (docs/design.md §20)."""
        return self._s.cost_of

    @property
    def cancellation_token(self) -> CancellationToken:
        """Signalled on abort, timeout, close or a child pushing the chain over its ceiling."""
        return self._s.token

    @property
    def stop_snapshot(self) -> ContextSnapshot | None:
        """The snapshot taken just before the first forced stop (partial-result preservation)."""
        return self._s.stop_snapshot

    @property
    def _aborted(self) -> bool:
        """Read-only: whether the chain is stopped (veronica-core's private flag, read by code written
        against it; docs/containment.md)."""
        return self._s.core.aborted

    @property
    def _retries_used(self) -> int:
        """Read-only: the retries the chain consumed (veronica-core's private counter)."""
        return self._s.core.counters().retries_used

    @property
    def _step_count(self) -> int:
        """Read-only: the chain's successful calls (veronica-core's private counter)."""
        return self._s.core.counters().step_count

    @property
    def _config(self) -> ExecutionConfig:
        """Read-only: ``config`` (veronica-core's private attribute)."""
        return self._s.config

    @property
    def _partial_buffers(self) -> dict[str, Any]:
        """A copy of the partial buffers kept, by node id (veronica-core's private dict)."""
        return self._s.partials.by_node_id()

    @property
    def reserved_usd(self) -> float:
        """Cost estimates reserved by the calls in flight (docs/design.md §20)."""
        return self._s.core.reserved_usd

    def __repr__(self) -> str:
        c = self._s.core.counters()
        return (
            f"<ExecutionContext chain_id={self._s.metadata.chain_id!r} steps={c.step_count} "
            f"cost_usd={c.cost_usd:.4f} retries={c.retries_used} aborted={c.aborted}>"
        )

    def get_snapshot(self) -> ContextSnapshot:
        return self._s.snapshot()

    def get_graph_snapshot(self) -> dict[str, Any]:
        """The chain's ExecutionGraph (root ``chain_root``, one node per wrapped call) as a dict,
        in the format of ``ExecutionGraph.snapshot()``."""
        snapshot: dict[str, Any] = json.loads(self._s.core.graph_snapshot_json())
        return snapshot

    def get_graph_snapshot_json(self) -> bytes:
        """``get_graph_snapshot()`` as JSON bytes, encoded natively (the cheap way to export it)."""
        return self._s.core.graph_snapshot_json()

    def get_partial_result(self, node_id: str) -> Any:
        """The partial-result buffer of the call ``node_id`` (``NodeRecord.node_id``), or None when it
        had none or the context no longer keeps it (docs/containment.md "Streamed calls, response usage
        and reconciliation")."""
        if not isinstance(node_id, str):
            raise InvalidArgumentType(
                f"node_id must be a str, got {type(node_id).__name__}", argument="node_id"
            )
        return self._s.partials.get(node_id)

    def record_event(self, event: SafetyEvent) -> None:
        """Adds an application-emitted event to the chain log (deduplicated by content)."""
        for name in ("event_type", "decision", "reason", "hook", "request_id"):
            if not hasattr(event, name):
                raise InvalidArgumentType(
                    f"event must be a SafetyEvent, got {type(event).__name__}", argument="event"
                )
        self._s.events.append(event)

    # -- wrapping --------------------------------------------------------------------------

    if TYPE_CHECKING:  # the runtime versions are built by sync_wrap (one frame less per call)

        def wrap_llm_call(self, fn: Callable[[], Any], options: WrapOptions | None = None) -> Decision:
            """Runs ``fn`` as one LLM call of the chain; returns ALLOW, RETRY, HALT or a pipeline verdict."""
            ...

        def wrap_tool_call(self, fn: Callable[[], Any], options: WrapOptions | None = None) -> Decision:
            """As ``wrap_llm_call`` for a tool call (tool hooks, no ``before_charge``)."""
            ...

    else:
        wrap_llm_call = sync_wrap(CallKind.LLM)
        wrap_tool_call = sync_wrap(CallKind.TOOL)

    def wrap_memory_call(
        self, fn: Callable[[], Any], kind: MemoryKind, options: WrapOptions | None = None
    ) -> Decision:
        """Runs ``fn`` as one memory read or write of the chain (``kind``: ``"memory_read"`` /
        ``"memory_write"``): a step under every chain limit, the circuit breaker and the memory governor,
        but no pipeline ``before_*`` hook (docs/containment.md "Memory calls and memory governance")."""
        return memory_wrap(kind)(self, fn, options)

    @property
    def last_stop_reason(self) -> str | None:
        """Why the latest refused, stopped or failed call on this thread did not return ALLOW
        (a stop reason, ``pipeline_halt``, ``before_charge_halt`` or ``retry``)."""
        return self._s.note.reason

    # -- async -----------------------------------------------------------------------------

    async def wrap_llm_call_async(
        self, fn: Callable[[], Awaitable[Any]] | Callable[[], Any], options: WrapOptions | None = None
    ) -> Decision:
        """As ``wrap_llm_call`` for a coroutine function. The coroutine is awaited in the caller's
        task and cancelled on abort, on the chain timeout or on ``options.timeout_ms`` (the caller
        then gets HALT, not CancelledError); a plain callable runs in a worker thread
        (``asyncio.to_thread``). Must be awaited inside an asyncio task."""
        return await wrap_async(self._s, fn, CallKind.LLM, options)

    async def wrap_tool_call_async(
        self, fn: Callable[[], Awaitable[Any]] | Callable[[], Any], options: WrapOptions | None = None
    ) -> Decision:
        return await wrap_async(self._s, fn, CallKind.TOOL, options)

    async def wrap_memory_call_async(
        self,
        fn: Callable[[], Awaitable[Any]] | Callable[[], Any],
        kind: MemoryKind,
        options: WrapOptions | None = None,
    ) -> Decision:
        """As ``wrap_memory_call`` for a coroutine function (cancelled like ``wrap_llm_call_async``)."""
        return await wrap_async(self._s, fn, memory_kind(kind), options)

    # -- decorators ------------------------------------------------------------------------

    # ``llm_call`` / ``tool_call`` are the native base's (``CallForms``): the common form runs no Python
    # frame; every other form runs ``_decorators.llm_call`` / ``tool_call``.
    if TYPE_CHECKING:

        @overload
        def llm_call(self, name: Callable[P, R], /) -> Callable[P, R]: ...
        @overload
        def llm_call(
            self, name: str = "", cost: float = 0.0, *, timeout_ms: int | None = None
        ) -> Contained: ...
        def llm_call(
            self, name: str | Callable[P, R] = "", cost: float = 0.0, *, timeout_ms: int | None = None
        ) -> Contained | Callable[P, R]:
            """Decorator: each call of the decorated (sync or async) function is one contained LLM call.
            Returns the function's result; a refused call raises ``CallRefused``; a failure re-raises.
            Bare (``@ctx.llm_call``) or with arguments; the name defaults to the function's
            ``__qualname__``, and type checkers keep its signature. As ``with ctx.llm_call(...):`` it
            contains the block instead (one object per ``with``)."""
            ...

        @overload
        def tool_call(self, name: Callable[P, R], /) -> Callable[P, R]: ...
        @overload
        def tool_call(
            self, name: str = "", cost: float = 0.0, *, timeout_ms: int | None = None
        ) -> Contained: ...
        def tool_call(
            self, name: str | Callable[P, R] = "", cost: float = 0.0, *, timeout_ms: int | None = None
        ) -> Contained | Callable[P, R]:
            """As ``llm_call`` for tool calls."""
            ...

    # -- children --------------------------------------------------------------------------

    def spawn_child(
        self,
        max_cost_usd: float | None = None,
        max_steps: int | None = None,
        max_retries_total: int | None = None,
        timeout_ms: int = 0,
        pipeline: Any = None,
    ) -> ExecutionContext:
        """A child chain whose successful costs also count against this one."""
        cfg = self._s.config
        child = ExecutionConfig(
            max_cost_usd=self._s.remaining_budget() if max_cost_usd is None else max_cost_usd,
            max_steps=cfg.max_steps if max_steps is None else max_steps,
            max_retries_total=cfg.max_retries_total if max_retries_total is None else max_retries_total,
            timeout_ms=timeout_ms,
        )
        s = self._s
        return ExecutionContext(
            config=child,
            pipeline=pipeline,
            parent=self,
            memory_governor=s.governor,
            policy_view_holder=s.policy_views,
        )

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
        """A child for ``agent_name`` whose ceiling is its share of the remaining budget:
        ``allocator.allocate(total_budget, agent_names, current_usage)``, by default a
        ``FairShareAllocator`` (equal shares)."""
        if agent_name not in agent_names:
            raise InvalidArgument(
                f"agent_name {agent_name!r} must be present in agent_names {agent_names!r}",
                argument="agent_name",
            )
        remaining = self._s.remaining_budget()
        chosen = FairShareAllocator() if allocator is None else allocator
        result = chosen.allocate(
            total_budget=remaining, agent_names=agent_names, current_usage=current_usage or {}
        )
        share = float(result.allocations.get(agent_name, 0.0))
        return self.spawn_child(share, max_steps, max_retries_total, timeout_ms, pipeline)

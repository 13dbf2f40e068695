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
from chainwarden.containment._decorators import contained
from chainwarden.containment._events import EventLog, stop_event
from chainwarden.containment._records import NodeRecordView
from chainwarden.containment.types import (
    CancellationToken,
    ChainMetadata,
    ContextSnapshot,
    ExecutionConfig,
    WrapOptions,
)
from chainwarden.shield.event import SafetyEvent
from chainwarden.shield.policy import PolicyContext
from chainwarden.shield.types import Decision, ToolCallContext

__all__ = ["ExecutionContext"]

_DEFAULT_OPTIONS: Final = WrapOptions()
_ALLOW: Final = Decision.ALLOW  # a module global is a cheaper load than an enum attribute
# ChainCore outcome codes (see rust/py/src/containment.rs).
_OK, _RETRY, _HALTED, _ABORTED, _TIMEOUT, _ERROR = range(6)
# ChainCore stop codes -> seed 003 §6 stop reason (index = code).
_STOPS: Final = (
    "",
    "aborted",
    "budget_exceeded",
    "step_limit_exceeded",
    "retry_budget_exceeded",
    "timeout",
    "budget_exceeded",
)
_CAUSE_ABORTED, _CAUSE_BUDGET, _CAUSE_TIMEOUT = 1, 2, 5
_BUDGET_EPSILON: Final = 1e-9
# Cancellation cause -> (stop reason, node status) of a call that was running when it happened.
_CANCELLED: Final[dict[int, tuple[str, int]]] = {
    _CAUSE_ABORTED: ("aborted", _ABORTED),
    _CAUSE_BUDGET: ("budget_exceeded", _HALTED),
    _CAUSE_TIMEOUT: ("timeout", _TIMEOUT),
}


class _StopNote(threading.local):
    """Why the latest non-ALLOW call on this thread ended as it did; written only off the fast path."""

    reason: str | None = None


def _sync_wrap(kind: int) -> Callable[[ExecutionContext, Callable[[], Any], WrapOptions | None], Decision]:
    """Builds ``wrap_llm_call`` (kind 0) / ``wrap_tool_call`` (kind 1): the fast path of every
    wrapped call, two native calls around ``fn`` when no pipeline, breaker, parent or metrics
    need consulting."""

    def wrap(self: ExecutionContext, fn: Callable[[], Any], options: WrapOptions | None = None) -> Decision:
        if not callable(fn):
            raise TypeError(f"fn must be callable, got {type(fn).__name__}")
        opts = _DEFAULT_OPTIONS if options is None else options
        try:
            name = opts.operation_name
            node = self._core.begin(
                self._current.get() if self._async_used else None,
                kind,
                name,
                (opts.model or self._llm_model) if kind == 0 else None,
                opts.cost_estimate_hint,
                self._dispatch,
                True,
            )
        except AttributeError:
            raise _bad_options(options) from None
        if node < 0:
            return self._refuse(-node, opts)
        if self._gated:
            verdict = self._gate(node, kind, opts)
            if verdict is not None:
                return verdict
        try:
            fn()
        except BaseException as exc:
            return self._failed(exc, node, opts)
        if self._plain:
            self._core.succeed(node, name != "", opts.cost_estimate_hint)
            return _ALLOW
        return self._succeeded(node, kind, opts)

    wrap.__name__ = wrap.__qualname__ = ("wrap_llm_call", "wrap_tool_call")[kind]
    return wrap


def _bad_options(options: object) -> TypeError:
    return TypeError(f"options must be a WrapOptions or None, got {type(options).__name__}")


def _window_halt(events: list[Any]) -> bool:
    return any(e.hook == "BudgetWindowHook" and e.decision == Decision.HALT for e in events)


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
        # Nothing to consult or notify besides the core and the graph: _wrap may finish inline.
        self._gated = pipeline is not None or circuit_breaker is not None
        self._dispatch = not self._gated
        self._plain = not self._gated and parent is None and metrics is None
        # Until an async wrap runs, no task can carry a parent node: skip the ContextVar read.
        self._async_used = False
        self._note = _StopNote()
        self._lock = threading.Lock()
        self._tasks: dict[asyncio.Task[Any], asyncio.AbstractEventLoop] = {}
        self._closed = False
        self._stop_snapshot: ContextSnapshot | None = None
        self._timer: threading.Timer | None = None
        if config.timeout_ms > 0:
            self._start_timer(config.timeout_ms / 1000.0)

    # -- lifecycle -------------------------------------------------------------------------

    def _start_timer(self, seconds: float) -> None:
        # The timer must not keep an abandoned context alive until it fires.
        ref = weakref.ref(self)

        def fire() -> None:
            ctx = ref()
            if ctx is not None:
                ctx._on_timeout()

        timer = threading.Timer(seconds, fire)
        timer.daemon = True
        timer.start()
        self._timer = timer

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
            self._timer.cancel()
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
        self._core.cancel(_CAUSE_TIMEOUT)
        if self._core.cancel_cause == _CAUSE_TIMEOUT:
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

    if TYPE_CHECKING:  # the runtime versions are built by _sync_wrap (one frame less per call)

        def wrap_llm_call(self, fn: Callable[[], Any], options: WrapOptions | None = None) -> Decision:
            """Runs ``fn`` as one LLM call of the chain; returns ALLOW, RETRY, HALT or a pipeline verdict."""
            ...

        def wrap_tool_call(self, fn: Callable[[], Any], options: WrapOptions | None = None) -> Decision:
            """As ``wrap_llm_call`` for a tool call (tool hooks, no ``before_charge``)."""
            ...

    else:
        wrap_llm_call = _sync_wrap(0)
        wrap_tool_call = _sync_wrap(1)

    @property
    def last_stop_reason(self) -> str | None:
        """Why the latest refused, stopped or failed call on this thread did not return ALLOW
        (a stop reason, ``pipeline_halt``, ``before_charge_halt`` or ``retry``)."""
        return self._note.reason

    def _refuse(self, code: int, opts: WrapOptions) -> Decision:
        stop_reason = _STOPS[code]
        if code == _CAUSE_TIMEOUT:
            self._on_timeout()
        elif code != _CAUSE_ABORTED:
            self._forced_stop(stop_reason, self._refusal_detail(code, opts))
        self._note.reason = stop_reason
        self._count_decision("HALT")
        return Decision.HALT

    def _refusal_detail(self, code: int, opts: WrapOptions) -> str:
        cfg = self._config
        if code == 2:
            cost = self._core.counters()[1]
            return f"cost ${cost:.4f} >= ceiling ${cfg.max_cost_usd:.4f}"
        if code == 3:
            return f"step limit {cfg.max_steps} reached"
        if code == 4:
            return f"retry budget {cfg.max_retries_total} exhausted"
        hint = opts.cost_estimate_hint
        return f"cost estimate ${hint:.4f} would exceed chain ceiling ${cfg.max_cost_usd:.4f}"

    def _tool_ctx(self, node_id: int, opts: WrapOptions, cost_usd: float | None = None) -> ToolCallContext:
        meta = self._metadata
        return ToolCallContext(
            request_id=meta.request_id,
            user_id=meta.user_id,
            session_id=self._core.node_name(node_id),
            tool_name=opts.operation_name or None,
            model=opts.model or meta.model,
            cost_usd=cost_usd,
            metadata={
                "chain_id": meta.chain_id,
                "org_id": meta.org_id,
                "team": meta.team,
                "service": meta.service,
                **meta.tags,
            },
        )

    def _halt_admitted(self, node_id: int, opts: WrapOptions, why: str) -> None:
        self._core.fail(node_id, opts.operation_name != "", False, _HALTED, "", why)
        self._count_decision("HALT")
        self._note.reason = why

    def _gate(self, node_id: int, kind: int, opts: WrapOptions) -> Decision | None:
        """Pipeline, then circuit breaker. Returns the refusing decision, or None to dispatch."""
        try:
            pipeline = self._pipeline
            if pipeline is not None:
                tctx = self._tool_ctx(node_id, opts)
                raw = pipeline.before_llm_call(tctx) if kind == 0 else pipeline.before_tool_call(tctx)
                if raw != Decision.ALLOW:
                    verdict = Decision(str(getattr(raw, "value", raw)))
                    why = "pipeline_halt"
                    if verdict is Decision.HALT and _window_halt(self._mirror_pipeline()):
                        why = "provider_rate_limit"
                        self._forced_stop(why, "BudgetWindowHook returned HALT")
                    else:
                        self._mirror_pipeline()
                    self._halt_admitted(node_id, opts, why)
                    return verdict
            breaker = self._breaker
            if breaker is not None:
                steps, cost = self._core.counters()[:2]
                policy_ctx = PolicyContext(
                    cost_usd=cost,
                    step_count=steps,
                    chain_id=self._metadata.chain_id,
                    entity_id=self._metadata.user_id or "",
                )
                decision = breaker.check(policy_ctx)
                if not decision.allowed:
                    self._forced_stop("circuit_open", f"circuit breaker denied: {decision.reason}")
                    self._halt_admitted(node_id, opts, "circuit_open")
                    return Decision.HALT
        except BaseException:
            # A hook that raises must not leak the step reservation or leave the node open.
            self._core.fail(node_id, opts.operation_name != "", False, _ERROR, "HookError")
            raise
        self._core.dispatch(node_id)
        return None

    def _succeeded(self, node_id: int, kind: int, opts: WrapOptions) -> Decision:
        cost = opts.cost_estimate_hint
        if kind == 0 and cost > 0.0 and self._pipeline is not None:
            raw = self._pipeline.before_charge(self._tool_ctx(node_id, opts, cost), cost)
            if raw != Decision.ALLOW:
                self._mirror_pipeline()
                self._halt_admitted(node_id, opts, "before_charge_halt")
                return Decision(str(getattr(raw, "value", raw)))
        self._core.succeed(node_id, opts.operation_name != "", cost)
        if self._breaker is not None:
            self._breaker.record_success()
        if cost > 0.0 and self._parent is not None:
            self._parent._propagate_child_cost(cost)
        if self._metrics is not None:
            self._metrics.record_cost(self._metadata.chain_id, cost)
            self._count_decision("ALLOW")
        return Decision.ALLOW

    def _failed(self, exc: BaseException, node_id: int, opts: WrapOptions) -> Decision:
        cause = self._core.cancel_cause
        if cause:
            # The chain was cancelled while the call ran: its failure is the cancellation's doing.
            why, status = _CANCELLED[cause]
            self._core.fail(node_id, opts.operation_name != "", False, status, "", why)
            self._note.reason = why
            self._reraise_signals(exc)
            return Decision.HALT
        pipeline = self._pipeline
        verdict = (
            Decision.RETRY if pipeline is None else pipeline.on_error(self._tool_ctx(node_id, opts), exc)
        )
        if self._breaker is not None:
            self._breaker.record_failure(error=exc)
        if verdict == Decision.HALT:
            self._mirror_pipeline()
            self._halt_admitted(node_id, opts, "pipeline_halt")
            self._reraise_signals(exc)
            return Decision.HALT
        retries = self._core.fail(node_id, opts.operation_name != "", True, _ERROR, type(exc).__name__)
        if retries >= self._config.max_retries_total:
            # seed 003 §6 provider_error: a failure that drains the retry budget stops the chain
            # now (the core has halted the node with this reason).
            detail = f"{type(exc).__name__} exhausted the retry budget of {self._config.max_retries_total}"
            self._forced_stop("provider_error", detail, error_class=type(exc).__name__)
            self._note.reason = "provider_error"
            self._reraise_signals(exc)
            return Decision.HALT
        self._reraise_signals(exc)
        self._note.reason = "retry"
        return Decision.RETRY

    @staticmethod
    def _reraise_signals(exc: BaseException) -> None:
        # Ctrl-C and interpreter exit belong to the process, not to the chain's retry logic.
        if isinstance(exc, KeyboardInterrupt | SystemExit):
            raise exc

    def _count_decision(self, decision: str) -> None:
        if self._metrics is not None:
            self._metrics.record_decision(self._metadata.chain_id, decision)

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

    def llm_call(self, name: str = "", cost: float = 0.0, *, timeout_ms: int | None = None) -> Any:
        """Decorator: each call of the decorated (sync or async) function is one contained LLM call.
        Returns the function's result; a refused call raises ``CallRefused``; a failure re-raises."""
        return contained(self, 0, WrapOptions(name, cost, timeout_ms))

    def tool_call(self, name: str = "", cost: float = 0.0, *, timeout_ms: int | None = None) -> Any:
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
        if total + _BUDGET_EPSILON >= self._config.max_cost_usd and self._core.cancel(_CAUSE_BUDGET):
            ceiling = self._config.max_cost_usd
            detail = f"child spending pushed the chain to ${total:.4f} >= ceiling ${ceiling:.4f}"
            self._forced_stop("budget_exceeded", detail, source="child")
            self._token.cancel()
            self._cancel_tasks()
        if self._parent is not None:
            self._parent._propagate_child_cost(cost_usd)

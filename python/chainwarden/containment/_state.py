"""The state one chain's helpers share: the native core plus what only Python can hold (the
pipeline, breaker and metrics objects, the event log, the cancellation token, async tasks).

``ExecutionContext`` is the public face; the wrap paths (``_fast``, ``_async``, ``_blocks``,
``_outcomes``) work on this object alone. Every containment rule (limits, the retry budget,
stop reasons, cost settlement) is decided by ``ChainCore`` (docs/design.md §20).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Protocol, cast

from chainwarden._chain_context import root_metadata
from chainwarden._core import ChainCore, StopCause
from chainwarden.containment._capture import Capture
from chainwarden.containment._events import EventLog, stop_event
from chainwarden.containment._partials import PartialBuffers
from chainwarden.containment._records import NodeRecordView
from chainwarden.containment.budget._gate import BudgetedCore, SharedBudget
from chainwarden.containment.budget._redis import RedisBudgetBackend
from chainwarden.containment.types import CancellationToken, ChainMetadata, ContextSnapshot, ExecutionConfig
from chainwarden.shield.event import SafetyEvent
from chainwarden.shield.types import Decision

__all__ = ["Cancellable", "ChainState", "StopNote"]


class Cancellable(Protocol):
    """An async call in flight (``_async._InFlight``): ``cancel`` runs on its own loop's thread."""

    def cancel(self) -> object: ...


_log = logging.getLogger("chainwarden.containment")


class StopNote(threading.local):
    """Why the latest non-ALLOW call on this thread ended as it did; written only off the fast path."""

    reason: str | None = None


class ChainState:
    """Everything a wrapped call of one chain reads or changes besides its own arguments."""

    # Slots: the fast path reads a handful of these per call, and slot reads are the cheapest.
    __slots__ = (
        "__weakref__",
        "agent_identity",
        "async_used",
        "breaker",
        "budget",
        "capture",
        "config",
        "core",
        "cost_of",
        "dispatch",
        "events",
        "first_stop",
        "gated",
        "governed",
        "governor",
        "llm_model",
        "lock",
        "metadata",
        "metrics",
        "note",
        "owns_budget",
        "parent",
        "partials",
        "pipeline",
        "plain",
        "policy_views",
        "stop_snapshot",
        "tasks",
        "timeout_reported",
        "token",
    )

    def __init__(  # noqa: PLR0917  (one field each)
        self,
        config: ExecutionConfig,
        metadata: ChainMetadata,
        pipeline: Any,
        breaker: Any,
        metrics: Any,
        parent: ChainState | None,
        cost_of: Callable[[Any], Any] | None,
        max_nodes: int,
        *,
        governor: Any = None,
        policy_views: Any = None,
        agent_identity: Any = None,
    ) -> None:
        self.config = config
        self.metadata = metadata
        self.pipeline = pipeline
        self.breaker = breaker
        self.metrics = metrics
        self.parent = parent
        self.cost_of = cost_of
        # Nothing to consult or notify besides the core: the fast path may finish the call inline.
        self.gated = pipeline is not None or breaker is not None or governor is not None
        self.dispatch = not self.gated
        self.core = ChainCore(
            config.max_cost_usd,
            config.max_steps,
            config.max_retries_total,
            config.timeout_ms,
            metadata.chain_id,
            max_nodes,
            {**root_metadata(metadata), **(identity_metadata(agent_identity) or {})},
            dispatch=self.dispatch,  # a gated call runs once its gates allow it
        )
        self.governor = governor
        # node -> (operation, decision) of admitted calls the memory governor hears of when they succeed.
        self.governed: dict[int, tuple[Any, Any]] = {}
        self.policy_views = policy_views
        self.agent_identity = agent_identity
        self.partials = PartialBuffers(self.core)
        self.budget, self.owns_budget = _shared_budget(config, metadata, parent)
        if self.budget is not None:
            # The shared budget gates every call besides the core's own limits (docs/design.md §20).
            self.core = cast(ChainCore, BudgetedCore(self.core, self.budget, self._let_through))
        self.token = CancellationToken()
        self.events = EventLog()
        self.llm_model = metadata.model
        # Content capture (docs/containment.md, "Content capture"): None when off, so a wrap tests one slot.
        self.capture = Capture(config.max_content_chars, config.mask) if config.capture_content else None
        self.plain = (
            not self.gated and parent is None and metrics is None and cost_of is None and self.capture is None
        )
        # Until an async wrap runs, no task can carry a parent node: skip the walk of open calls.
        self.async_used = False
        self.note = StopNote()
        self.lock = threading.Lock()
        self.tasks: dict[Cancellable, asyncio.AbstractEventLoop] = {}
        self.stop_snapshot: ContextSnapshot | None = None
        self.timeout_reported = False
        # The reason of the chain's first forced stop (the root node ends with it).
        self.first_stop: str | None = None

    def _let_through(self, detail: str) -> None:
        self.events.append(
            SafetyEvent(
                event_type="budget_backend_unavailable",
                decision=Decision.ALLOW,
                reason=detail,
                hook="ExecutionContext",
                request_id=self.metadata.request_id,
                metadata={"fail_open": True},
            )
        )

    # -- snapshots -------------------------------------------------------------------------

    def snapshot(self) -> ContextSnapshot:
        core = self.core
        if not self.timeout_reported and core.cancel_cause == StopCause.TIMEOUT:
            # The timer only marked the chain (docs/design.md §32): its stop is reported here, on
            # the reader's thread, if no call of the chain reported it yet.
            self.report_timeout()
        c = core.counters()
        nodes = NodeRecordView(core, c.record_count, self.partials)
        self.drain_graph_events()
        return ContextSnapshot(
            chain_id=self.metadata.chain_id,
            request_id=self.metadata.request_id,
            step_count=c.step_count,
            cost_usd_accumulated=c.cost_usd,
            retries_used=c.retries_used,
            aborted=c.aborted,
            abort_reason=c.abort_reason,
            elapsed_ms=c.elapsed_ms,
            nodes=nodes,
            events=self.events.snapshot(),
            graph_summary=MappingProxyType(core.aggregates()),
            parent_chain_id=self.parent.metadata.chain_id if self.parent is not None else None,
            agent_identity=self.agent_identity,
            policy_metadata=self.policy_metadata(),
            metadata=self.metadata,
        )

    # -- events ----------------------------------------------------------------------------

    def emit(self, stop_reason: str, detail: str, **metadata: Any) -> None:
        if self.policy_views is not None:
            policy = self.policy_metadata()
            if policy is not None:
                metadata["policy"] = policy  # which policy was in force when the chain stopped
        self.events.append(stop_event(stop_reason, detail, self.metadata.request_id, **metadata))

    def policy_metadata(self) -> MappingProxyType[str, Any] | None:
        """The active policy view's audit dict, read-only; None without a holder or a view. A holder
        or view that raises is logged, never raised (docs/design.md §22)."""
        holder = self.policy_views
        if holder is None:
            return None
        try:
            view = holder.current
            audit = None if view is None else view.to_audit_dict()
        except Exception:
            _log.warning(
                "policy_view_holder.current.to_audit_dict() raised; no policy metadata", exc_info=True
            )
            return None
        if audit is None:
            return None
        if not isinstance(audit, Mapping):
            _log.warning("policy view's to_audit_dict() returned %s, not a mapping", type(audit).__name__)
            return None
        return MappingProxyType(dict(audit))

    def forced_stop(self, stop_reason: str, detail: str, **metadata: Any) -> None:
        """Keeps the partial-result snapshot of the first forced stop, then logs the stop."""
        if self.stop_snapshot is None:
            self.first_stop = stop_reason
            self.stop_snapshot = self.snapshot()
            # Once per chain: later refusals repeat the same reason (they are in the event log).
            _log.info("chain %s stopped: %s (%s)", self.metadata.chain_id, stop_reason, detail)
        self.emit(stop_reason, detail, **metadata)

    def mirror_pipeline(self) -> list[Any]:
        """Copies the pipeline's new events into the chain's log. A pipeline whose ``get_events``
        raises is logged and skipped (docs/design.md §22): the caller's snapshot or stop goes on."""
        pipeline = self.pipeline
        if pipeline is None:
            return []
        try:
            events: list[Any] = list(pipeline.get_events())
        except Exception:
            _log.warning(
                "pipeline get_events() raised; its events are missing from the chain log", exc_info=True
            )
            return []
        self.events.extend(events)
        return events

    def drain_graph_events(self) -> None:
        self.mirror_pipeline()
        for div in self.core.drain_divergence():
            event_type = str(div.get("event_type", "divergence_suspected"))
            self.events.append(
                SafetyEvent(
                    event_type=event_type,
                    decision=Decision.ALLOW,
                    reason=event_type,
                    hook="ExecutionGraph",
                    request_id=self.metadata.request_id,
                    metadata=dict(div),
                )
            )

    def describe_stop(self, reason: str | None) -> str:
        """The chain's figures for the limit behind ``reason``, as a refusal states them (the core's)."""
        return self.core.describe_stop(reason or "")

    def count_decision(self, decision: str) -> None:
        if self.metrics is not None:
            self.metrics.record_decision(self.metadata.chain_id, decision)

    # -- cancellation ----------------------------------------------------------------------

    def on_timer(self) -> None:
        """The chain's deadline passed, seen by the shared timer thread: marks the chain and cancels
        its work, nothing more (docs/design.md §32). Reporting the stop reads the pipeline's events
        and writes logs, which is user code: the chain's own threads do it (``on_timeout``, or the
        next snapshot), so one chain's slow hook never delays another chain's timeout."""
        self.core.cancel(StopCause.TIMEOUT)
        self.cancel_all()

    def on_timeout(self) -> None:
        """A call of this chain, on the chain's own thread or loop, met the chain's timeout."""
        # The core may have noticed the deadline first (and set the cause); report it either way,
        # but not when an abort already stopped the chain.
        self.core.cancel(StopCause.TIMEOUT)
        try:
            self.report_timeout()
        finally:
            # A duck-typed pipeline whose get_events raises must not keep waiting calls waiting.
            self.cancel_all()

    def report_timeout(self) -> None:
        if self.core.cancel_cause == StopCause.TIMEOUT:
            self.timeout_reported = True  # first: forced_stop takes a snapshot, which looks here
            self.forced_stop("timeout", self.describe_stop("timeout"))

    def cancel_all(self) -> None:
        """Signals the token and cancels the async calls in flight."""
        self.token.cancel()
        with self.lock:
            tasks = list(self.tasks.copy().items())  # copy(): one atomic read of the dict
        for task, loop in tasks:
            if not loop.is_closed():
                loop.call_soon_threadsafe(task.cancel)

    # One dict operation each, atomic on its own (the dict locks itself on free-threaded builds):
    # no lock, they run twice per async call. cancel_all copies the items under the lock.
    def track(self, task: Cancellable, loop: asyncio.AbstractEventLoop) -> None:
        self.tasks[task] = loop

    def untrack(self, task: Cancellable) -> None:
        self.tasks.pop(task, None)

    # -- nesting ---------------------------------------------------------------------------

    def propagate_child_cost(self, cost_usd: float) -> None:
        """A child chain spent ``cost_usd``: it counts here and up the ancestry; the core says
        whether it pushed this chain to its ceiling."""
        added = self.core.add_cost(cost_usd)
        if added.crossed_ceiling:
            ceiling = self.config.max_cost_usd
            detail = f"child spending pushed the chain to ${added.total_usd:.4f} >= ceiling ${ceiling:.4f}"
            self.forced_stop("budget_exceeded", detail, source="child")
            self.cancel_all()
        if self.parent is not None:
            self.parent.propagate_child_cost(cost_usd)

    def remaining_budget(self) -> float:
        return max(0.0, self.config.max_cost_usd - self.core.counters().cost_usd)


def _shared_budget(
    config: ExecutionConfig, metadata: ChainMetadata, parent: ChainState | None
) -> tuple[SharedBudget | None, bool]:
    """The config's backend against its own ceiling (one this context builds from ``redis_url`` and so
    owns); else the parent's, so a child spends from it too. Returns (budget, owned)."""
    backend = config.budget_backend
    owned = False
    if backend is None and config.redis_url is not None:
        # The reference's convenience: one Redis counter per chain id.
        backend, owned = RedisBudgetBackend(config.redis_url, key=metadata.chain_id), True
    if backend is not None:
        return SharedBudget(backend, config.max_cost_usd, config.budget_backend_fail_open), owned
    return (parent.budget if parent is not None else None), False


def identity_metadata(identity: Any) -> dict[str, Any] | None:
    """The root node's metadata for an agent identity: its id, origin and trust level as text (the
    graph snapshot and OpenTelemetry export read them there)."""
    if identity is None:
        return None
    fields: dict[str, Any] = {"agent_id": identity.agent_id}
    for name in ("origin", "trust_level"):
        value = getattr(identity, name, None)
        if value is not None:
            fields[name] = str(getattr(value, "value", value))
    return {"agent_identity": fields}

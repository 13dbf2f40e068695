"""Configuration, per-call options and snapshot types of ExecutionContext."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from chainwarden._args import finite_non_negative, strict_int
from chainwarden._chain_context import Tags, checked_attributes, checked_tags
from chainwarden.containment._validate import MAX_COUNT, MAX_TIMEOUT_MS
from chainwarden.containment.budget._protocol import check_backend
from chainwarden.errors import InvalidArgument, InvalidArgumentType
from chainwarden.shield.event import SafetyEvent

__all__ = [
    "CancellationToken",
    "ChainMetadata",
    "ContextSnapshot",
    "ExecutionConfig",
    "NodeKind",
    "NodeRecord",
    "NodeStatus",
    "WrapOptions",
]

NodeKind = Literal["llm", "tool", "memory_read", "memory_write"]

#: The largest ``max_content_chars``: 16 Mi characters per captured text.
MAX_CONTENT_CHARS = 1 << 24
NodeStatus = Literal["ok", "halted", "aborted", "timeout", "error"]


class CancellationToken:
    """Cooperative cancellation flag a sync callable can poll or wait on."""

    __slots__ = ("_event",)

    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        self._event.set()

    @property
    def is_cancelled(self) -> bool:
        return self._event.is_set()

    def wait(self, timeout_s: float | None = None) -> bool:
        """Blocks until cancelled (True) or until ``timeout_s`` elapses (False)."""
        return self._event.wait(timeout_s)


def _optional_str(value: object, name: str) -> None:
    if value is not None and not isinstance(value, str):
        raise InvalidArgumentType(f"{name} must be a str or None, got {type(value).__name__}", argument=name)


def _required_str(value: object, name: str) -> None:
    if not isinstance(value, str):
        raise InvalidArgumentType(f"{name} must be a str, got {type(value).__name__}", argument=name)


@dataclass(frozen=True)
class ChainMetadata:
    """Who and what a chain belongs to. ``tags`` (a list or tuple of str, or a dict of str to str) and
    ``attributes`` (a dict of JSON values) are copied and frozen on construction. ``user_id``,
    ``session_id``, ``tags`` and ``attributes`` travel with the run: the chain's root node, both snapshot
    formats, ``chainwarden inspect``, the reports and OpenTelemetry spans (docs/containment.md,
    "Context that travels")."""

    request_id: str
    chain_id: str
    org_id: str = ""
    team: str = ""
    service: str = ""
    user_id: str | None = None
    model: str | None = None
    tags: Tags = ()
    session_id: str | None = field(default=None, kw_only=True)
    attributes: Mapping[str, Any] | None = field(default=None, kw_only=True)
    # Who originated the chain's actions (veronica-core's ``AuthorityClaim`` or any object): carried,
    # never interpreted here (docs/containment.md "Agent identity and policy views").
    authority: Any = None

    def __post_init__(self) -> None:
        for name in ("request_id", "chain_id", "org_id", "team", "service"):
            _required_str(getattr(self, name), name)
        _optional_str(self.user_id, "user_id")
        _optional_str(self.session_id, "session_id")
        _optional_str(self.model, "model")
        object.__setattr__(self, "tags", checked_tags(self.tags))
        if self.attributes is not None:
            object.__setattr__(self, "attributes", checked_attributes(self.attributes))


@dataclass(frozen=True)
class ExecutionConfig:
    """Hard limits of one chain. Zero is a valid limit (it refuses every call); ``timeout_ms=0``
    disables the timeout. Bounds, checked here (docs/containment.md, "Limits and validation"):
    ``max_cost_usd`` finite and >= 0; ``max_steps`` and ``max_retries_total`` ints in [0, 2**63 - 1];
    ``timeout_ms`` an int in [0, MAX_TIMEOUT_MS] (one year).

    ``budget_backend`` shares the ceiling with every chain using the same backend (docs/containment.md,
    "Shared budgets"); when it is unreachable calls are refused (``budget_backend_unavailable``) unless
    ``budget_backend_fail_open`` lets them run on the local limits alone. ``redis_url`` instead makes
    each context build its own ``RedisBudgetBackend(redis_url, key=<its chain_id>)`` (and close it);
    it is not shown in the repr (it may hold a password).

    ``capture_content`` keeps each call's input and output on its node, passed through ``mask`` (a
    ``str -> str`` callable) and cut to ``max_content_chars`` (an int in [0, 2**24]); keyword-only."""

    max_cost_usd: float
    max_steps: int
    max_retries_total: int
    timeout_ms: int = 0
    budget_backend: Any = None
    redis_url: str | None = field(default=None, repr=False)
    budget_backend_fail_open: bool = False
    # Content capture (docs/containment.md, "Content capture"): off by default.
    capture_content: bool = field(default=False, kw_only=True)
    max_content_chars: int = field(default=4096, kw_only=True)
    mask: Callable[[str], str] | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        object.__setattr__(self, "max_cost_usd", finite_non_negative(self.max_cost_usd, "max_cost_usd"))
        strict_int(self.max_steps, "max_steps", maximum=MAX_COUNT)
        strict_int(self.max_retries_total, "max_retries_total", maximum=MAX_COUNT)
        strict_int(self.timeout_ms, "timeout_ms", maximum=MAX_TIMEOUT_MS)
        if self.budget_backend is not None:
            check_backend(self.budget_backend)
        if self.redis_url is not None:
            if not isinstance(self.redis_url, str):
                raise InvalidArgumentType(
                    f"redis_url must be a str or None, got {type(self.redis_url).__name__}",
                    argument="redis_url",
                )
            if not self.redis_url:
                raise InvalidArgument("redis_url must not be empty", argument="redis_url")
            if self.budget_backend is not None:
                raise InvalidArgument("give budget_backend or redis_url, not both", argument="give")
        if not isinstance(self.budget_backend_fail_open, bool):
            name = type(self.budget_backend_fail_open).__name__
            raise InvalidArgumentType(
                f"budget_backend_fail_open must be a bool, got {name}", argument="budget_backend_fail_open"
            )
        if not isinstance(self.capture_content, bool):
            raise InvalidArgumentType(
                f"capture_content must be a bool, got {type(self.capture_content).__name__}",
                argument="capture_content",
            )
        strict_int(self.max_content_chars, "max_content_chars", maximum=MAX_CONTENT_CHARS)
        if self.mask is not None and not callable(self.mask):
            raise InvalidArgumentType(
                f"mask must be callable or None, got {type(self.mask).__name__}", argument="mask"
            )


@dataclass(frozen=True, slots=True)
class WrapOptions:
    """Per-call options. ``cost_estimate_hint`` is the pre-flight estimate, and the cost charged on
    success when no actual cost is known (docs/design.md §20); ``timeout_ms`` bounds one async call
    (sync callables are cooperative). Bounds as in ``ExecutionConfig``: ``cost_estimate_hint`` finite
    and >= 0, ``timeout_ms`` in [0, MAX_TIMEOUT_MS], ``retry_policy_override`` in [0, 2**63 - 1].

    ``response_hint``: the provider's response (or a dict with its ``usage``), priced by its token
    usage when the call reported no cost; ``partial_buffer``: a ``PartialResultBuffer`` kept for the
    call (``get_partial_result``, ``NodeRecord.partial_buffer``) and marked complete when it succeeds;
    ``reconciliation_callback``: an object whose ``on_reconcile(estimated_usd, actual_usd)`` hears what
    a successful call was charged against its estimate (docs/containment.md "Streamed calls, response
    usage and reconciliation")."""

    operation_name: str = ""
    cost_estimate_hint: float = 0.0
    timeout_ms: int | None = None
    retry_policy_override: int | None = None
    model: str | None = None
    response_hint: Any = None
    partial_buffer: Any = None
    reconciliation_callback: Any = None
    # Whether any of the three above is set: the wrap's fast path reads this one flag.
    _rich: bool = field(default=False, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        _required_str(self.operation_name, "operation_name")
        hint = finite_non_negative(self.cost_estimate_hint, "cost_estimate_hint")
        object.__setattr__(self, "cost_estimate_hint", hint)
        if self.timeout_ms is not None:
            strict_int(self.timeout_ms, "timeout_ms", maximum=MAX_TIMEOUT_MS)
        if self.retry_policy_override is not None:
            strict_int(self.retry_policy_override, "retry_policy_override", maximum=MAX_COUNT)
        _optional_str(self.model, "model")
        if self.partial_buffer is not None:
            for method in ("append", "mark_complete", "get_partial"):
                if not callable(getattr(self.partial_buffer, method, None)):
                    name = type(self.partial_buffer).__name__
                    raise InvalidArgumentType(
                        f"partial_buffer must provide a callable {method}(), got {name}",
                        argument="partial_buffer",
                    )
        callback = self.reconciliation_callback
        if callback is not None and not callable(getattr(callback, "on_reconcile", None)):
            name = type(callback).__name__
            raise InvalidArgumentType(
                f"reconciliation_callback must provide a callable on_reconcile(), got {name}",
                argument="reconciliation_callback",
            )
        rich = not (self.response_hint is None and self.partial_buffer is None and callback is None)
        object.__setattr__(self, "_rich", rich)


@dataclass(slots=True)
class NodeRecord:
    """One finished wrap call. ``node_id`` is the node's id in the ExecutionGraph; ``parent_id`` is
    the enclosing wrap call's node, None at the top level. A copy: changing it changes nothing in
    the context (not frozen, so that building thousands of them stays cheap)."""

    node_id: str
    parent_id: str | None
    kind: NodeKind
    operation_name: str
    start_ts: datetime
    end_ts: datetime | None
    status: NodeStatus
    cost_usd: float
    retries_used: int
    partial_buffer: Any = None  # the call's PartialResultBuffer, while the context keeps it
    error_message: str | None = None  # docs/design.md §22: str(exception), at most 1,000 code points
    # What the call's graph node says besides (a saved chain loses nothing its graph knew).
    tokens_in: int | None = None
    tokens_out: int | None = None
    model: str | None = None
    error_class: str | None = None
    stop_reason: str | None = None


@dataclass(frozen=True)
class ContextSnapshot:
    """Chain state at one instant. ``nodes`` is an immutable view in completion order."""

    chain_id: str
    request_id: str
    step_count: int
    cost_usd_accumulated: float
    retries_used: int
    aborted: bool
    abort_reason: str | None
    elapsed_ms: float
    nodes: Sequence[NodeRecord]
    events: tuple[SafetyEvent, ...]
    graph_summary: Mapping[str, Any] | None = None
    parent_chain_id: str | None = None
    agent_identity: Any = None
    # The active policy view's audit dict (``policy_view_holder.current.to_audit_dict()``), read-only.
    policy_metadata: Mapping[str, Any] | None = None
    # The chain's ChainMetadata (its context: user, session, tags, attributes), so a saved snapshot
    # keeps it (docs/containment.md, "Context that travels").
    metadata: ChainMetadata | None = field(default=None, kw_only=True)

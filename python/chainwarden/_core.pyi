"""Typed stub of the native module (checked against the binary by mypy.stubtest)."""

from collections.abc import Callable, Iterable, Mapping
from contextvars import ContextVar, Token
from types import TracebackType
from typing import Any, ClassVar, Final, Literal, ParamSpec, Self, TypeVar, final

from typing_extensions import disjoint_base

_P = ParamSpec("_P")
_R = TypeVar("_R")

__all__ = [
    "CURRENT_CALL",
    "DAG_ERROR_CODES",
    "ERROR_CODES",
    "MAX_RECORDS",
    "VOCABULARIES",
    "Block",
    "CallBinding",
    "CallForms",
    "CallKind",
    "CallNotAdmitted",
    "CallPlan",
    "CallRecord",
    "CallReport",
    "ChainCore",
    "ChainwardenError",
    "ClosedCall",
    "CostAdded",
    "Counters",
    "DagCommit",
    "DagDelta",
    "DagEdgeError",
    "DagEngine",
    "DagError",
    "DagInvalidArgumentError",
    "DagMark",
    "DagNotFoundError",
    "DagPreconditionError",
    "DagWork",
    "EnteredContext",
    "ExecutionGraph",
    "InvalidArgument",
    "InvalidArgumentType",
    "InvalidState",
    "Mutation",
    "NodeEvent",
    "NotFound",
    "OpenCall",
    "StopCause",
    "__version__",
    "bind_call",
    "current_call",
    "current_context",
    "dag_apply_records",
    "dag_change_mark",
    "dag_check_lease",
    "dag_claim_leased",
    "dag_delta",
    "dag_from_records",
    "dag_heartbeat",
    "dag_reclaim_expired",
    "dag_release",
    "dag_work",
    "enclosing_call",
    "enter_context",
    "leave_context",
    "mermaid_label",
]

__version__: str

# --- errors ---
# The package's one exception root and its generic families (chainwarden.errors documents them all).

class ChainwardenError(Exception): ...

class InvalidArgument(ChainwardenError, ValueError):
    argument: str | None
    def __init__(self, message: str = "", *, argument: str | None = None) -> None: ...

class InvalidArgumentType(ChainwardenError, TypeError):
    argument: str | None
    def __init__(self, message: str = "", *, argument: str | None = None) -> None: ...

class NotFound(ChainwardenError, KeyError): ...
class InvalidState(ChainwardenError, RuntimeError): ...

_NodeKind = Literal["llm", "tool", "system", "memory_read", "memory_write"]
_NodeStatus = Literal["created", "running", "success", "fail", "halt"]
_FinishedStatus = Literal["success", "fail", "halt"]

@final
class NodeEvent:
    """Immutable copy of a node at a terminal transition, passed to subscribers."""

    __match_args__: Final = (
        "node_id",
        "status",
        "kind",
        "name",
        "cost_usd",
        "tokens_in",
        "tokens_out",
        "depth",
        "elapsed_ms",
        "chain_id",
        "model",
        "error_class",
        "stop_reason",
    )
    @property
    def node_id(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def cost_usd(self) -> float: ...
    @property
    def tokens_in(self) -> int | None: ...
    @property
    def tokens_out(self) -> int | None: ...
    @property
    def depth(self) -> int: ...
    @property
    def elapsed_ms(self) -> float | None: ...
    @property
    def chain_id(self) -> str: ...
    @property
    def model(self) -> str | None: ...
    @property
    def error_class(self) -> str | None: ...
    @property
    def stop_reason(self) -> str | None: ...
    def __new__(
        cls,
        node_id: str,
        status: str,
        kind: str,
        name: str,
        cost_usd: float,
        tokens_in: int | None,
        tokens_out: int | None,
        depth: int,
        elapsed_ms: float | None,
        chain_id: str,
        model: str | None,
        error_class: str | None,
        stop_reason: str | None,
    ) -> NodeEvent: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __ne__(self, other: object, /) -> bool: ...

@disjoint_base
class ExecutionGraph:
    """The call graph of one agent chain (drop-in for veronica-core's ExecutionGraph)."""

    def __new__(
        cls,
        chain_id: str | None = None,
        cost_rate_threshold_usd_per_sec: float = 0.1,
        token_velocity_threshold: float = 500.0,
        observers: Iterable[Any] | None = None,
        max_nodes: int = 0,
    ) -> ExecutionGraph: ...
    @property
    def chain_id(self) -> str: ...
    @property
    def root_id(self) -> str | None: ...
    @property
    def _root_id(self) -> str | None: ...
    @property
    def _observers(self) -> list[Any]: ...
    @property
    def _subscribers(self) -> list[Callable[[NodeEvent], object]]: ...
    @classmethod
    def from_snapshot(
        cls,
        snapshot: dict[str, Any] | bytes | str,
        *,
        cost_rate_threshold_usd_per_sec: float = 0.1,
        token_velocity_threshold: float = 500.0,
        max_nodes: int = 0,
    ) -> ExecutionGraph: ...
    @property
    def max_nodes(self) -> int: ...
    @property
    def pruned_count(self) -> int: ...
    def __len__(self) -> int: ...
    def __contains__(self, node_id: object, /) -> bool: ...
    def add_observer(self, observer: Any) -> None: ...
    def remove_observer(self, observer: Any) -> None: ...
    def add_subscriber(self, callback: Callable[[NodeEvent], object]) -> None: ...
    def remove_subscriber(self, callback: Callable[[NodeEvent], object]) -> None: ...
    def create_root(self, name: str, metadata: dict[str, Any] | None = None) -> str: ...
    def begin_node(
        self,
        parent_id: str,
        kind: _NodeKind,
        name: str,
        model: str | None = None,
        metadata: dict[str, Any] | None = None,
        *,
        running: bool = False,
    ) -> str: ...
    def record_call(
        self,
        parent: str,
        kind: _NodeKind,
        name: str,
        *,
        cost_usd: float,
        tokens_in: int | None = None,
        tokens_out: int | None = None,
        model: str | None = None,
        status: _FinishedStatus = "success",
        started_at: int | None = None,
        ended_at: int | None = None,
        metadata: dict[str, Any] | None = None,
        error_class: str | None = None,
        stop_reason: str | None = None,
    ) -> str: ...
    def record_calls(self, rows: Iterable[Mapping[str, Any]]) -> list[str]: ...
    def mark_running(self, node_id: str) -> None: ...
    def mark_success(
        self,
        node_id: str,
        cost_usd: float,
        tokens_in: int | None = None,
        tokens_out: int | None = None,
    ) -> None: ...
    def mark_failure(self, node_id: str, error_class: str, stop_reason: str | None = None) -> None: ...
    def mark_halt(self, node_id: str, stop_reason: str | None = None) -> None: ...
    def annotate(self, node_id: str, metadata: dict[str, Any]) -> None: ...
    def increment_retries(self, node_id: str) -> None: ...
    def drain_divergence_events(self) -> list[dict[str, Any]]: ...
    def snapshot(self) -> dict[str, Any]: ...
    def snapshot_json(self) -> bytes: ...
    def aggregates(self) -> dict[str, Any]: ...
    def node(self, node_id: str) -> dict[str, Any]: ...

# --- dag ---
# The DAG engine (chainwarden.dag wraps it). Appended section: keep other sections above/below intact.

class DagError(ChainwardenError):
    code: str

class DagNotFoundError(DagError, LookupError): ...

class DagInvalidArgumentError(DagError, InvalidArgument):
    code: str

class DagEdgeError(DagError): ...
class DagPreconditionError(DagError): ...

DAG_ERROR_CODES: Final[Mapping[str, type[DagError]]]
ERROR_CODES: Final[Mapping[str, str]]
"""The core's one error registry: every code -> the name of its class in `chainwarden.errors`."""
VOCABULARIES: Final[Mapping[str, tuple[str, ...]]]
"""The core's vocabularies: name -> words (`chainwarden.vocab` builds its enums from them)."""

@final
class Mutation:
    """The handle a `Graph.mutate()` block receives; usable only inside that block."""

    def __new__(cls, engine: DagEngine) -> Mutation: ...
    def _end(self) -> None: ...
    def create_node(
        self,
        node_type: str,
        state: str | None = "pending",
        *,
        content: Any = None,
        input: dict[str, Any] | None = None,
        output: dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,
        node_id: str | None = None,
    ) -> str: ...
    def create_edge(
        self,
        from_id: str,
        to_id: str,
        edge_type: str,
        *,
        metadata: dict[str, Any] | None = None,
        edge_id: str | None = None,
    ) -> str: ...
    def fork(
        self,
        from_id: str,
        node_type: str,
        *,
        state: str | None = "pending",
        content: Any = None,
        input: dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,
        node_id: str | None = None,
    ) -> str: ...
    def retry(self, node_id: str, *, new_node_id: str | None = None) -> str: ...
    def regenerate(self, node_id: str, *, new_node_id: str | None = None) -> str: ...
    def edit(self, node_id: str, new_input: dict[str, Any], *, new_node_id: str | None = None) -> str: ...

@final
class DagMark:
    """Where a change starts: the lengths of the event log, the node arena and the edge arena."""

    @property
    def events(self) -> int: ...
    @property
    def nodes(self) -> int: ...
    @property
    def edges(self) -> int: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __ne__(self, other: object, /) -> bool: ...
    __hash__: ClassVar[None]  # type: ignore[assignment]

@final
class DagCommit:
    """What a committed block did: where it started and the agent messages its leaf repair added."""

    @property
    def start(self) -> DagMark: ...
    @property
    def repaired(self) -> list[str]: ...

@final
class DagDelta:
    """The rows a change wrote, in arena order; false when it wrote none."""

    @property
    def nodes(self) -> list[tuple[int, str, str]]: ...
    @property
    def edges(self) -> list[tuple[int, str, str]]: ...
    @property
    def events(self) -> list[tuple[int, str]]: ...
    def __bool__(self) -> bool: ...

@final
class DagEngine:
    def __new__(cls, graph_id: str | None = None, *, leaf_repair: bool | None = None) -> DagEngine: ...
    @property
    def leaf_repair(self) -> bool: ...
    @property
    def graph_id(self) -> str: ...
    @property
    def txn_depth(self) -> int: ...
    def __len__(self) -> int: ...
    def create_node(
        self,
        node_type: str,
        state: str | None = "pending",
        *,
        content: Any = None,
        input: dict[str, Any] | None = None,
        output: dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,
        node_id: str | None = None,
    ) -> str: ...
    def create_edge(
        self,
        from_id: str,
        to_id: str,
        edge_type: str,
        *,
        metadata: dict[str, Any] | None = None,
        edge_id: str | None = None,
    ) -> str: ...
    def fork(
        self,
        from_id: str,
        node_type: str,
        *,
        state: str | None = "pending",
        content: Any = None,
        input: dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,
        node_id: str | None = None,
    ) -> str: ...
    def retry(self, node_id: str, *, new_node_id: str | None = None) -> str: ...
    def regenerate(self, node_id: str, *, new_node_id: str | None = None) -> str: ...
    def edit(self, node_id: str, new_input: dict[str, Any], *, new_node_id: str | None = None) -> str: ...
    def compress(
        self,
        node_ids: Iterable[str],
        summary_content: str,
        *,
        metadata: dict[str, Any] | None = None,
        node_id: str | None = None,
    ) -> str: ...
    def mark_running(self, node_id: str) -> bool: ...
    def mark_finished(
        self,
        node_id: str,
        *,
        content: Any = None,
        output: dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> bool: ...
    def mark_errored(self, node_id: str, error: object) -> bool: ...
    def mark_rejected(self, node_id: str, reason: object) -> bool: ...
    def mark_cancelled(self, node_id: str, reason: object) -> bool: ...
    def mark_skipped(self, node_id: str, reason: object) -> bool: ...
    def apply_result(
        self,
        node_id: str,
        outcome: str,
        *,
        message: object = None,
        content: Any = None,
        output: dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> tuple[bool, list[str], list[str]]: ...
    def claim(self, limit: int) -> list[str]: ...
    def propagate_failures(self) -> list[str]: ...
    def repair_leaves(self) -> list[str]: ...
    def leaves(self, *, include_compressed: bool | None = None) -> list[str]: ...
    def node(self, node_id: str) -> dict[str, Any]: ...
    def edge(self, edge_id: str) -> dict[str, Any]: ...
    def nodes(self, *, include_compressed: bool | None = None) -> list[dict[str, Any]]: ...
    def edges(self, *, include_compressed: bool | None = None) -> list[dict[str, Any]]: ...
    def context_for(self, node_id: str, *, mode: str | None = None) -> list[dict[str, Any]]: ...
    def context_ids_for(self, node_id: str) -> list[str]: ...
    def events(self) -> list[dict[str, Any]]: ...
    def to_mermaid(self, *, include_compressed: bool, max_label_chars: int) -> str: ...
    def to_json(self) -> bytes: ...
    @staticmethod
    def from_json(data: bytes | str) -> DagEngine: ...
    def begin(self) -> None: ...
    def commit(self) -> DagCommit: ...
    def rollback(self) -> None: ...
    def check_invariants(self) -> str | None: ...

# --- end dag ---

# --- containment ---

MAX_RECORDS: int

@final
class EnteredContext:
    """A context entered with ``with ctx:`` / ``async with ctx:``, over the one entered before it."""

    @property
    def ctx(self) -> Any: ...
    @property
    def previous(self) -> EnteredContext | None: ...
    @property
    def thread(self) -> int: ...
    @property
    def sync_depth(self) -> int: ...
    @property
    def call(self) -> CallBinding | Block | None: ...

def enter_context(ctx: Any) -> None:
    """Makes ``ctx`` the context entered innermost (``ExecutionContext.__enter__``)."""

def leave_context(ctx: Any) -> None:
    """Leaves ``ctx`` when it is the context entered innermost."""

def current_context() -> Any:
    """The innermost context entered with ``with`` / ``async with`` or wrapping the running call, or None."""

@final
class OpenCall:
    """The wrapped call the running code is inside: its chain core (or the shared-budget gate around it)
    and its node."""

    @property
    def core(self) -> Any: ...
    @property
    def node(self) -> int: ...

def current_call() -> OpenCall | None:
    """The innermost wrapped call the running code is inside, of any chain (what ``report_cost``
    charges): an async call or block of ``CURRENT_CALL``, or a sync call of this thread's stack."""

@final
class CallBinding:
    """An async call or ``with`` block, as seen from the code it runs (``CURRENT_CALL``)."""

    def __new__(
        cls, core: Any, node: int, thread: int, sync_depth: int, outer: CallBinding | Block | None
    ) -> CallBinding: ...
    @property
    def core(self) -> Any: ...
    @property
    def node(self) -> int: ...
    @property
    def thread(self) -> int: ...
    @property
    def sync_depth(self) -> int: ...
    @property
    def outer(self) -> CallBinding | Block | None: ...

# A ``with`` block is bound as itself (no ``CallBinding`` allocated for it).
CURRENT_CALL: ContextVar[CallBinding | Block | None]

def bind_call(core: Any, node: int) -> Token[CallBinding | Block | None]:
    """Binds call ``node`` of ``core`` in ``CURRENT_CALL``; reset with ``CURRENT_CALL.reset(token)``."""

def enclosing_call(core: Any) -> int | None:
    """The node of ``core``'s innermost open async call or block in this context, if any."""

@final
class CallPlan:
    """One form of contained call of a chain, as every ``with`` block of that form admits it."""

    def __new__(
        cls,
        state: Any,
        kind: CallKind,
        options: Any,
        name: str,
        model: str | None,
        cost_estimate: float,
        fast: ChainCore | None,
    ) -> CallPlan: ...
    @property
    def state(self) -> Any: ...
    @property
    def kind(self) -> CallKind: ...
    @property
    def options(self) -> Any: ...
    @property
    def native(self) -> bool: ...

@final
class Block:
    """What ``ctx.llm_call(...)`` returns: a decorator, and a context manager for one block."""

    def __new__(cls, ctx: Any, plan: CallPlan) -> Block: ...
    def __call__(self, fn: Callable[_P, _R]) -> Callable[_P, _R]: ...
    @property
    def _ctx(self) -> Any: ...
    @property
    def _plan(self) -> CallPlan: ...
    def __enter__(self) -> None: ...
    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool: ...

@disjoint_base
class CallForms:
    """The native base of ``ExecutionContext``: ``llm_call`` / ``tool_call`` (typed there) and their plans."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Self: ...
    @property
    def _llm_plans(self) -> dict[str | tuple[str, float], CallPlan]: ...
    @property
    def _tool_plans(self) -> dict[str | tuple[str, float], CallPlan]: ...
    def llm_call(self, *args: Any, **kwargs: Any) -> Any: ...
    def tool_call(self, *args: Any, **kwargs: Any) -> Any: ...

@final
class Counters:
    """A chain's counters at one instant (``ChainCore.counters()``)."""

    @property
    def step_count(self) -> int: ...
    @property
    def cost_usd(self) -> float: ...
    @property
    def retries_used(self) -> int: ...
    @property
    def aborted(self) -> bool: ...
    @property
    def abort_reason(self) -> str | None: ...
    @property
    def elapsed_ms(self) -> float: ...
    @property
    def record_count(self) -> int: ...

@final
class CallKind:
    """The kind of a contained call."""

    LLM: ClassVar[CallKind]
    TOOL: ClassVar[CallKind]
    MEMORY_READ: ClassVar[CallKind]
    MEMORY_WRITE: ClassVar[CallKind]
    @property
    def value(self) -> str: ...
    @property
    def consults_pipeline(self) -> bool: ...
    @property
    def is_llm(self) -> bool: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __ne__(self, value: object, /) -> bool: ...
    def __int__(self) -> int: ...
    __hash__: ClassVar[None]  # type: ignore[assignment]

@final
class StopCause:
    """Why the core refused a call or cancelled the chain."""

    ABORTED: ClassVar[StopCause]
    BUDGET: ClassVar[StopCause]
    STEPS: ClassVar[StopCause]
    RETRIES: ClassVar[StopCause]
    TIMEOUT: ClassVar[StopCause]
    ESTIMATE: ClassVar[StopCause]
    @property
    def reason(self) -> str: ...
    @property
    def status(self) -> str: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __ne__(self, value: object, /) -> bool: ...
    def __int__(self) -> int: ...
    __hash__: ClassVar[None]  # type: ignore[assignment]

@final
class CallRecord:
    """One finished contained call (``NodeRecord`` is built from it)."""

    @property
    def node_id(self) -> str: ...
    @property
    def parent_id(self) -> str | None: ...
    @property
    def kind(self) -> str: ...
    @property
    def operation_name(self) -> str: ...
    @property
    def start_s(self) -> float: ...
    @property
    def end_s(self) -> float | None: ...
    @property
    def status(self) -> str: ...
    @property
    def cost_usd(self) -> float: ...
    @property
    def retries_used(self) -> int: ...
    @property
    def error_message(self) -> str | None: ...
    @property
    def tokens_in(self) -> int | None: ...
    @property
    def tokens_out(self) -> int | None: ...
    @property
    def model(self) -> str | None: ...
    @property
    def error_class(self) -> str | None: ...
    @property
    def stop_reason(self) -> str | None: ...

class CallNotAdmitted(ChainwardenError):
    """``ChainCore.begin`` refused a call: ``cause`` says why, ``node`` is its node (recorded halted).
    Internal to the containment layer, which turns it into a decision or a ``CallRefused``."""

    cause: StopCause
    node: int
    def __init__(self, cause: StopCause, node: int) -> None: ...

@final
class CallReport:
    """What an open call reported so far (``ChainCore.take_report``)."""

    @property
    def cost_usd(self) -> float: ...
    @property
    def tokens_in(self) -> int | None: ...
    @property
    def tokens_out(self) -> int | None: ...

@final
class CostAdded:
    """What ``ChainCore.add_cost`` did: the chain's new total, and whether this pushed it to its ceiling."""

    @property
    def total_usd(self) -> float: ...
    @property
    def crossed_ceiling(self) -> bool: ...

@final
class ClosedCall:
    """How ``ChainCore.fail`` closed a call: the retry budget's stop reason and the cost charged."""

    @property
    def stop(self) -> str | None: ...
    @property
    def charged_usd(self) -> float: ...

@final
class ChainCore:
    """Limits, counters, node records and call graph of one ExecutionContext chain."""

    def __new__(
        cls,
        max_cost_usd: float,
        max_steps: int,
        max_retries_total: int,
        timeout_ms: int,
        chain_id: str,
        max_nodes: int = 0,
        root_metadata: dict[str, Any] | None = None,
        *,
        dispatch: bool = True,
    ) -> ChainCore: ...
    @property
    def root_id(self) -> str: ...
    def node_name(self, node: int) -> str: ...
    def begin_sync(
        self,
        fn: object,
        parent_hint: int | None,
        kind: CallKind,
        name: str,
        model: str | None,
        cost_estimate: float,
    ) -> int:
        """Admits a sync call (open on this thread's stack until closed); a refusal raises
        ``CallNotAdmitted``, a callable that cannot run synchronously ``TypeError``."""
    def begin(
        self, parent_hint: int | None, kind: CallKind, name: str, model: str | None, cost_estimate: float
    ) -> int:
        """Admits a call not nested on this thread's stack (async, block, held); a refusal raises
        ``CallNotAdmitted``."""
    def is_open(self, node: int) -> bool: ...
    def dispatch(self, node: int) -> None: ...
    def flag(self, node: int, key: str) -> None: ...
    def report(
        self, node: int, cost_usd: float, tokens_in: int | None = None, tokens_out: int | None = None
    ) -> None: ...
    def take_report(self, node: int) -> CallReport | None: ...
    def settle(self, node: int, named: bool, cost_estimate: float) -> None: ...
    def succeed(
        self,
        node: int,
        named: bool,
        cost_estimate: float,
        actual_cost: float | None = None,
        tokens_in: int | None = None,
        tokens_out: int | None = None,
    ) -> float: ...
    def fail(
        self,
        node: int,
        named: bool,
        cost_estimate: float,
        retry: bool,
        status: str,
        error_class: str,
        halt_reason: str | None = None,
        error_message: str | None = None,
    ) -> ClosedCall: ...
    def close_root(self, stop_reason: str | None = None, error_class: str | None = None) -> None: ...
    def annotate(self, node: int, metadata: dict[str, Any]) -> None: ...
    def describe_stop(self, reason: str, estimate: float | None = None) -> str: ...
    def abort(self, reason: str) -> bool: ...
    def cancel(self, cause: StopCause) -> bool: ...
    @property
    def cancel_cause(self) -> StopCause | None: ...
    @property
    def aborted(self) -> bool: ...
    @property
    def in_flight(self) -> int: ...
    @property
    def reserved_usd(self) -> float: ...
    def add_cost(self, cost_usd: float) -> CostAdded: ...
    def counters(self) -> Counters: ...
    def records(self, start: int, stop: int) -> list[CallRecord]: ...
    def aggregates(self) -> dict[str, Any]: ...
    def graph_snapshot_json(self) -> bytes: ...
    def drain_divergence(self) -> list[dict[str, Any]]: ...
    def __len__(self) -> int: ...

def dag_change_mark(engine: DagEngine) -> DagMark: ...
def mermaid_label(text: str, *, max_label_chars: int) -> str: ...
def dag_delta(engine: DagEngine, mark: DagMark, extra_node_ids: list[str] = ...) -> DagDelta: ...
def dag_from_records(
    graph_id: str,
    nodes: list[tuple[int, str]],
    edges: list[tuple[int, str]],
    events: list[tuple[int, str]],
    *,
    leaf_repair: bool = True,
) -> DagEngine: ...
def dag_claim_leased(
    engine: DagEngine, limit: int, worker_id: str | None = None, lease_until: float | None = None
) -> list[str]: ...
def dag_heartbeat(
    engine: DagEngine, node_ids: list[str], worker_id: str, lease_until: float
) -> list[str]: ...
def dag_reclaim_expired(engine: DagEngine, now: float | None, max_attempts: int) -> list[str]: ...
def dag_check_lease(engine: DagEngine, node_id: str, worker_id: str) -> None: ...
def dag_release(engine: DagEngine, node_ids: list[str], worker_id: str) -> list[str]: ...

@final
class DagWork:
    """A graph's work at a glance, kept on its row by a store: claimable nodes, running nodes, the earliest
    lease end among the running ones (None without leases)."""

    def __new__(cls, claimable: int = 0, running: int = 0, lease_due: float | None = None) -> Self: ...
    @property
    def claimable(self) -> int: ...
    @property
    def running(self) -> int: ...
    @property
    def lease_due(self) -> float | None: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __ne__(self, other: object, /) -> bool: ...
    __hash__: ClassVar[None]  # type: ignore[assignment]

def dag_work(engine: DagEngine) -> DagWork: ...
def dag_apply_records(
    engine: DagEngine,
    nodes: list[tuple[int, str]],
    edges: list[tuple[int, str]],
    events: list[tuple[int, str]],
) -> None: ...

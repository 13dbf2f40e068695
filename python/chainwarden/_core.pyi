"""Typed stub of the native module (checked against the binary by mypy.stubtest)."""

from collections.abc import Callable, Iterable
from typing import Any, Final, Literal, final

from typing_extensions import disjoint_base

__all__ = ["ExecutionGraph", "NodeEvent", "_BenchFloor", "__version__"]

__version__: str

_NodeKind = Literal["llm", "tool", "system", "memory_read", "memory_write"]
_NodeStatus = Literal["created", "running", "success", "fail", "halt"]

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
    def increment_retries(self, node_id: str) -> None: ...
    def drain_divergence_events(self) -> list[dict[str, Any]]: ...
    def snapshot(self) -> dict[str, Any]: ...
    def snapshot_json(self) -> bytes: ...
    def aggregates(self) -> dict[str, Any]: ...
    def node(self, node_id: str) -> dict[str, Any]: ...

@final
class _BenchFloor:
    """Three native methods that do nothing: the floor for per-call benchmarks."""

    def __new__(cls) -> _BenchFloor: ...
    def begin_node(
        self,
        parent_id: object,
        kind: object,
        name: object,
        model: object = None,
        metadata: object = None,
    ) -> str: ...
    def mark_running(self, node_id: object) -> None: ...
    def mark_success(
        self,
        node_id: object,
        cost_usd: object,
        tokens_in: object = None,
        tokens_out: object = None,
    ) -> None: ...

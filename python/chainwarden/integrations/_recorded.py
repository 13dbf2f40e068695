"""A provider or LangChain call recorded into an ``ExecutionGraph`` rather than contained by a chain.

What ``chainwarden.instrument()`` does with a call made outside any ``ExecutionContext``
(docs/integrations.md, "One line: chainwarden.instrument()"): the call becomes a node of
``chainwarden.default_recorder()``, opened when it starts and closed with its usage, price and facts when it
ends. ``GraphCall`` has the interface of a held contained call (``containment._held.HeldCall``), so the
stream proxies and the LangChain handler settle either the same way; nothing is ever refused here (there
are no limits to enforce).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from chainwarden._core import ExecutionGraph
from chainwarden._default_recorder import default_root
from chainwarden.containment.calls import Capture
from chainwarden.errors import ChainHalted
from chainwarden.integrations._calls import Dialect, requested_model, stream_watch
from chainwarden.integrations._facts import request_facts, response_facts
from chainwarden.integrations._streams import AsyncHeldStream, HeldStream, Settle, Watch
from chainwarden.integrations._usage import USAGE_MISSING, Usage, UsageError, charge, note_usage_missing
from chainwarden.shield.types import Decision

__all__ = ["Destination", "GraphCall", "Recording", "arecord", "record"]


@dataclass(frozen=True)
class Recording:
    """What ``chainwarden.instrument()`` was given: the estimate reserved by contained calls, the price
    overrides, and the content capture of calls recorded outside any context (None: off)."""

    estimate: float | None  # None: each contained call reserves its worst case (docs/integrations.md)
    overrides: dict[tuple[str, str], dict[str, Decimal]] | None  # as chainwarden.pricing checked them
    capture: Capture | None


class GraphCall:
    """One call as an open node of ``graph``, until ``succeed`` or ``fail`` (the first one wins)."""

    __slots__ = (
        "_cost",
        "_graph",
        "_lock",
        "_node",
        "_tokens_in",
        "_tokens_out",
        "capture",
        "node_id",
        "node_name",
    )

    def __init__(
        self,
        graph: ExecutionGraph,
        kind: str,
        name: str,
        model: str | None,
        *,
        capture: Capture | None,
        parent: str | None = None,
    ) -> None:
        parent_id = parent if parent is not None and parent in graph else default_root(graph)
        self._graph = graph
        self.node_id: str = graph.begin_node(parent_id, kind, name, model or None, running=True)  # type: ignore[arg-type]
        self.node_name = self.node_id
        self._node: str | None = self.node_id
        self._lock = threading.Lock()
        self._cost = 0.0
        self._tokens_in: int | None = None
        self._tokens_out: int | None = None
        self.capture = capture

    @property
    def node(self) -> str | None:
        """The node while the call is open, None once settled."""
        return self._node

    def _take(self) -> str | None:
        with self._lock:
            node, self._node = self._node, None
        return node

    def report(self, cost_usd: float, tokens_in: int | None = None, tokens_out: int | None = None) -> None:
        with self._lock:
            if self._node is None:
                return
            self._cost += cost_usd
            if tokens_in is not None:
                self._tokens_in = (self._tokens_in or 0) + tokens_in
            if tokens_out is not None:
                self._tokens_out = (self._tokens_out or 0) + tokens_out

    def annotate(self, entries: dict[str, Any]) -> None:
        node = self._node
        if node is not None and entries:
            with contextlib.suppress(KeyError, ValueError, TypeError):
                self._graph.annotate(node, entries)

    def flag(self, key: str) -> None:
        """Sets ``metadata[key] = True`` on the call's node (open or settled; ignored once pruned)."""
        with contextlib.suppress(KeyError, ValueError):
            self._graph.annotate(self.node_id, {key: True})

    def succeed(self) -> Decision:
        node = self._take()
        if node is not None:
            try:
                self._graph.mark_success(node, self._cost, self._tokens_in, self._tokens_out)
            except (KeyError, ValueError):  # pruned meanwhile, or a total the graph cannot hold
                with contextlib.suppress(KeyError):
                    self._graph.mark_failure(node, "OverflowError")
        return Decision.ALLOW

    def fail(self, exc: BaseException) -> Decision:
        """Records the failure; the caller's own error then goes on (RETRY: nothing stops here)."""
        node = self._take()
        if node is not None:
            with contextlib.suppress(KeyError):
                self._graph.mark_failure(node, type(exc).__name__)
        return Decision.RETRY

    def stop_reason(self) -> str | None:
        return None

    def halted(self, decision: Decision) -> ChainHalted:  # pragma: no cover - a graph never refuses
        return ChainHalted(decision, None)


@dataclass(frozen=True)
class Destination:
    """Where ``record`` puts a provider call: ``graph``, as ``dialect`` reads it, priced as ``provider``."""

    graph: ExecutionGraph
    dialect: Dialect
    provider: str
    settings: Recording


def _open(to: Destination, model: str, kwargs: dict[str, Any]) -> GraphCall:
    capture = to.settings.capture
    held = GraphCall(to.graph, "llm", to.dialect.operation, model or None, capture=capture)
    held.annotate(
        request_facts(capture, to.provider, model, to.dialect.input_of(kwargs) if capture else None)
    )
    return held


def _answered(held: GraphCall, to: Destination, response: Any, usage: Usage) -> None:
    try:
        to.dialect.usage_of(response, usage)
        charge(usage, 0.0, to.settings.overrides, held.report)
    except UsageError as exc:  # a count that cannot be one ends the call, as in a chain (docs/design.md §30)
        held.fail(exc)
        raise
    if not usage.seen:
        note_usage_missing(to.dialect.operation, held.node_name, lambda: held.flag(USAGE_MISSING))
    output = to.dialect.output_of(response) if held.capture else None
    held.annotate(response_facts(held.capture, usage, output))
    held.succeed()


def _settle(held: GraphCall, usage: Usage, watch: Watch, to: Destination) -> Settle:
    overrides = to.settings.overrides
    return Settle(held, usage, watch, fallback=0.0, overrides=overrides, name=to.dialect.operation)


def record(to: Destination, original: Callable[..., Any], args: Any, kwargs: dict[str, Any]) -> Any:
    """One provider request recorded as a node of ``to.graph`` (plain, or a stream settled when it ends)."""
    model = requested_model(kwargs)
    usage = Usage(to.provider, model)
    if kwargs.get("stream") is True:
        watch = stream_watch(to.dialect, kwargs)
        held = _open(to, model, kwargs)
        usage.keep_text = held.capture is not None
        try:
            inner = original(*args, **kwargs)
        except BaseException as exc:
            held.fail(exc)
            raise
        return HeldStream(inner, _settle(held, usage, watch, to))
    held = _open(to, model, kwargs)
    try:
        response = original(*args, **kwargs)
    except BaseException as exc:
        held.fail(exc)
        raise
    _answered(held, to, response, usage)
    return response


async def arecord(
    to: Destination, original: Callable[..., Awaitable[Any]], args: Any, kwargs: dict[str, Any]
) -> Any:
    """``record`` for the async clients."""
    model = requested_model(kwargs)
    usage = Usage(to.provider, model)
    if kwargs.get("stream") is True:
        watch = stream_watch(to.dialect, kwargs)
        held = _open(to, model, kwargs)
        usage.keep_text = held.capture is not None
        try:
            inner = await original(*args, **kwargs)
        except BaseException as exc:
            held.fail(exc)
            raise
        return AsyncHeldStream(inner, _settle(held, usage, watch, to))
    held = _open(to, model, kwargs)
    try:
        response = await original(*args, **kwargs)
    except BaseException as exc:
        held.fail(exc)
        raise
    _answered(held, to, response, usage)
    return response

"""Live export of a DAG ``Runner``: one span per node execution, opened when the runner hands the node to its
executor and ended with the result the runner will apply.

The exporter is one of the runner's listeners (``Runner.add_listener``, docs/dag.md "Listening to a
runner"): ``on_claim`` opens the node's span, ``on_result`` ends it, ``on_run_end`` ends the run's
``invoke_agent {graph_id}`` span, under which every node span hangs; each node span links to the spans of the
node's causal ancestors it already exported. The first span of a run is opened at ``instrument`` time, a
later run's when its first node is claimed.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any, Final, TypeVar

from opentelemetry import context as otel_context
from opentelemetry.trace import Span, SpanContext

from chainwarden._chain_context import otel_attributes, read_labels, root_metadata
from chainwarden.containment import ExecutionContext
from chainwarden.dag.result import ExecutionResult
from chainwarden.dag.runner import Runner, RunStats
from chainwarden.otel._mapping import end_attributes, shape
from chainwarden.otel._tracer import Tracer
from chainwarden.vocab import DagOutcome, NodeStatus

__all__ = ["RunnerExport"]

_log = logging.getLogger("chainwarden.otel")
_T = TypeVar("_T")
_OUTCOME_STATUS: Final[dict[str, str]] = {
    DagOutcome.FINISHED: NodeStatus.SUCCESS,
    DagOutcome.ERRORED: NodeStatus.FAIL,
    DagOutcome.REJECTED: NodeStatus.HALT,
    DagOutcome.CANCELLED: NodeStatus.HALT,
}
_HALTED: Final = "halted:"
_MAX_LINKS: Final = 16
_ENDED_KEPT: Final = 10_000

Node = dict[str, Any]
Context = list[dict[str, Any]]


class RunnerExport:
    def __init__(self, runner: Runner, tracer: Tracer, parent: otel_context.Context) -> None:
        self._runner = runner
        self._tracer = tracer
        self._parent = parent
        self._graph_id = runner.graph.graph_id
        # A contained runner's chain says who the run is for (docs/containment.md "Context that travels").
        ctx = runner.execution_context
        self._context = (
            otel_attributes(read_labels(root_metadata(ctx.metadata)))
            if isinstance(ctx, ExecutionContext)
            else {}
        )
        self._lock = threading.Lock()
        self._root: tuple[Span, int, dict[str, Any]] | None = None
        self._open: dict[str, tuple[Span, int, dict[str, Any]]] = {}
        self._ended: dict[str, SpanContext] = {}
        self._root_span()  # a tracer that cannot even start a span is refused up front
        runner.add_listener(self)

    def _root_span(self) -> tuple[Span, int, dict[str, Any]]:
        with self._lock:
            if self._root is None:
                started = shape(
                    node_id=self._graph_id,
                    kind="system",
                    name=self._graph_id,
                    model=None,
                    is_agent=True,
                    chain_id=self._graph_id,
                    metadata=None,
                    context=self._context,
                )
                start_ns = time.time_ns()
                span = self._tracer.start(started, parent=self._parent, start_ns=start_ns)
                self._root = (span, start_ns, started.attributes)
            return self._root

    # -- listener ------------------------------------------------------------------------------------------

    def on_claim(self, node: Node, context: Context) -> None:
        self._safely(self._start, node, context)

    def on_result(self, node: Node, result: ExecutionResult) -> None:
        self._safely(self._close, node, result)

    def on_run_end(self, stats: RunStats) -> None:
        self._safely(self._end_root)

    @staticmethod
    def _safely(step: Callable[..., _T], *args: Any) -> _T | None:
        """Export must never stop the run: a failing tracer or exporter is logged (docs/design.md §22)."""
        try:
            return step(*args)
        except Exception:
            _log.warning("OpenTelemetry export of a DAG node failed; the run goes on", exc_info=True)
            return None

    def _start(self, node: Node, context: Context) -> None:
        node_id = str(node.get("node_id"))
        node_type = str(node.get("node_type"))
        inputs = node.get("input") or {}
        metadata = node.get("metadata") or {}
        if node_type == "task":
            kind, name = "tool", str(inputs.get("name") or node_id)
        elif node_type == "agent_message":
            kind, name = "llm", node_id
        else:
            kind, name = "system", node_type
        model = metadata.get("model") or inputs.get("model")
        root, _, _ = self._root_span()
        with self._lock:
            links = [self._ended[a["node_id"]] for a in context if a.get("node_id") in self._ended]
        started = shape(
            node_id=node_id,
            kind=kind,
            name=name,
            model=model if isinstance(model, str) else None,
            is_agent=False,
            chain_id=self._graph_id,
            metadata=None,
            context=self._context,
        )
        started.attributes["chainwarden.dag.node_type"] = node_type
        started.attributes["chainwarden.dag.attempt"] = int(node.get("attempt") or 0)
        start_ns = time.time_ns()
        span = self._tracer.start(
            started, parent=root.get_span_context(), start_ns=start_ns, links=links[-_MAX_LINKS:]
        )
        with self._lock:
            self._open[node_id] = (span, start_ns, started.attributes)

    def _close(self, node: Node, result: ExecutionResult) -> None:
        node_id = str(node.get("node_id"))
        with self._lock:
            opened = self._open.pop(node_id, None)
        if opened is None:
            return
        span, start_ns, started = opened
        outcome = getattr(result, "outcome", "errored")
        status = _OUTCOME_STATUS.get(outcome, outcome)
        message = getattr(result, "message", None)
        if status == "fail" and isinstance(message, str) and message.startswith(_HALTED):
            # Containment refused the call (docs/dag.md: "halted:<stop reason>"): a halt, not a failure.
            status, message = "halt", message[len(_HALTED) :]
        metadata = getattr(result, "metadata", None) or {}
        usage = metadata.get("usage") or {}
        cost = metadata.get("cost_usd", 0.0)
        model = metadata.get("model")
        attrs = end_attributes(
            status=status,
            cost_usd=cost if isinstance(cost, int | float) and not isinstance(cost, bool) else 0.0,
            tokens_in=_count(usage.get("input_tokens")),
            tokens_out=_count(usage.get("output_tokens")),
            retries=0,
            stop_reason=message if status == "halt" else None,
            error_class=message if status == "fail" else None,
            kind=str(started.get("chainwarden.kind", "")),
            model=model if isinstance(model, str) else started.get("gen_ai.request.model"),
            metadata=metadata,
            capture_content=self._tracer.capture_content,
        )
        attrs["chainwarden.dag.outcome"] = str(outcome)
        self._tracer.finish(
            span,
            start=started,
            attributes=attrs,
            status=status,
            stop_reason=message if status == "halt" else None,
            error_class=_error_class(message) if status == "fail" else None,
            start_ns=start_ns,
            end_ns=time.time_ns(),
        )
        with self._lock:
            self._ended[node_id] = span.get_span_context()
            if len(self._ended) > _ENDED_KEPT:
                del self._ended[next(iter(self._ended))]

    def _end_root(self) -> None:
        """The run is over: its ``invoke_agent`` span ends now (spans of nodes still open end with it)."""
        with self._lock:
            root, self._root = self._root, None
            still_open = list(self._open.values())
            self._open.clear()
        now = time.time_ns()
        for span, start_ns, started in still_open:
            self._tracer.finish(
                span,
                start=started,
                attributes={"chainwarden.status": "running"},
                status="running",
                stop_reason=None,
                error_class=None,
                start_ns=start_ns,
                end_ns=now,
            )
        if root is not None:
            span, start_ns, started = root
            self._tracer.finish(
                span,
                start=started,
                attributes={"chainwarden.status": "success", "chainwarden.cost_usd": 0.0},
                status="success",
                stop_reason=None,
                error_class=None,
                start_ns=start_ns,
                end_ns=now,
            )

    def detach(self) -> None:
        self._runner.remove_listener(self)
        self._end_root()


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _error_class(message: str | None) -> str:
    """The runner writes failures as ``"<Class>: <message>"`` (docs/dag.md): the class is the error type."""
    if not message:
        return "errored"
    head, sep, _ = message.partition(":")
    return head if sep and head.isidentifier() else message

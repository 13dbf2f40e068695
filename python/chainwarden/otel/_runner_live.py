"""Live export of a DAG ``Runner``: one span per node execution, opened when the runner hands the node to its
executor and ended with the result the runner will apply.

The runner offers no listener hook today, so the handle wraps this runner instance's per-node execution step
(``_execute`` / ``_aexecute``, the seam every executor call, containment refusal and missing executor passes
through) and removes the wrapper on ``detach()``. Every span hangs under one ``invoke_agent {graph_id}`` span
opened at ``instrument`` time and links to the spans of the node's causal ancestors it already exported.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any, Final, TypeVar

from opentelemetry import context as otel_context
from opentelemetry.trace import Span, SpanContext

from chainwarden.dag.result import ExecutionResult
from chainwarden.dag.runner import Runner
from chainwarden.otel._mapping import end_attributes, shape
from chainwarden.otel._tracer import Tracer, finish

__all__ = ["RunnerExport"]

_log = logging.getLogger("chainwarden.otel")
_T = TypeVar("_T")
_OUTCOME_STATUS: Final = {"finished": "success", "errored": "fail", "rejected": "halt", "cancelled": "halt"}
_HALTED: Final = "halted:"
_MAX_LINKS: Final = 16
_ENDED_KEPT: Final = 10_000
# The async step runs a sync executor through the sync step: the node already has its span.
_in_node: ContextVar[str | None] = ContextVar("chainwarden_otel_dag_node", default=None)

Node = dict[str, Any]
Context = list[dict[str, Any]]


class RunnerExport:
    def __init__(self, runner: Runner, tracer: Tracer, parent: otel_context.Context) -> None:
        self._runner = runner
        self._tracer = tracer
        graph_id = runner._graph.graph_id
        self._graph_id = graph_id
        self._root = tracer.start(
            shape(
                node_id=graph_id,
                kind="system",
                name=graph_id,
                model=None,
                is_agent=True,
                chain_id=graph_id,
                metadata=None,
            ),
            parent=parent,
            start_ns=time.time_ns(),
        )
        self._ended: dict[str, SpanContext] = {}
        execute, aexecute = runner._execute, runner._aexecute

        def traced(node: Node, context: Context) -> ExecutionResult:
            if _in_node.get() == node.get("node_id"):
                return execute(node, context)
            span = self._safely(self._open, node, context)
            result = execute(node, context)
            if span is not None:
                self._safely(self._close, node, span, result)
            return result

        async def atraced(node: Node, context: Context) -> ExecutionResult:
            span = self._safely(self._open, node, context)
            token = _in_node.set(node.get("node_id"))
            try:
                result = await aexecute(node, context)
            finally:
                _in_node.reset(token)
            if span is not None:
                self._safely(self._close, node, span, result)
            return result

        # Instance attributes shadow the methods for this runner only; detach() deletes them.
        runner._execute = traced  # type: ignore[method-assign]
        runner._aexecute = atraced  # type: ignore[method-assign]

    @staticmethod
    def _safely(step: Callable[..., _T], *args: Any) -> _T | None:
        """Export must never stop the run: a failing tracer or exporter is logged (docs/design.md §22)."""
        try:
            return step(*args)
        except Exception:
            _log.warning("OpenTelemetry export of a DAG node failed; the run goes on", exc_info=True)
            return None

    def _open(self, node: Node, context: Context) -> Span:
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
        links = [self._ended[a["node_id"]] for a in context if a.get("node_id") in self._ended][-_MAX_LINKS:]
        attrs_shape = shape(
            node_id=node_id,
            kind=kind,
            name=name,
            model=model if isinstance(model, str) else None,
            is_agent=False,
            chain_id=self._graph_id,
            metadata=None,
        )
        attrs_shape.attributes["chainwarden.dag.node_type"] = node_type
        attrs_shape.attributes["chainwarden.dag.attempt"] = int(node.get("attempt") or 0)
        return self._tracer.start(
            attrs_shape, parent=self._root.get_span_context(), start_ns=time.time_ns(), links=links
        )

    def _close(self, node: Node, span: Span, result: ExecutionResult) -> None:
        outcome = getattr(result, "outcome", "errored")
        status = _OUTCOME_STATUS.get(outcome, outcome)
        message = getattr(result, "message", None)
        if status == "fail" and isinstance(message, str) and message.startswith(_HALTED):
            # Containment refused the call (docs/dag.md: "halted:<stop reason>"): a halt, not a failure.
            status, message = "halt", message[len(_HALTED) :]
        usage = (getattr(result, "metadata", None) or {}).get("usage") or {}
        metadata = getattr(result, "metadata", None) or {}
        cost = metadata.get("cost_usd", 0.0)
        attrs = end_attributes(
            status=status,
            cost_usd=cost if isinstance(cost, int | float) and not isinstance(cost, bool) else 0.0,
            tokens_in=_count(usage.get("input_tokens")),
            tokens_out=_count(usage.get("output_tokens")),
            retries=0,
            stop_reason=message if status == "halt" else None,
            error_class=message if status == "fail" else None,
        )
        attrs["chainwarden.dag.outcome"] = str(outcome)
        finish(
            span,
            attributes=attrs,
            status=status,
            stop_reason=message if status == "halt" else None,
            error_class=_error_class(message) if status == "fail" else None,
            end_ns=time.time_ns(),
        )
        self._ended[str(node.get("node_id"))] = span.get_span_context()
        if len(self._ended) > _ENDED_KEPT:
            del self._ended[next(iter(self._ended))]

    def detach(self) -> None:
        for name in ("_execute", "_aexecute"):
            self._runner.__dict__.pop(name, None)
        self._root.set_attributes({"chainwarden.status": "success", "chainwarden.cost_usd": 0.0})
        self._root.end()


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _error_class(message: str | None) -> str:
    """The runner writes failures as ``"<Class>: <message>"`` (docs/dag.md): the class is the error type."""
    if not message:
        return "errored"
    head, sep, _ = message.partition(":")
    return head if sep and head.isidentifier() else message

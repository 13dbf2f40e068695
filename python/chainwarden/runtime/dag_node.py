"""DAG nodes executed through the port (docs/runtime.md "DAG nodes through the port"): seed 004's first
invariant — no execution path bypasses the executor port — for the DAG engine.

`dag_node_executor(runtime, graph_id, ...)` is a DAG executor (for `Runner` or `WorkerPool`) whose every
execution of a node is one run of graph `graph_id` through `AiRuntime`: `run_id = "dag.<dag graph id>.<node
id>"` and `attempt` = the node's attempt (`metadata["attempt"]`, counted by the store when a dead worker's
lease ran out: docs/dag.md "Leases"), so a node run again after its worker died bills its own calls under the
next attempt and never bills the first one's again. The run's final content becomes the node's output; a run
that failed makes the node `errored` with its error code, or with the stop reason when containment refused a
call (`budget_exceeded`, `insufficient_credits`, ...).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from typing import Any

from chainwarden.billing.facts import check_text
from chainwarden.dag.result import ExecutionResult
from chainwarden.errors import InvalidArgument, InvalidArgumentType
from chainwarden.runtime.ai_runtime import AiRuntime
from chainwarden.runtime.port import GraphRunRequest

__all__ = ["DagNodeExecutor", "conversation", "dag_node_executor", "dag_run_id"]

logger = logging.getLogger("chainwarden.runtime")

Node = dict[str, Any]
Context = list[dict[str, Any]]
MessagesOf = Callable[[Node, Context], list[dict[str, Any]]]


def dag_run_id(dag_graph_id: str, node_id: str) -> str:
    """The run id of a node's executions: `dag.<dag graph id>.<node id>`."""
    return f"dag.{dag_graph_id}.{node_id}"


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def conversation(node: Node, context: Context) -> list[dict[str, Any]]:
    """The default messages of a node: its causal context (docs/dag.md "Context", full outputs) as a chat —
    each `user_message` a user turn (`input.content`), each finished `agent_message` an assistant turn
    (`output.content`), each `summary` and finished `task` a user turn saying what it holds. Nodes not
    finished (and the node itself) are left out."""
    messages: list[dict[str, Any]] = []
    for entry in context:
        if entry.get("node_id") == node.get("node_id"):
            continue
        kind, state, payload = entry.get("node_type"), entry.get("state"), entry.get("payload") or {}
        given = payload.get("input") or {}
        output = payload.get("output") or payload.get("output_preview") or {}
        if kind == "user_message":
            messages.append({"role": "user", "content": _text(given.get("content", ""))})
        elif state != "finished":
            continue
        elif kind == "agent_message":
            messages.append({"role": "assistant", "content": _text(output.get("content", ""))})
        elif kind == "summary":
            messages.append(
                {
                    "role": "user",
                    "content": "Summary of the conversation so far: " + _text(output.get("content", "")),
                }
            )
        elif kind == "task":
            name = given.get("name", "task")
            messages.append(
                {"role": "user", "content": f"Result of {_text(name)}: {_text(output.get('result'))}"}
            )
    return messages


class DagNodeExecutor:
    """An async DAG executor that runs each node as a run of `graph_id` through `runtime` (see the module)."""

    #: The executor asks the runner for the full outputs of the node's context (`conversation` needs them).
    context_mode = "full"

    def __init__(
        self,
        runtime: AiRuntime,
        graph_id: str,
        *,
        billing_account_id: str,
        virtual_key_id: str,
        model: str,
        messages: MessagesOf | None = None,
    ) -> None:
        if not isinstance(runtime, AiRuntime):
            raise InvalidArgumentType(
                f"runtime must be an AiRuntime, got {type(runtime).__name__}", argument="runtime"
            )
        for name, value in (
            ("graph_id", graph_id),
            ("billing_account_id", billing_account_id),
            ("virtual_key_id", virtual_key_id),
            ("model", model),
        ):
            check_text(name, value)
        if ":" not in graph_id:
            raise InvalidArgument(
                f"graph_id must be '<provider>:<name>', got {graph_id!r}", argument="graph_id"
            )
        if messages is not None and not callable(messages):
            raise InvalidArgumentType(
                f"messages must be callable or None, got {type(messages).__name__}", argument="messages"
            )
        self.runtime = runtime
        self.graph_id = graph_id
        self.billing_account_id = billing_account_id
        self.virtual_key_id = virtual_key_id
        self.model = model
        self._messages = messages or conversation

    def request(self, node: Node, context: Context) -> GraphRunRequest:
        """The run request of one execution of `node` (the run id and attempt it is billed under)."""
        dag_graph_id = node.get("graph_id")
        if not isinstance(dag_graph_id, str) or not dag_graph_id:
            raise InvalidArgument(
                "the node has no graph_id: run it with a chainwarden Runner or WorkerPool", argument="node"
            )
        attempt = (node.get("metadata") or {}).get("attempt", 0)
        if isinstance(attempt, bool) or not isinstance(attempt, int) or attempt < 0:
            raise InvalidArgument(
                f"the node's metadata attempt must be an int >= 0, got {attempt!r}", argument="node"
            )
        messages = self._messages(node, context)
        if not isinstance(messages, list):
            raise InvalidArgumentType(
                f"messages(node, context) must return a list of dicts, got {type(messages).__name__}"
            )
        return GraphRunRequest(
            graph_id=self.graph_id,
            messages=messages,
            model=self.model,
            billing_account_id=self.billing_account_id,
            virtual_key_id=self.virtual_key_id,
            run_id=dag_run_id(dag_graph_id, node["node_id"]),
            attempt=attempt,
        )

    async def __call__(self, node: Node, context: Context) -> ExecutionResult:
        try:
            req = self.request(node, context)
        except (TypeError, ValueError) as error:
            return ExecutionResult.errored(f"invalid_request: {error}")
        run = self.runtime.run_graph(req)
        try:
            final = await run.final
            await run.wait()
        except BaseException:
            # The node's execution was cancelled (a stopping pool, an interrupted runner): so is its run.
            run.cancel()
            await asyncio.shield(run.wait())
            raise
        if not final.ok:
            return ExecutionResult.errored(final.stop_reason or final.error or "internal")
        return ExecutionResult.finished(
            content=final.content or "",
            output={
                "run_id": run.run_id,
                "attempt": run.attempt,
                "usage": {
                    "prompt_tokens": final.usage.prompt_tokens,
                    "completion_tokens": final.usage.completion_tokens,
                },
            },
        )


def dag_node_executor(
    runtime: AiRuntime,
    graph_id: str,
    *,
    billing_account_id: str,
    virtual_key_id: str,
    model: str,
    messages: MessagesOf | None = None,
) -> DagNodeExecutor:
    """A DAG executor running each node as a run of `graph_id` (`"<provider>:<name>"`) through `runtime`,
    billed exactly once per attempt; `messages(node, context)` builds the run's messages (default:
    `conversation`, the node's causal context as a chat)."""
    return DagNodeExecutor(
        runtime,
        graph_id,
        billing_account_id=billing_account_id,
        virtual_key_id=virtual_key_id,
        model=model,
        messages=messages,
    )

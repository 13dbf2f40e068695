"""In-process executor: runs an async graph function whose LLM calls go through an ExecutionContext."""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

from chainwarden.billing.facts import check_run_id
from chainwarden.errors import InvalidArgument, InvalidArgumentType
from chainwarden.runtime.containment_port import Containment, RunLimits
from chainwarden.runtime.events import AiEvent, AssistantFinal, Done, Error, ErrorCode, UsageReport
from chainwarden.runtime.once import Once
from chainwarden.runtime.port import GraphFinal, GraphRunRequest, GraphRunResult, Usage
from chainwarden.runtime.run_context import SOURCE_SYSTEM, LlmCallRefused, RunContext

logger = logging.getLogger("chainwarden.runtime")


GraphFn = Callable[[RunContext], Awaitable[str | None]]


def _chain_metadata(req: GraphRunRequest, run_id: str, request_id: str) -> dict[str, Any]:
    """The run as its ExecutionContext's ``ChainMetadata``: its ids, model and context."""
    return {
        "request_id": request_id,
        "chain_id": run_id,
        "model": req.model,
        "user_id": req.user_id,
        "session_id": req.session_id,
        "tags": req.tags,
        "attributes": req.attributes,
    }


def new_run_id() -> str:
    return f"run_{uuid.uuid4().hex}"


_END = object()


class InProcGraphExecutor:
    """Runs `graph_fn` (or one of a mapping of them, by graph name) in this process.

    The graph function returns the final assistant content (or None); every `ctx.call_llm` emits one
    UsageReport with a stable usage_unit_id.
    """

    def __init__(
        self,
        graph_fn: GraphFn | Mapping[str, GraphFn],
        *,
        limits: RunLimits | None = None,
        containment: Containment | None = None,
        max_concurrent_llm_calls: int = 64,
        source: str = SOURCE_SYSTEM,
    ) -> None:
        if not isinstance(source, str) or not source:
            raise InvalidArgument(f"source must be a non-empty str, got {source!r}", argument="source")
        self._source = source
        if isinstance(graph_fn, Mapping):
            self._graphs: Mapping[str, GraphFn] | None = dict(graph_fn)
            self._single: GraphFn | None = None
        elif callable(graph_fn):
            self._graphs, self._single = None, graph_fn
        else:
            raise InvalidArgumentType(
                "graph_fn must be an async function or a mapping of names to them", argument="graph_fn"
            )
        if (
            isinstance(max_concurrent_llm_calls, bool)
            or not isinstance(max_concurrent_llm_calls, int)
            or max_concurrent_llm_calls < 1
        ):
            raise InvalidArgument(
                f"max_concurrent_llm_calls must be a positive int, got {max_concurrent_llm_calls!r}",
                argument="max_concurrent_llm_calls",
            )
        self._limits = limits or RunLimits()
        self._containment = containment or Containment()
        # The context's wrap is synchronous and holds a thread for the whole provider call. A pool of our own
        # keeps slow LLM calls from starving the loop's default executor, which billing commits use.
        self._llm_threads = concurrent.futures.ThreadPoolExecutor(
            max_workers=max_concurrent_llm_calls, thread_name_prefix="chainwarden-llm"
        )

    def close(self) -> None:
        """Stops the LLM-call threads once the calls in flight are done."""
        self._llm_threads.shutdown(wait=True)

    def _lookup(self, graph_id: str) -> GraphFn | None:
        if self._single is not None:
            return self._single
        assert self._graphs is not None
        return self._graphs.get(graph_id.partition(":")[2])

    def run_graph(self, req: GraphRunRequest) -> GraphRunResult:
        if not isinstance(req, GraphRunRequest):
            raise InvalidArgumentType(f"expected a GraphRunRequest, got {type(req).__name__}", argument="req")
        # docs/design.md §29: every executor checks the run id it runs under, whoever built the request.
        run_id = check_run_id(req.run_id) if req.run_id is not None else new_run_id()
        final: Once[GraphFinal] = Once()
        return GraphRunResult(stream=self._stream(req, run_id, final), final=final)

    async def _stream(
        self, req: GraphRunRequest, run_id: str, final: Once[GraphFinal]
    ) -> AsyncIterator[AiEvent]:
        request_id = req.ingress_request_id or run_id
        usage = [0, 0]
        queue: asyncio.Queue[Any] = asyncio.Queue()

        def emit(event: AiEvent) -> None:
            if isinstance(event, UsageReport):
                usage[0] += event.fact.input_tokens or 0
                usage[1] += event.fact.output_tokens or 0
            queue.put_nowait(event)

        def finish(
            ok: bool,
            error: ErrorCode | None = None,
            content: str | None = None,
            stop_reason: str | None = None,
        ) -> None:
            final.set(
                GraphFinal(
                    ok=ok,
                    run_id=run_id,
                    request_id=request_id,
                    usage=Usage(prompt_tokens=usage[0], completion_tokens=usage[1]),
                    finish_reason="stop" if ok else "error",
                    error=error,
                    content=content,
                    stop_reason=stop_reason,
                )
            )
            if error is not None:
                queue.put_nowait(Error(error))
            queue.put_nowait(Done())
            queue.put_nowait(_END)

        async def drive(fn: GraphFn) -> None:
            try:
                guard = self._containment.new_context(self._limits, _chain_metadata(req, run_id, request_id))
            except Exception:
                logger.exception("run %s: could not create its ExecutionContext", run_id)
                finish(False, "internal")
                return
            try:
                content = await fn(
                    RunContext(
                        req,
                        run_id,
                        guard,
                        self._containment,
                        emit,
                        llm_threads=self._llm_threads,
                        source=self._source,
                    )
                )
                if content is not None and not isinstance(content, str):
                    raise InvalidArgumentType(
                        f"a graph must return str or None, got {type(content).__name__}"
                    )
                if content is not None:
                    emit(AssistantFinal(content))
                finish(True, content=content)
            except LlmCallRefused as refused:
                logger.warning("run %s: %s", run_id, refused)
                finish(False, refused.code, stop_reason=refused.stop_reason)
            except asyncio.CancelledError:
                finish(False, "aborted")
                raise
            except Exception:
                logger.exception("run %s: graph function failed", run_id)
                finish(False, "internal")
            finally:
                guard.close()

        fn = self._lookup(req.graph_id)
        if fn is None:
            finish(False, "not_found")
            task = None
        else:
            task = asyncio.create_task(drive(fn), name=f"chainwarden-graph-{run_id}")
        try:
            while (event := await queue.get()) is not _END:
                yield event
        except asyncio.CancelledError:
            # The run is being cancelled (docs/runtime.md "Cancelling a run"): the graph is cancelled and
            # awaited first, and the usage it reported meanwhile (a reply cut mid-message reports what it
            # used as it unwinds) is still handed on, then the cancel goes on. Nothing else is: nobody
            # sees the graph's other events any more.
            if task is not None:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
            while not queue.empty():
                late = queue.get_nowait()
                if isinstance(late, UsageReport):
                    yield late
            raise
        finally:
            # Closing the stream early (cancel, or a consumer that stops) cancels the graph: nobody would
            # see what it does next.
            if task is not None and not task.done():
                task.cancel()
            if task is not None:
                await asyncio.gather(task, return_exceptions=True)
            if not final.done():
                finish(False, "aborted")

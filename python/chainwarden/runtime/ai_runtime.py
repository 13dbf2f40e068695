"""AiRuntime: picks the executor for a graph id, starts the run's pump and hands back a `Run`."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager

from chainwarden.billing import ChargeReceipt, Ledger, Pricing
from chainwarden.runtime.billing_sink import BillingSink
from chainwarden.runtime.events import AiEvent, Done, Error
from chainwarden.runtime.inproc import new_run_id
from chainwarden.runtime.once import Once
from chainwarden.runtime.port import GraphExecutor, GraphFinal, GraphRunRequest, GraphRunResult, Usage
from chainwarden.runtime.relay import DEFAULT_UI_BUFFER, RunEventRelay

logger = logging.getLogger("chainwarden.runtime")


async def _failed_stream() -> AsyncIterator[AiEvent]:
    yield Error("internal")
    yield Done()


class Run:
    """One started run: UI subscriptions, its final result, its billing and cancellation."""

    def __init__(
        self,
        req: GraphRunRequest,
        result: GraphRunResult | None,
        sink: BillingSink,
        *,
        strict: bool,
        ui_buffer: int,
    ) -> None:
        assert req.run_id is not None
        self.run_id: str = req.run_id
        self.request = req
        self._result = result
        self._sink = sink
        self._strict = strict
        self._final: Once[GraphFinal] = Once()
        self._relay = RunEventRelay(
            result.stream if result is not None else _failed_stream(),
            on_usage=sink.submit,
            on_close=sink.close,
            ui_buffer=ui_buffer,
            name=self.run_id,
        )
        self._finisher = asyncio.get_running_loop().create_task(
            self._resolve_final(), name=f"chainwarden-final-{self.run_id}"
        )

    @property
    def final(self) -> Once[GraphFinal]:
        """Awaitable any number of times; resolves once the pump has finished and never raises."""
        return self._final

    def ui_events(self) -> AsyncIterator[AiEvent]:
        return self._relay.subscribe()

    def cancel(self) -> None:
        self._relay.cancel()

    async def billing_settled(self) -> None:
        """Every usage report of the run committed (or failed and logged).

        With `strict_billing=True` it raises the run's first billing failure.
        """
        await self._relay.wait()
        await self._sink.settled()
        if self._strict and self._sink.failures:
            raise self._sink.failures[0]

    @property
    def receipts(self) -> list[ChargeReceipt]:
        """Receipts this run committed so far (duplicates of earlier commits are not repeated)."""
        return list(self._sink.receipts)

    @property
    def billing_failures(self) -> list[Exception]:
        return list(self._sink.failures)

    async def wait(self) -> None:
        """Pump, final and billing all finished: no task of this run is left."""
        await self._relay.wait()
        await self._sink.settled()
        await asyncio.shield(self._finisher)

    async def _resolve_final(self) -> None:
        relay = self._relay
        try:
            await relay.wait()
        finally:
            finish_reason, content = "stop", relay.content
            if relay.error is None and not relay.aborted and self._result is not None:
                # The executor's final adds what the stream does not carry (finish reason); a broken one
                # must not break ours.
                try:
                    upstream = await self._result.final
                    finish_reason = upstream.finish_reason
                    content = content if content is not None else upstream.content
                except Exception:
                    logger.exception("run %s: the executor's final failed", self.run_id)
            ok = relay.error is None and not relay.aborted
            self._final.set(
                GraphFinal(
                    ok=ok,
                    run_id=self.run_id,
                    request_id=self.request.ingress_request_id or self.run_id,
                    usage=Usage(prompt_tokens=relay.prompt_tokens, completion_tokens=relay.completion_tokens),
                    finish_reason=finish_reason if ok else "error",
                    error=None if ok else (relay.error or "aborted"),
                    content=content,
                )
            )


class AiRuntime:
    """Runs graphs by id `<provider>:<name>` on the executor registered for `provider`; bills every usage."""

    def __init__(
        self,
        executors: Mapping[str, GraphExecutor],
        ledger: Ledger,
        pricing: Pricing | None = None,
        *,
        strict_billing: bool = False,
        ui_buffer: int = DEFAULT_UI_BUFFER,
    ) -> None:
        if not isinstance(executors, Mapping):
            raise TypeError(f"executors must be a mapping, got {type(executors).__name__}")
        for provider, executor in executors.items():
            if not isinstance(provider, str) or not provider or ":" in provider:
                raise ValueError(f"executor provider must be a non-empty str without ':', got {provider!r}")
            if not isinstance(executor, GraphExecutor):
                raise TypeError(f"executor for {provider!r} has no run_graph method")
        if not isinstance(ledger, Ledger):
            raise TypeError(f"ledger must be a Ledger, got {type(ledger).__name__}")
        if pricing is not None and not isinstance(pricing, Pricing):
            raise TypeError(f"pricing must be a Pricing, got {type(pricing).__name__}")
        if isinstance(ui_buffer, bool) or not isinstance(ui_buffer, int) or ui_buffer < 1:
            raise ValueError(f"ui_buffer must be a positive int, got {ui_buffer!r}")
        self._executors = dict(executors)
        self._ledger = ledger
        self._pricing = pricing or Pricing()
        self._strict = strict_billing
        self._ui_buffer = ui_buffer

    def run_graph(self, req: GraphRunRequest) -> Run:
        """Starts the run now (call from inside a running event loop); never raises for an unknown graph."""
        if not isinstance(req, GraphRunRequest):
            raise TypeError(f"expected a GraphRunRequest, got {type(req).__name__}")
        if req.run_id is None:
            req = GraphRunRequest(
                graph_id=req.graph_id,
                messages=req.messages,
                model=req.model,
                billing_account_id=req.billing_account_id,
                virtual_key_id=req.virtual_key_id,
                run_id=new_run_id(),
                ingress_request_id=req.ingress_request_id,
                attempt=req.attempt,
            )
        run_id = req.run_id
        assert run_id is not None
        sink = BillingSink(
            self._ledger, self._pricing, ingress_request_id=req.ingress_request_id, name=run_id
        )
        result: GraphRunResult | None = None
        provider, sep, name = req.graph_id.partition(":")
        executor = self._executors.get(provider) if sep and name else None
        if executor is None:
            logger.error("run %s: no executor for graph id %r", run_id, req.graph_id)
        else:
            try:
                result = executor.run_graph(req)
            except Exception:
                logger.exception("run %s: executor %r failed to start", run_id, provider)
        return Run(req, result, sink, strict=self._strict, ui_buffer=self._ui_buffer)

    @asynccontextmanager
    async def run(self, req: GraphRunRequest) -> AsyncIterator[Run]:
        """`async with runtime.run(req) as run:`; on exit waits for the run, so no task outlives the block."""
        run = self.run_graph(req)
        try:
            yield run
        finally:
            try:
                await run.wait()
            except BaseException:
                # Our own waiting was cancelled: stop the run, still leave nothing behind, then propagate.
                run.cancel()
                await run.wait()
                raise

"""AiRuntime: picks the executor for a graph id, starts the run's pump and hands back a `Run`."""

from __future__ import annotations

import asyncio
import logging
import math
import os
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from types import TracebackType
from typing import Self

from chainwarden.billing import (
    BillingUnsettled,
    ChargeReceipt,
    Ledger,
    Pricing,
    RunRecord,
    SqliteLedger,
    UsageFact,
)
from chainwarden.billing.delivery import BillingDelivery
from chainwarden.billing.facts import check_run_id, check_text
from chainwarden.billing.holds import CreditHolds
from chainwarden.billing.outbox import Outbox, default_outbox_path
from chainwarden.billing.records import RUN_STATUSES
from chainwarden.billing.run_store import CHANNEL, RunStore
from chainwarden.errors import InvalidArgument, InvalidArgumentType, NotFound
from chainwarden.runtime.attach import Attachment, RunWaker
from chainwarden.runtime.billing_sink import BillingSink
from chainwarden.runtime.credits import CURRENT, CreditPolicy, RunCredits, admitted
from chainwarden.runtime.events import AiEvent, Done, Error
from chainwarden.runtime.inproc import new_run_id
from chainwarden.runtime.once import Once
from chainwarden.runtime.port import GraphExecutor, GraphFinal, GraphRunRequest, GraphRunResult, Usage
from chainwarden.runtime.relay import DEFAULT_UI_BUFFER, RunEventRelay
from chainwarden.runtime.run_leases import RunLeases, new_owner
from chainwarden.runtime.run_records import RunRecorder

logger = logging.getLogger("chainwarden.runtime")

# How often billing_settled() looks at the outbox while the drainer works.
_SETTLE_POLL_S = 0.05
DEFAULT_SETTLE_TIMEOUT_S = 30.0
DEFAULT_RUN_LEASE_S = 30.0


async def _failed_stream() -> AsyncIterator[AiEvent]:
    yield Error("internal")
    yield Done()


def _resolved(final: object) -> bool:
    """Whether an executor's final has resolved already (one that cannot tell is not waited for)."""
    done = getattr(final, "done", None)
    return bool(done()) if callable(done) else False


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
        recorder: RunRecorder,
        on_end: Callable[[Run], None] | None = None,
        credits: RunCredits | None = None,
    ) -> None:
        assert req.run_id is not None
        self.run_id: str = req.run_id
        self.attempt: int = req.attempt
        self.request = req
        self._recorder = recorder
        self._result = result
        self._sink = sink
        self._strict = strict
        self._on_end = on_end
        self._credits = credits
        self._final: Once[GraphFinal] = Once()
        self._relay = RunEventRelay(
            result.stream if result is not None else _failed_stream(),
            on_usage=self._usage,
            on_close=sink.close,
            on_event=recorder.event,
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

    def _usage(self, fact: UsageFact) -> None:
        # Numbered and resolved once, by the billing (one call index each, in arrival order); the journal
        # records the same `Billable` (docs/billing.md "The outbox").
        billable = self._sink.submit(fact)
        if billable is not None:
            self._recorder.call(billable)

    def ui_events(self, *, after: int = 0) -> AsyncIterator[AiEvent]:
        """The run's UI events after position `after` (0: all of them), then live until `Done`."""
        return self._relay.subscribe(after=after)

    def cancel(self) -> None:
        self._relay.cancel()

    async def billing_settled(self, timeout: float | None = DEFAULT_SETTLE_TIMEOUT_S) -> None:
        """Waits until every usage report of the run is committed in the ledger.

        A fact whose commit failed waits in the durable outbox until the drainer commits it; if some are
        still there after `timeout` seconds (None: no limit) this raises `BillingUnsettled`, which says how
        many and where they are (they stay there and will still be committed). With `strict_billing=True` a
        run whose billing failed at all raises its first failure as soon as every fact was attempted,
        without waiting for the outbox (the facts it parked are still committed later).
        """
        if timeout is not None:
            if isinstance(timeout, bool) or not isinstance(timeout, int | float):
                raise InvalidArgumentType(
                    f"timeout must be a number or None, got {type(timeout).__name__}", argument="timeout"
                )
            if not math.isfinite(timeout) or timeout < 0:
                raise InvalidArgument(
                    f"timeout must be a finite number >= 0 or None, got {timeout!r}", argument="timeout"
                )
        start = time.monotonic()
        await self._relay.wait()
        await self._sink.settled()
        if self._strict and self._sink.failures:
            # Every fact was attempted and one failed: strict billing knows its answer now.
            raise self._sink.failures[0]
        while (waiting := await self._sink.waiting()) or self._sink.lost:
            waited = time.monotonic() - start
            # Lost facts will never settle: waiting longer cannot help.
            if self._sink.lost or (timeout is not None and waited >= timeout):
                error = BillingUnsettled(
                    self.run_id, waiting, self._sink.outbox_path, waited_s=waited, lost=self._sink.lost
                )
                raise error from (self._sink.failures[0] if self._sink.failures else None)
            await asyncio.sleep(_SETTLE_POLL_S)

    @property
    def receipts(self) -> list[ChargeReceipt]:
        """Receipts this run committed directly so far (duplicates of earlier commits are not repeated).

        Facts the outbox drainer committed later are in `ledger.receipts(run_id=...)`.
        """
        return list(self._sink.receipts)

    @property
    def billing_failures(self) -> list[Exception]:
        return list(self._sink.failures)

    async def wait(self) -> None:
        """Pump, final and billing all finished: no task of this run is left."""
        await self._relay.wait()
        await self._sink.settled()
        await asyncio.shield(self._finisher)

    async def _unsettled_at_end(self) -> list[str]:
        try:
            await self._sink.settled()
            return await self._sink.unsettled()
        except Exception:
            logger.exception("run %s: could not tell whether billing settled", self.run_id)
            return ["<unknown>"]

    async def _resolve_final(self) -> None:
        relay = self._relay
        try:
            await self._recorder.started()
            await relay.wait()
        finally:
            finish_reason, content, stop_reason = "stop", relay.content, None
            upstream_final = None if self._result is None else self._result.final
            if relay.error is not None and not relay.aborted and _resolved(upstream_final):
                # A run its executor ended with an Error: why containment refused, when it says.
                try:
                    stop_reason = (await upstream_final).stop_reason  # type: ignore[misc]
                except Exception:
                    logger.exception("run %s: the executor's final failed", self.run_id)
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
            error = None if ok else (relay.error or "aborted")
            unsettled = await self._unsettled_at_end()
            if unsettled:
                # Fail closed: usage happened and is not in the ledger yet (docs/billing.md).
                logger.error(
                    "run %s: %d usage fact(s) unsettled at the end (kept in the outbox %s): %s",
                    self.run_id,
                    len(unsettled),
                    self._sink.outbox_path,
                    ", ".join(unsettled[:5]),
                )
                if ok:
                    ok, error = False, "internal"
            final = GraphFinal(
                ok=ok,
                run_id=self.run_id,
                request_id=self.request.ingress_request_id or self.run_id,
                usage=Usage(prompt_tokens=relay.prompt_tokens, completion_tokens=relay.completion_tokens),
                finish_reason=finish_reason if ok else "error",
                error=error,
                content=content,
                stop_reason=stop_reason,
            )
            if self._credits is not None:
                await asyncio.to_thread(self._credits.end, billed=not unsettled)
            try:
                # Before the final resolves, so whoever awaited it finds the run's record and log complete.
                await self._recorder.ended(final)
            finally:
                self._final.set(final)
                if self._on_end is not None:
                    self._on_end(self)


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
        outbox: str | os.PathLike[str] | Outbox | None = None,
        run_lease_s: float = DEFAULT_RUN_LEASE_S,
        credit_policy: CreditPolicy | None = None,
    ) -> None:
        if not isinstance(executors, Mapping):
            raise InvalidArgumentType(
                f"executors must be a mapping, got {type(executors).__name__}", argument="executors"
            )
        for provider, executor in executors.items():
            if not isinstance(provider, str) or not provider or ":" in provider:
                raise InvalidArgument(
                    f"executor provider must be a non-empty str without ':', got {provider!r}",
                    argument="executor",
                )
            if not isinstance(executor, GraphExecutor):
                raise InvalidArgumentType(
                    f"executor for {provider!r} has no run_graph method", argument="executor"
                )
        if not isinstance(ledger, Ledger):
            raise InvalidArgumentType(
                f"ledger must be a Ledger, got {type(ledger).__name__}", argument="ledger"
            )
        if pricing is not None and not isinstance(pricing, Pricing):
            raise InvalidArgumentType(
                f"pricing must be a Pricing, got {type(pricing).__name__}", argument="pricing"
            )
        if isinstance(ui_buffer, bool) or not isinstance(ui_buffer, int) or ui_buffer < 1:
            raise InvalidArgument(
                f"ui_buffer must be a positive int, got {ui_buffer!r}", argument="ui_buffer"
            )
        if isinstance(run_lease_s, bool) or not isinstance(run_lease_s, int | float):
            raise InvalidArgumentType(
                f"run_lease_s must be a number, got {type(run_lease_s).__name__}", argument="run_lease_s"
            )
        if not math.isfinite(run_lease_s) or not 0.1 <= run_lease_s <= 86_400:
            raise InvalidArgument(
                f"run_lease_s must be between 0.1 and 86400 seconds, got {run_lease_s!r}",
                argument="run_lease_s",
            )
        if credit_policy is not None and not isinstance(credit_policy, CreditPolicy):
            raise InvalidArgumentType(
                f"credit_policy must be a CreditPolicy or None, got {type(credit_policy).__name__}",
                argument="credit_policy",
            )
        if outbox is not None and not isinstance(outbox, str | os.PathLike | Outbox):
            raise InvalidArgumentType(
                f"outbox must be a path, an Outbox or None, got {type(outbox).__name__}", argument="outbox"
            )
        if outbox is None:
            ledger_path = ledger.path if isinstance(ledger, SqliteLedger) else None
            outbox = default_outbox_path(ledger.identity, ledger_path)
        self.outbox = outbox if isinstance(outbox, Outbox) else Outbox(outbox)
        # Drains at once what an earlier process left in the outbox for this ledger.
        self._delivery = BillingDelivery(ledger, self.outbox)
        self._executors = dict(executors)
        self._ledger = ledger
        self._pricing = pricing or Pricing()
        self._strict = strict_billing
        self._ui_buffer = ui_buffer
        # Runs that outlive their process (docs/runtime.md "Reconnect, resume and retry"): their journal in
        # the ledger's database, under leases this runtime renews; runs of dead processes are marked
        # abandoned now and by every sweep.
        self._runs = RunStore(ledger)
        self._lease_s = float(run_lease_s)
        self._leases = RunLeases(self._runs, new_owner(), self._lease_s)
        self._leases.sweep_soon()
        self._waker = RunWaker(lambda: ledger.listen(CHANNEL))
        self._live: dict[str, Run] = {}
        # Event batches are committed durably: batching makes that no slower than relaxed commits
        # (benches/README.md "Run-event persistence", which measures both; docs/design.md §39).
        self._durable_events = True
        self._credit_policy = credit_policy
        self._holds = CreditHolds(ledger) if credit_policy is not None else None

    def run_graph(self, req: GraphRunRequest) -> Run:
        """Starts the run now (call from inside a running event loop); never raises for an unknown graph."""
        if not isinstance(req, GraphRunRequest):
            raise InvalidArgumentType(f"expected a GraphRunRequest, got {type(req).__name__}", argument="req")
        # The run's ids go into every usage fact: refuse here what the billing limits would refuse later
        # (docs/design.md §26), before anything runs or is owed.
        for name in ("run_id", "ingress_request_id", "billing_account_id", "virtual_key_id"):
            check_text(name, getattr(req, name), optional=True)
        if req.run_id is not None:
            check_run_id(req.run_id)  # docs/design.md §29
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
        credits = self._credits_of(req)
        sink = BillingSink(
            self._delivery,
            self._pricing,
            run_id=run_id,
            ingress_request_id=req.ingress_request_id,
            on_charged=None if credits is None else credits.charged,
        )
        result: GraphRunResult | None = None
        provider, sep, name = req.graph_id.partition(":")
        executor = self._executors.get(provider) if sep and name else None
        if executor is None:
            logger.error("run %s: no executor for graph id %r", run_id, req.graph_id)
        elif credits is not None:
            # Admitted only with credits above the minimum, before the executor starts.
            result = admitted(executor, req, credits)
        else:
            try:
                result = executor.run_graph(req)
            except Exception:
                logger.exception("run %s: executor %r failed to start", run_id, provider)
        self._leases.hold()
        recorder = RunRecorder(
            self._ledger,
            req,
            store=self._runs,
            owner=self._leases.owner,
            lease_s=self._lease_s,
            pricing=self._pricing,
            durable_events=self._durable_events,
        )
        # The run's tasks (its pump, and whatever the executor starts from it) see its credit holds.
        token = CURRENT.set(credits if credits is not None and self._holds_estimates() else None)
        try:
            run = Run(
                req,
                result,
                sink,
                strict=self._strict,
                ui_buffer=self._ui_buffer,
                recorder=recorder,
                on_end=self._ended,
                credits=credits,
            )
        finally:
            CURRENT.reset(token)
        self._live[run_id] = run
        return run

    def _holds_estimates(self) -> bool:
        return self._credit_policy is not None and self._credit_policy.hold_estimates

    def _credits_of(self, req: GraphRunRequest) -> RunCredits | None:
        if self._credit_policy is None or self._holds is None:
            return None
        return RunCredits(
            self._holds,
            self._credit_policy,
            self._pricing,
            req,
            owner=self._leases.owner,
            ttl_s=self._lease_s,
        )

    def _ended(self, run: Run) -> None:
        self._leases.release()
        if self._live.get(run.run_id) is run:
            del self._live[run.run_id]

    def _live_relay(self, run_id: str) -> tuple[int, RunEventRelay] | None:
        run = self._live.get(run_id)
        return None if run is None else (run.attempt, run._relay)

    def attach(
        self,
        run_id: str,
        *,
        after: int = 0,
        attempt: int | None = None,
        ingress_request_id: str | None = None,
    ) -> Attachment:
        """Reconnects to a run from this or any process sharing the ledger's database: its UI events after
        position `after` (each with its `seq`), then live until its `Done` (docs/runtime.md "Reconnect,
        resume and retry"). The latest attempt unless `attempt` is given; a new `ingress_request_id` (this
        connection's). An unknown run gives `Error("not_found")` and `Done`. Detaching never stops the run."""
        check_run_id(run_id)
        check_text("run_id", run_id)
        if isinstance(after, bool) or not isinstance(after, int) or after < 0:
            raise InvalidArgument(f"after must be an int >= 0, got {after!r}", argument="after")
        if attempt is not None and (isinstance(attempt, bool) or not isinstance(attempt, int) or attempt < 0):
            raise InvalidArgument(f"attempt must be an int >= 0 or None, got {attempt!r}", argument="attempt")
        check_text("ingress_request_id", ingress_request_id, optional=True)
        return Attachment(
            run_id,
            after=after,
            attempt=attempt,
            ingress_request_id=ingress_request_id,
            live=self._live_relay,
            store=self._runs,
            waker=self._waker,
            sweep=self._leases.sweep,
            lease_s=self._lease_s,
        )

    def retry(self, run_id: str, *, ingress_request_id: str | None = None) -> Run:
        """Runs an ended run again as its next attempt (the same `run_id`, `attempt` = the last one + 1),
        from the request its record keeps; call it inside a running event loop. The new attempt's usage is
        billed under its own keys; no fact of an earlier attempt is billed again. `KeyError` for an unknown
        run, `ValueError` for one still running."""
        check_run_id(run_id)
        check_text("run_id", run_id)
        if run_id in self._live:
            raise InvalidArgument(
                f"run {run_id!r} is still running here; retry it once it ended", argument="run_id"
            )
        latest = self._runs.latest_attempt(run_id)
        if latest is None:
            raise NotFound(run_id)
        records = self._ledger.runs(run_id=run_id, limit=1)
        record = next((r for r in records if r.attempt == latest), None)
        request = self._runs.request(run_id, latest)
        if record is None or request is None:
            raise NotFound(run_id)
        if record.status == "running":
            raise InvalidArgument(
                f"run {run_id!r} attempt {latest} is still running (in another process, or abandoned once "
                "its lease runs out)",
                argument="run_id",
            )
        context = record.context or {}  # who and what the run was for goes with every attempt
        return self.run_graph(
            GraphRunRequest(
                graph_id=record.graph_id,
                messages=request.get("messages", []),
                model=record.model,
                billing_account_id=record.billing_account_id,
                virtual_key_id=record.virtual_key_id,
                run_id=run_id,
                ingress_request_id=ingress_request_id,
                attempt=latest + 1,
                user_id=context.get("user_id"),
                session_id=context.get("session_id"),
                tags=context.get("tags", ()),
                attributes=context.get("attributes"),
            )
        )

    def runs(
        self, *, billing_account_id: str | None = None, status: str | None = None, limit: int = 100
    ) -> list[RunRecord]:
        """Run records of the ledger's database, the newest first, of one account and in one status
        (`running`, `ok`, `error`, `abandoned`) when given."""
        if status is not None and status not in RUN_STATUSES:
            raise InvalidArgument(
                f"status must be one of {RUN_STATUSES} or None, got {status!r}", argument="status"
            )
        return self._ledger.runs(billing_account_id=billing_account_id, status=status, limit=limit)

    def close(self) -> None:
        """Stops the outbox drainer; what is parked stays in the outbox for the next runtime to drain.

        The ledger is the caller's and stays open.
        """
        self._delivery.close()
        self.outbox.close()
        self._leases.stop()
        self._waker.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

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

"""A run's journal in the ledger's database: its record, its UI events at their positions and the usage
reports it saw, written as the run goes (docs/runtime.md "Reconnect, resume and retry").

`started()` writes the record (`running`, owned by this runtime under a lease the runtime renews); then every
UI event and usage report the relay hands over is appended in batches — whatever arrived while the previous
batch was written, one transaction each, in a worker thread, so the pump never waits for the database;
`ended(final)` appends the last batch together with how the run ended, before its final resolves, so a
record that says the run ended always has its whole log.

The journal is history, not money (the receipts have their own exactly-once path, docs/billing.md): a
database that refuses a batch is logged and the batch is tried again with a backoff; a run whose record was
taken over (marked abandoned after its lease ran out while this process was stalled) stops being written.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime
from typing import Any

from chainwarden.billing import Ledger, Pricing, RunRecord
from chainwarden.billing.facts import Billable
from chainwarden.billing.run_store import CallRow, EventRow, RunStore, TakenOver
from chainwarden.runtime.events import UiEvent, encode_event
from chainwarden.runtime.port import GraphFinal, GraphRunRequest

logger = logging.getLogger("chainwarden.runtime")

# A batch gathers what arrives for this long after its first entry: an LLM streams tokens a few milliseconds
# apart, and one transaction per token would cost more than the run's own work (benches/README.md
# "Run-event persistence"); a client attached in another process sees them at most this much later.
_LINGER_S = 0.01
_FIRST_BACKOFF_S = 0.1
_MAX_BACKOFF_S = 5.0
# A database away for long: beyond this many waiting entries the oldest are dropped (logged), so memory stays
# bounded; the run, its UI and its billing go on.
_MAX_PENDING = 100_000


def request_of(req: GraphRunRequest) -> dict[str, Any]:
    """What `retry` needs besides the record's columns to run the request again."""
    return {"messages": req.messages}


class RunRecorder:
    """Writes one run's journal: `started()` once, `event()` / `call()` as they come, `ended(final)` last."""

    def __init__(
        self,
        ledger: Ledger,
        req: GraphRunRequest,
        *,
        store: RunStore | None = None,
        owner: str = "",
        lease_s: float = 30.0,
        pricing: Pricing | None = None,
        durable_events: bool = True,
    ) -> None:
        assert req.run_id is not None
        self._ledger = ledger
        self._store = store or RunStore(ledger)
        self._owner = owner
        self._lease_s = lease_s
        self._pricing = pricing or Pricing()
        self._durable = durable_events
        self._request = request_of(req)
        self._started = RunRecord(
            run_id=req.run_id,
            attempt=req.attempt,
            graph_id=req.graph_id,
            billing_account_id=req.billing_account_id,
            virtual_key_id=req.virtual_key_id,
            model=req.model,
            status="running",
            started_at=datetime.now(UTC),
            context=req.context(),
        )
        self._events: list[UiEvent] = []
        self._calls: list[CallRow] = []
        self._wake = asyncio.Event()
        self._begun = False
        self._closed = False
        self._lost = False  # taken over, or never started: nothing more is written
        self.dropped = 0
        self._writer: asyncio.Task[None] | None = None

    @property
    def run_id(self) -> str:
        return self._started.run_id

    @property
    def attempt(self) -> int:
        return self._started.attempt

    # --- what the relay hands over (on the loop, never waits) ----------------------------------------------
    def event(self, event: UiEvent) -> None:
        if self._lost:
            return
        # Encoded in the writer's thread, not here on the loop (`_rows`).
        self._events.append(event)
        self._bound()
        self._wake.set()

    def call(self, billed: Billable) -> None:
        """One usage report, as the billing sink numbered and resolved it (the same call index and key)."""
        if self._lost:
            return
        fact, index = billed.fact, billed.call_index
        cost = fact.cost_decimal
        try:
            credits = None if cost is None else self._pricing.credits_for(cost)
        except ValueError:
            credits = None
        counts = (fact.input_tokens, fact.output_tokens, fact.cache_read_tokens, fact.cache_write_tokens)
        self._calls.append(
            CallRow(
                run_id=fact.run_id,
                attempt=fact.attempt,
                call_index=index,
                source_system=fact.source,
                source_reference=billed.key,
                credits=credits,
                cost_usd=cost,
                model=fact.model,
                input_tokens=fact.input_tokens,
                output_tokens=fact.output_tokens,
                usage_missing=cost is None and all(n is None for n in counts),
            )
        )
        self._bound()
        self._wake.set()

    def _bound(self) -> None:
        excess = len(self._events) + len(self._calls) - _MAX_PENDING
        if excess > 0:
            self.dropped += excess
            del self._events[: min(excess, len(self._events))]
            logger.error("run %s: its journal is %d entries behind; dropped the oldest", self.run_id, excess)

    # --- the run's lifetime ---------------------------------------------------------------------------------
    async def started(self) -> None:
        try:
            await asyncio.to_thread(
                self._store.start, self._started, self._request, self._owner, self._lease_s
            )
            self._begun = True
        except Exception:
            self._lost = True
            logger.warning(
                "run %s: its record was not written to %s; the run goes on without a journal",
                self.run_id,
                self._ledger.describe,
                exc_info=True,
            )
            return
        self._writer = asyncio.get_running_loop().create_task(
            self._write(), name=f"chainwarden-journal-{self.run_id}"
        )

    async def _write(self) -> None:
        backoff = _FIRST_BACKOFF_S
        while not self._lost:
            if not self._events and not self._calls:
                if self._closed:
                    return
                self._wake.clear()
                await self._wake.wait()
                if not self._closed:
                    await asyncio.sleep(_LINGER_S)
                continue
            events, calls = self._events, self._calls
            self._events, self._calls = [], []
            try:
                await asyncio.to_thread(self._append, events, calls, None)
                backoff = _FIRST_BACKOFF_S
            except TakenOver:
                self._taken_over()
            except Exception:
                logger.warning(
                    "run %s: %d event(s) not journaled yet in %s; trying again",
                    self.run_id,
                    len(events),
                    self._ledger.describe,
                    exc_info=True,
                )
                self._events[:0], self._calls[:0] = events, calls
                if self._closed:
                    return  # ended() writes what is left with the end record
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, _MAX_BACKOFF_S)

    def _append(self, events: list[UiEvent], calls: list[CallRow], end: RunRecord | None) -> None:
        self._store.append(
            self.run_id, self.attempt, self._owner, self._rows(events), calls, end=end, durable=self._durable
        )

    def _rows(self, events: list[UiEvent]) -> list[EventRow]:
        rows = []
        for event in events:
            try:
                body = encode_event(event)
            except (TypeError, ValueError):  # a UI event we cannot write: the log says so rather than lose it
                logger.warning(
                    "run %s: event %d (%s) could not be journaled", self.run_id, event.seq, event.type
                )
                body = '{"text":""}' if event.type == "text_delta" else "{}"
            rows.append(EventRow(event.seq, event.type, body))
        return rows

    def _taken_over(self) -> None:
        self._lost = True
        self._events, self._calls = [], []
        logger.warning(
            "run %s attempt %d was marked abandoned by another runtime (its lease ran out while this process "
            "was stalled); its journal stops here, its billing goes on",
            self.run_id,
            self.attempt,
        )

    async def ended(self, final: GraphFinal) -> None:
        """Writes what is left of the log together with how the run ended."""
        self._closed = True
        self._wake.set()
        if self._writer is not None:
            await asyncio.shield(self._writer)
        if self._lost or not self._begun:
            return
        start = self._started
        end = RunRecord(
            run_id=start.run_id,
            attempt=start.attempt,
            graph_id=start.graph_id,
            billing_account_id=start.billing_account_id,
            virtual_key_id=start.virtual_key_id,
            model=start.model,
            status="ok" if final.ok else "error",
            started_at=start.started_at,
            ended_at=datetime.now(UTC),
            prompt_tokens=final.usage.prompt_tokens,
            completion_tokens=final.usage.completion_tokens,
            finish_reason=final.finish_reason,
            error=final.error,
            context=start.context,
        )
        events, calls = self._events, self._calls
        self._events, self._calls = [], []
        try:
            await asyncio.to_thread(self._append, events, calls, end)
        except TakenOver:
            self._taken_over()
        except Exception:
            logger.warning(
                "run %s: its end (%s) was not written to %s",
                self.run_id,
                end.status,
                self._ledger.describe,
                exc_info=True,
            )

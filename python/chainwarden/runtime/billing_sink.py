"""The run's billing subscriber: hands every usage report, in order, to the billing delivery.

Two stages, so that writing ahead never waits for the ledger (docs/billing.md, "The outbox"):
1. write-ahead: every fact reported since the last outbox write goes to the durable outbox in one transaction
   (the relay's natural batches: whatever the pump accepted while the previous write ran);
2. commit: the written-ahead facts are committed through the ledger in order, then leave the outbox, or stay
   parked there when their commit failed.

A commit retried for seconds therefore holds back only later commits, never the write-ahead: a SIGKILL then
finds the facts in the outbox and the next process commits them. The sink remembers which of the run's facts
were parked, so the run can tell whether its billing is settled.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable

from chainwarden.billing import ChargeReceipt, Pricing, UsageFact
from chainwarden.billing.delivery import BillingDelivery, Delivered, Journaled
from chainwarden.billing.facts import Billable
from chainwarden.billing.metrics import METRICS

logger = logging.getLogger("chainwarden.billing")


class BillingSink:
    """Unbounded, ordered hand-off from the pump to the ledger; the pump never waits for the database.

    `call_index` counts every usage report of the run from 0 in arrival order, which is what makes the
    `MISSING:{run_id}/{call_index}` fallback deterministic on replay.
    """

    def __init__(
        self,
        delivery: BillingDelivery,
        pricing: Pricing,
        *,
        run_id: str,
        ingress_request_id: str | None,
        on_charged: Callable[[list[int]], None] | None = None,
    ) -> None:
        self._delivery = delivery
        self._pricing = pricing
        self._run_id = run_id
        self._ingress_request_id = ingress_request_id
        # Told (in a worker thread) the credits of each batch of this run's receipts once committed: the
        # run's credit holds for those calls go then (docs/billing.md "Credit holds").
        self._on_charged = on_charged
        self._next_index = 0
        # Reported, not yet written ahead; then written ahead, not yet committed.
        self._reported: list[Billable] = []
        self._journaled: list[Journaled] = []
        self._closed = False
        self._reported_wake = asyncio.Event()
        self._journaled_wake = asyncio.Event()
        self._writing_done = False
        self.receipts: list[ChargeReceipt] = []
        self.duplicates = 0
        self.failures: list[Exception] = []
        # Keys of this run's facts that went to the outbox (settled once the drainer committed them).
        self.parked: list[str] = []
        # Facts that could be neither committed nor parked (the outbox itself failed): really at risk.
        self.lost: list[str] = []
        loop = asyncio.get_running_loop()
        self._writer = loop.create_task(self._write_ahead(), name=f"chainwarden-billing-wal-{run_id}")
        self._task = loop.create_task(self._commit(), name=f"chainwarden-billing-{run_id}")

    def submit(self, fact: object) -> Billable | None:
        """Numbers the report and resolves its fact for billing, once (`Billable.resolve`): the run's journal
        records the same `Billable` (docs/billing.md "The outbox"). A report that carries no UsageFact, or
        one that cannot be resolved, cannot be billed: it counts as lost, so the run's billing does not
        settle (docs/design.md §30); None then."""
        index = self._next_index
        self._next_index += 1
        if not isinstance(fact, UsageFact):
            METRICS.increment("billing.malformed_usage_report")
            self._lose([index], TypeError(f"a usage report carries a {type(fact).__name__}, not a UsageFact"))
            return None
        try:
            billable = Billable.resolve(fact, index)
        except Exception as error:  # a fact past its own checks: refused alone, the others go on
            METRICS.increment("billing.malformed_usage_report")
            self._lose([index], error)
            return None
        self._reported.append(billable)
        self._reported_wake.set()
        return billable

    def close(self) -> None:
        """No more facts will come; both stages finish once everything reported is committed or parked."""
        self._closed = True
        self._reported_wake.set()

    async def _write_ahead(self) -> None:
        try:
            while True:
                if not self._reported:
                    if self._closed:
                        return
                    self._reported_wake.clear()
                    await self._reported_wake.wait()
                    continue
                batch, self._reported = self._reported, []
                try:
                    journaled = await self._write(batch)
                except Exception as error:  # write_ahead does not raise; this is the last line of defence
                    self._lose([billable.call_index for billable in batch], error)
                    continue
                self._journaled.extend(journaled)
                self._journaled_wake.set()
        finally:
            self._writing_done = True
            self._journaled_wake.set()

    async def _write(self, batch: list[Billable]) -> list[Journaled]:
        """The outbox is a local file, but may wait on another process's lock: off the loop, on the
        delivery's own write-ahead thread, so that commits stuck in retries cannot delay it."""
        call = functools.partial(
            self._delivery.write_ahead,
            batch,
            pricing=self._pricing,
            ingress_request_id=self._ingress_request_id,
        )
        executor = self._delivery.write_ahead_executor()
        if executor is not None:
            try:
                return await asyncio.get_running_loop().run_in_executor(executor, call)
            except RuntimeError:
                pass  # the runtime was closed just now: any thread will do
        return await asyncio.to_thread(call)

    async def _commit(self) -> None:
        while True:
            if not self._journaled:
                if self._writing_done:
                    return
                self._journaled_wake.clear()
                await self._journaled_wake.wait()
                continue
            batch, self._journaled = self._journaled, []
            try:
                # The ledger is synchronous and may wait or retry: a worker thread keeps the loop free.
                outcomes = await asyncio.to_thread(
                    self._delivery.commit,
                    batch,
                    pricing=self._pricing,
                    ingress_request_id=self._ingress_request_id,
                )
            except Exception as error:  # commit does not raise; this is the last line of defence
                self._lose([item.billable.call_index for item in batch], error)
                continue
            charged = [o.receipt.charged_credits for o in outcomes if o.receipt is not None]
            for item, outcome in zip(batch, outcomes, strict=True):
                self._record(item, outcome)
            if charged and self._on_charged is not None:
                await asyncio.to_thread(self._on_charged, charged)

    def _lose(self, indices: list[int], error: Exception) -> None:
        logger.critical(
            "billing: usage report(s) %s of run %s could be neither committed nor kept in the outbox %s",
            indices,
            self._run_id,
            self.outbox_path,
            exc_info=error,
        )
        for index in indices:
            self.failures.append(error)
            self.lost.append(f"{self._run_id}/call-index-{index}")

    def _record(self, item: Journaled, outcome: Delivered) -> None:
        if outcome.lost:
            assert outcome.error is not None
            self.failures.append(outcome.error)
            self.lost.append(f"{self._run_id}/call-index-{item.billable.call_index}")
        elif outcome.parked:
            assert outcome.error is not None
            self.failures.append(outcome.error)
            self.parked.append(outcome.key)
        elif outcome.receipt is None:
            self.duplicates += 1
        else:
            self.receipts.append(outcome.receipt)

    @property
    def outbox_path(self) -> str:
        return self._delivery.outbox.path

    async def settled(self) -> None:
        """Every fact submitted so far was committed or parked (the in-memory hand-off is empty)."""
        await asyncio.shield(self._writer)
        await asyncio.shield(self._task)

    async def unsettled(self) -> list[str]:
        """Keys of this run's facts not committed yet: still in the outbox, then the lost ones."""
        return await self.waiting() + self.lost

    async def waiting(self) -> list[str]:
        """Keys of this run's facts still waiting in the outbox."""
        if not self.parked:
            return []
        try:
            return await asyncio.to_thread(self._delivery.unsettled, list(self.parked), self._run_id)
        except Exception:
            logger.exception("billing: reading the outbox %s failed", self.outbox_path)
            return list(self.parked)

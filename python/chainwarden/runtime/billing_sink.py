"""The run's billing subscriber: hands every usage report, in order, to the billing delivery.

The delivery commits it through the ledger or parks it in the durable outbox (docs/billing.md); the sink
remembers which of the run's facts were parked, so the run can tell whether its billing is settled.
"""

from __future__ import annotations

import asyncio
import logging

from chainwarden.billing import ChargeReceipt, Pricing, UsageFact
from chainwarden.billing.delivery import BillingDelivery

logger = logging.getLogger("chainwarden.billing")

_CLOSED = None


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
    ) -> None:
        self._delivery = delivery
        self._pricing = pricing
        self._run_id = run_id
        self._ingress_request_id = ingress_request_id
        self._queue: asyncio.Queue[tuple[int, UsageFact] | None] = asyncio.Queue()
        self._next_index = 0
        self.receipts: list[ChargeReceipt] = []
        self.duplicates = 0
        self.failures: list[Exception] = []
        # Keys of this run's facts that went to the outbox (settled once the drainer committed them).
        self.parked: list[str] = []
        # Facts that could be neither committed nor parked (the outbox itself failed): really at risk.
        self.lost: list[str] = []
        self._task = asyncio.get_running_loop().create_task(
            self._drain(), name=f"chainwarden-billing-{run_id}"
        )

    def submit(self, fact: UsageFact) -> None:
        self._queue.put_nowait((self._next_index, fact))
        self._next_index += 1

    def close(self) -> None:
        """No more facts will come; the drain finishes once the queue is empty."""
        self._queue.put_nowait(_CLOSED)

    async def _drain(self) -> None:
        while (item := await self._queue.get()) is not _CLOSED:
            index, fact = item
            try:
                # The ledger is synchronous and may wait on locks; a worker thread keeps the loop free.
                outcome = await asyncio.to_thread(
                    self._delivery.deliver,
                    fact,
                    call_index=index,
                    pricing=self._pricing,
                    ingress_request_id=self._ingress_request_id,
                )
            except Exception as error:
                logger.critical(
                    "billing: usage report %d of run %s could be neither committed nor kept in the outbox %s",
                    index,
                    self._run_id,
                    self._delivery.outbox.path,
                    exc_info=True,
                )
                self.failures.append(error)
                self.lost.append(f"{self._run_id}/call-index-{index}")
                continue
            if outcome.parked:
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

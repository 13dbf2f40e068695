"""The run's billing subscriber: commits every usage report, in order, through the ledger."""

from __future__ import annotations

import asyncio
import logging

from chainwarden.billing import ChargeReceipt, Ledger, Pricing, UsageFact

logger = logging.getLogger("chainwarden.billing")

_CLOSED = None


class BillingSink:
    """Unbounded, ordered hand-off from the pump to the ledger; the pump never waits for the database.

    `call_index` counts every usage report of the run from 0 in arrival order, which is what makes the
    `MISSING:{run_id}/{call_index}` fallback deterministic on replay.
    """

    def __init__(
        self, ledger: Ledger, pricing: Pricing, *, ingress_request_id: str | None, name: str = "run"
    ) -> None:
        self._ledger = ledger
        self._pricing = pricing
        self._ingress_request_id = ingress_request_id
        self._queue: asyncio.Queue[tuple[int, UsageFact] | None] = asyncio.Queue()
        self._next_index = 0
        self.receipts: list[ChargeReceipt] = []
        self.duplicates = 0
        self.failures: list[Exception] = []
        self._task = asyncio.get_running_loop().create_task(self._drain(), name=f"chainwarden-billing-{name}")

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
                receipt = await asyncio.to_thread(
                    self._ledger.commit_usage_fact,
                    fact,
                    call_index=index,
                    pricing=self._pricing,
                    ingress_request_id=self._ingress_request_id,
                )
            except Exception as error:
                logger.exception("billing failed for run %s call %d", fact.run_id, index)
                self.failures.append(error)
                continue
            if receipt is None:
                self.duplicates += 1
            else:
                self.receipts.append(receipt)

    async def settled(self) -> None:
        await asyncio.shield(self._task)

"""A run's history in the ledger: one `RunRecord` per (run_id, attempt), written at start and at the end.

The record is history, not money: a ledger that cannot take it is logged and the run goes on (its usage
facts have their own exactly-once path, docs/billing.md). Writes run in a worker thread, never on the loop.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime

from chainwarden.billing import Ledger, RunRecord
from chainwarden.runtime.port import GraphFinal, GraphRunRequest

logger = logging.getLogger("chainwarden.runtime")


class RunRecorder:
    """Writes one run's record: `started()` once the run begins, `ended(final)` before its final resolves."""

    def __init__(self, ledger: Ledger, req: GraphRunRequest) -> None:
        assert req.run_id is not None
        self._ledger = ledger
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

    async def started(self) -> None:
        await self._write(self._started)

    async def ended(self, final: GraphFinal) -> None:
        start = self._started
        await self._write(
            RunRecord(
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
        )

    async def _write(self, record: RunRecord) -> None:
        try:
            await asyncio.to_thread(self._ledger.record_run, record)
        except Exception:
            logger.warning(
                "run %s: its %s record was not written to %s",
                record.run_id,
                record.status,
                self._ledger.describe,
                exc_info=True,
            )

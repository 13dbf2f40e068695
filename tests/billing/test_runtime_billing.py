"""A run's usage reports reach either store through AiRuntime, exactly once (same test code for both)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from decimal import Decimal

from stores import Store

from chainwarden.billing import UsageFact
from chainwarden.runtime import (
    AiEvent,
    AiRuntime,
    Done,
    GraphFinal,
    GraphRunRequest,
    GraphRunResult,
    TextDelta,
    Usage,
    UsageReport,
)
from chainwarden.runtime.once import Once


class ReportingEngine:
    """An external engine adapter that reports its own usage facts (one without an id)."""

    def run_graph(self, req: GraphRunRequest) -> GraphRunResult:
        assert req.run_id is not None
        run_id = req.run_id
        final: Once[GraphFinal] = Once()

        def fact(unit: str | None, cost: str) -> UsageReport:
            return UsageReport(
                UsageFact(
                    run_id=run_id,
                    attempt=req.attempt,
                    source="external",
                    billing_account_id=req.billing_account_id,
                    virtual_key_id=req.virtual_key_id,
                    usage_unit_id=unit,
                    input_tokens=10,
                    output_tokens=1,
                    cost_usd=Decimal(cost),
                )
            )

        async def stream() -> AsyncIterator[AiEvent]:
            yield fact("step-1", "0.00001")
            yield TextDelta("hi")
            yield fact(None, "0.0000015")
            final.set(GraphFinal(ok=True, run_id=run_id, request_id=run_id, usage=Usage()))
            yield Done()

        return GraphRunResult(stream=stream(), final=final)


async def test_runtime_bills_into_the_store_once(store: Store) -> None:
    req = GraphRunRequest(
        graph_id="engine:flow",
        messages=[],
        model="m",
        billing_account_id="acct-1",
        virtual_key_id="vk-1",
        run_id="run-e2e",
        ingress_request_id="req-1",
    )
    with store.open() as ledger:
        runtime = AiRuntime(executors={"engine": ReportingEngine()}, ledger=ledger)
        for _ in range(3):
            async with runtime.run(req) as run:
                await run.billing_settled()
                assert (await run.final).ok
        receipts = ledger.receipts(run_id="run-e2e")
        assert [(r.source_reference, r.charged_credits) for r in receipts] == [
            ("run-e2e/0/step-1", 200),
            ("run-e2e/0/MISSING:run-e2e/1", 30),
        ]
        assert {r.ingress_request_id for r in receipts} == {"req-1"}
        assert ledger.balance("acct-1") == -230

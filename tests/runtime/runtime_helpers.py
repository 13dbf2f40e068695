"""Shared pieces of the runtime tests: requests, a simulated provider, facts, a scripted external engine."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from decimal import Decimal
from typing import Any

from chainwarden.billing import UsageFact
from chainwarden.runtime import (
    AiEvent,
    GraphFinal,
    GraphRunRequest,
    GraphRunResult,
    LlmResult,
    Usage,
)
from chainwarden.runtime.once import Once


def request(graph_id: str = "inproc:agent", **overrides: Any) -> GraphRunRequest:
    fields: dict[str, Any] = {
        "graph_id": graph_id,
        "messages": [{"role": "user", "content": "hi"}],
        "model": "sim-1",
        "billing_account_id": "acct-1",
        "virtual_key_id": "vk-1",
    }
    fields.update(overrides)
    return GraphRunRequest(**fields)


def llm(
    content: str, unit: str | None, cost: str = "0.00001", tokens: tuple[int, int] = (10, 5)
) -> Callable[[], Awaitable[LlmResult]]:
    """A simulated provider call: deterministic, no network."""

    async def call() -> LlmResult:
        await asyncio.sleep(0)
        return LlmResult(
            content=content,
            model="sim-1",
            provider="sim",
            usage_unit_id=unit,
            input_tokens=tokens[0],
            output_tokens=tokens[1],
            cost_usd=Decimal(cost),
        )

    return call


def usage_fact(run_id: str, unit: str | None, cost: str = "0.00001", attempt: int = 0) -> UsageFact:
    return UsageFact(
        run_id=run_id,
        attempt=attempt,
        source="external",
        billing_account_id="acct-1",
        virtual_key_id="vk-1",
        usage_unit_id=unit,
        input_tokens=3,
        output_tokens=2,
        cost_usd=Decimal(cost),
    )


class ScriptedExecutor:
    """An external-engine adapter: streams the events a script produces for the run, with run_id filled in."""

    def __init__(self, script: Callable[[GraphRunRequest], AsyncIterator[AiEvent]]) -> None:
        self.script = script
        self.closed = 0

    def run_graph(self, req: GraphRunRequest) -> GraphRunResult:
        final: Once[GraphFinal] = Once()
        run_id = req.run_id or "generated"

        async def stream() -> AsyncIterator[AiEvent]:
            try:
                async for event in self.script(req):
                    yield event
            finally:
                self.closed += 1
                final.set(GraphFinal(ok=True, run_id=run_id, request_id=run_id, usage=Usage()))

        return GraphRunResult(stream=stream(), final=final)
